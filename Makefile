# Targets people look for. `make test` is the suite CI runs (README, .ci/run).
GO ?= go
PKGS ?= ./...

.PHONY: test deploy-test race vet lint fuzz-smoke bench chaos-smoke flake-hunt measure demo games-1m ts-test web-test web-build

## test: vet, then the whole suite under -race with a throwaway PostgreSQL, then
## the TypeScript client's tests.
test: vet
	deploy/pg-throwaway.sh run --fast -- $(GO) test -race -timeout 20m -count=1 $(PKGS)
	$(MAKE) ts-test
	$(MAKE) web-test
	$(MAKE) deploy-test

## deploy-test: the deployment artifacts (deploy/: image recipe, compose file,
## Kubernetes manifests, alert rules, dashboard, local-cluster.sh) checked
## against a matchd built from this tree. A module of its own (deploy/go.mod).
deploy-test:
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

## ts-test: the TypeScript client library (clients/ts): vectors, board, session,
## and a match against a real matchd built with $(GO). Needs Node.js >= 18 and npm.
ts-test:
	cd clients/ts && npm ci --no-audit --no-fund && GO=$(GO) npm test

## web-test: the web client and ops console (web/) in headless Chromium
## (/usr/bin/chromium, or $$CHROMIUM) against a real matchd built with $(GO);
## also fails when the committed bundle web/dist is stale.
web-test:
	cd web && npm ci --no-audit --no-fund && GO=$(GO) npm test

## web-build: rebuild web/dist after changing web/src or web/static (commit it).
web-build:
	cd web && npm ci --no-audit --no-fund && npm run build

race: test

vet:
	$(GO) vet $(PKGS)

## lint: formatting and vet.
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## fuzz-smoke: a short run of every fuzz target (untrusted input decoders).
FUZZTIME ?= 30s
fuzz-smoke:
	$(GO) test -run '^$$' -fuzz FuzzDecodeClientFrame -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run '^$$' -fuzz FuzzDecodeServerFrame -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run '^$$' -fuzz FuzzFrameReader -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run '^$$' -fuzz FuzzUnmarshalState -fuzztime $(FUZZTIME) ./game
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) ./cluster/envelope
	$(GO) test -run '^$$' -fuzz FuzzDecodeEmbedded -fuzztime $(FUZZTIME) ./persistence
	$(GO) test -run '^$$' -fuzz FuzzTicketVerify -fuzztime $(FUZZTIME) ./edge

## bench: codec, engine and store benchmarks (PostgreSQL started for the store).
bench:
	deploy/pg-throwaway.sh run -- $(GO) test -run '^$$' -bench . -benchmem ./protocol ./game ./persistence ./edge ./cluster ./cluster/envelope

## chaos-smoke: the multi-process kill tests only (cluster and cmd/), verbose.
chaos-smoke:
	deploy/pg-throwaway.sh run --fast -- $(GO) test -count=1 -run 'TestChaos|TestCluster' -v ./cluster ./cmd/...

## flake-hunt: the timing-sensitive packages FLAKE_COUNT times in a row under
## -race (go test -count), stopping at the first failure, to catch tests that
## fail only sometimes. The chaos tests' failover bounds run MATCHGRAIN_KILLS
## kills per pass (default 1). The longest package comes first: go test starts
## packages in the order given, two at a time on 2 cores, so the others run
## beside it instead of after it (about 40 min for 10 passes here).
FLAKE_COUNT ?= 10
FLAKE_PKGS ?= ./cmd/matchd ./cluster ./edge/grains ./edge ./actors ./persistence
flake-hunt:
	deploy/pg-throwaway.sh run --fast -- $(GO) test -race -failfast -count=$(FLAKE_COUNT) -timeout 180m $(FLAKE_PKGS)

## measure: the load table of docs/performance.md (closed and open loop at 100 and 1,000 matches, 10,000 idle sessions; PostgreSQL fsync on).
measure:
	deploy/measure.sh

## demo: the embedded single node with a bot match to watch.
demo:
	$(GO) run ./cmd/matchd --demo

## games-1m: the million-game random-play run of the rules engine.
games-1m:
	MATCHGRAIN_GAMES=1000000 $(GO) test ./game -run TestRandomPlay -timeout 0 -v
