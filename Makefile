# Targets people look for. `make test` is the suite CI runs (README, .ci/run).
GO ?= go
PKGS ?= ./...

.PHONY: test alloc-test deploy-test compose-test race vet lint fuzz-smoke bench chaos-smoke simulate flake-hunt measure measure-cluster demo games-1m ts-test web-test web-build nemesis nemesis-soak nemesis-ha pg-ha-soak

## test: vet, then the whole suite under -race with a throwaway PostgreSQL, then
## the TypeScript client's tests.
test: vet
	deploy/pg-throwaway.sh run --fast -- $(GO) test -race -timeout 20m -count=1 $(PKGS)
	$(MAKE) alloc-test
	$(MAKE) ts-test
	$(MAKE) web-test
	$(MAKE) deploy-test
	$(MAKE) compose-test
	$(MAKE) nemesis

## alloc-test: the allocation tests without -race, where sync.Pool keeps
## its items (under -race they skip, e.g. protocol TestWriteFrameDoesNotAllocate).
alloc-test:
	$(GO) test -count=1 -run 'Alloc' ./protocol ./internal/...

## deploy-test: the deployment artifacts (deploy/: image recipe, compose file,
## Kubernetes manifests, alert rules, dashboard, local-cluster.sh) checked
## against a matchd built from this tree. A module of its own (deploy/go.mod).
deploy-test:
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

## compose-test: the image built (its runtime stage, from binaries built
## here) and deploy/docker/compose.yaml run for real with podman-compose:
## 3 members and PostgreSQL, a bot match, its owner's container stopped, the
## match finished on another member; everything it made removed (about 2 min;
## needs root, installs podman through apt; deploy/docker/compose-run.sh).
compose-test:
	GO=$(GO) deploy/docker/compose-run.sh

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
	$(GO) test -run '^$$' -fuzz FuzzEnvelopeBytes -fuzztime $(FUZZTIME) ./cluster/envelope
	$(GO) test -run '^$$' -fuzz FuzzParseNotice -fuzztime $(FUZZTIME) ./cluster
	$(GO) test -run '^$$' -fuzz FuzzDecodeEmbedded -fuzztime $(FUZZTIME) ./persistence
	$(GO) test -run '^$$' -fuzz FuzzTicketVerify -fuzztime $(FUZZTIME) ./edge

## bench: codec, engine and store benchmarks (PostgreSQL started for the store).
bench:
	deploy/pg-throwaway.sh run -- $(GO) test -run '^$$' -bench . -benchmem ./protocol ./game ./persistence ./edge ./cluster ./cluster/envelope

## chaos-smoke: the multi-process kill tests only (cluster and cmd/), verbose,
## every matchd node of cmd/matchd's TestChaos…/TestCluster… the -race build
## (MATCHGRAIN_CHAOS_RACE), so that a race in a recovery path fails them
## (make test runs them with plain nodes, except TestChaosKillOwnerMatchContinues).
chaos-smoke:
	MATCHGRAIN_CHAOS_RACE=1 deploy/pg-throwaway.sh run --fast -- $(GO) test -count=1 -timeout 30m -run 'TestChaos|TestCluster' -v ./cluster ./cmd/...

## simulate: the deterministic simulation of the match grain (actors/sim):
## SIM_MATCHES seeded matches under faults (default 1,000,000) on every core,
## invariants after every step; a failure prints the seed that replays it.
## make test runs 10,000 of them.
SIM_MATCHES ?= 1000000
simulate:
	SIM_MATCHES=$(SIM_MATCHES) $(GO) test -count=1 -timeout 180m -run 'TestSimulation$$' -v ./actors/sim

## flake-hunt: the timing-sensitive packages FLAKE_COUNT times in a row under
## -race (go test -count), stopping at the first failure, to catch tests that
## fail only sometimes. The chaos tests' failover bounds run MATCHGRAIN_KILLS
## kills per pass (default 3). The longest package comes first: go test starts
## packages in the order given, two at a time on 2 cores, so the others run
## beside it instead of after it (about 40 min for 10 passes here).
FLAKE_COUNT ?= 10
FLAKE_PKGS ?= ./cmd/matchd ./cluster ./edge/grains ./edge ./actors ./persistence
flake-hunt:
	deploy/pg-throwaway.sh run --fast -- $(GO) test -race -failfast -count=$(FLAKE_COUNT) -timeout 180m $(FLAKE_PKGS)

