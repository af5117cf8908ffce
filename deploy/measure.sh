#!/usr/bin/env bash
# measure.sh runs the load measurements recorded in docs/performance.md on
# this machine: one matchd node on a throwaway PostgreSQL (durable: fsync on),
# then `matchctl load` at 1, 100 and 1,000 concurrent bot matches over
# WebSocket, printing intent latency (client send → accepted result), intent
# throughput and the node's resident memory while the matches are active.
#
# Usage: deploy/measure.sh [CONCURRENCY...]     (default: 1 100 1000)
# Everything runs on 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
levels=("$@")
((${#levels[@]})) || levels=(1 100 1000)

work=$(mktemp -d)
trap 'kill "${node_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/matchd" ./cmd/matchd
go build -o "$work/matchctl" ./cmd/matchctl

run_levels() {
	set -euo pipefail
	trap 'kill "${node_pid:-}" 2>/dev/null || true' EXIT
	local token=measure-token port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$work/matchd" --database-url "$DATABASE_URL" --listen "127.0.0.1:$port" --gossip-addr 127.0.0.1:0 \
		--remote-addr 127.0.0.1:0 --admin-token "$token" --log-level warn >"$work/matchd.out" 2>"$work/matchd.err" &
	node_pid=$!
	for _ in $(seq 100); do grep -q "matchd ready" "$work/matchd.out" 2>/dev/null && break; sleep 0.2; done
	grep -q "matchd ready" "$work/matchd.out" || { cat "$work/matchd.err"; exit 1; }
	echo "node ready; idle RSS $(ps -o rss= -p "$node_pid") KiB"
	for n in "${levels[@]}"; do
		local matches=$n
		((matches < 3)) && matches=3
		echo "== $n concurrent matches ($matches played)"
		# Sample the node's memory while the matches run.
		( peak=0; while kill -0 "$node_pid" 2>/dev/null; do
			r=$(ps -o rss= -p "$node_pid" 2>/dev/null || echo 0); ((r > peak)) && peak=$r && echo "$peak" >"$work/peak"
			sleep 0.5; done ) &
		sampler=$!
		echo 0 >"$work/peak"
		"$work/matchctl" load --server "http://127.0.0.1:$port" --token "$token" --matches "$matches" \
			--concurrency "$n" --timeout 20m
		kill "$sampler" 2>/dev/null || true
		echo "node peak RSS during the run: $(cat "$work/peak") KiB"
	done
	kill "$node_pid"
}

if [[ -n "${DATABASE_URL:-}" ]]; then
	run_levels
else
	deploy/pg-throwaway.sh run -- bash -c "$(declare -f run_levels); work='$work'; levels=(${levels[*]}); run_levels"
fi