## pg-ha-soak: PGHA_KILLS kills of the PostgreSQL primary (its postmaster
## alone and its whole node, alternately) under bot load on two members, on a
## pg_auto_failover formation (deploy/pg-ha.sh); prints the distribution of
## the time from each kill to the first intent accepted again.
PGHA_KILLS ?= 10
pg-ha-soak:
	MATCHGRAIN_PGHA_KILLS=$(PGHA_KILLS) $(GO) test -count=1 -run TestPGHASoak -v -timeout 60m ./cmd/matchd

## measure: the load table of docs/performance.md (closed and open loop at 100 and 1,000 matches, 10,000 idle sessions; PostgreSQL fsync on).
measure:
	deploy/measure.sh

## measure-cluster: the cluster's workloads of docs/performance.md §3.4–3.5: failover (3 members,
## 3,000 matches at 0.2/s, SIGKILL of the busiest) and cluster3 (every session on a non-owner,
## next to one node). MEASURE_FAILOVER_MATCHES, MEASURE_CLUSTER_MATCHES scale them down.
measure-cluster:
	deploy/measure.sh failover cluster3

## demo: the embedded single node with a bot match to watch.
demo:
	$(GO) run ./cmd/matchd --demo

## games-1m: the million-game random-play run of the rules engine.
games-1m:
	MATCHGRAIN_GAMES=1000000 $(GO) test ./game -run TestRandomPlay -timeout 0 -v

## nemesis: faults as production has them (nemesis/; needs root, iproute2,
## nftables): matchd members and PostgreSQL in network namespaces, bot
## matches through random members while links are cut, made lossy or slow
## and members paused or killed, on a schedule from a printed seed
## (NEMESIS_SEED to repeat one); the last lines are the checker's report.
## Skipped with a message when not root.
NEMESIS_DURATION ?= 2m
NEMESIS_MATCHES ?= 20
NEMESIS_MEMBERS ?= 5
NEMESIS_SEED ?= 0
NEMESIS_FLAGS ?=
nemesis:
	@if [ "$$(id -u)" != 0 ]; then echo "nemesis: skipped (needs root: network namespaces, nft, tc)"; exit 0; fi; \
	dir=$$(mktemp -d /tmp/nemesis-bin-XXXXXX) && \
	$(GO) build -o $$dir/matchd ./cmd/matchd && $(GO) build -o $$dir/nemesis ./cmd/nemesis && \
	$$dir/nemesis run --matchd $$dir/matchd --duration $(NEMESIS_DURATION) --matches $(NEMESIS_MATCHES) \
		--members $(NEMESIS_MEMBERS) --seed $(NEMESIS_SEED) $(NEMESIS_FLAGS); rc=$$?; rm -rf $$dir; exit $$rc

## nemesis-soak: the 30-minute soak of docs/operations.md §9 (200 matches in
## play, every fault kind about 8 times); NEMESIS_SOAK_DURATION shortens it.
NEMESIS_SOAK_DURATION ?= 30m
nemesis-soak:
	$(MAKE) nemesis NEMESIS_DURATION=$(NEMESIS_SOAK_DURATION) NEMESIS_MATCHES=200

## nemesis-ha: make nemesis with the highly available PostgreSQL
## (deploy/pg-ha.sh, pg_auto_failover) in the database's namespace, and the
## primary-kill fault; NEMESIS_KINDS=primary-kill,split limits the kinds.
NEMESIS_KINDS ?=
nemesis-ha:
	$(MAKE) nemesis NEMESIS_FLAGS="--pg-ha $(CURDIR)/deploy/pg-ha.sh $(if $(NEMESIS_KINDS),--kinds $(NEMESIS_KINDS)) $(NEMESIS_FLAGS)"
