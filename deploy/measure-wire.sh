#!/usr/bin/env bash
# measure-wire.sh compares two builds of matchd + matchctl on the wire cost
# of an accepted intent (docs/performance.md §3.3 and §4): for
# each build it starts one matchd node on a throwaway PostgreSQL, plays
# `matchctl load --matches N --concurrency N` and reads the node's counters
# (/metrics) and CPU time (/proc) around the run: frames and bytes written
# to clients, frames and bytes read from them, accepted intents, and the
# node's CPU seconds.
#
# Usage: deploy/measure-wire.sh OLD_SRC NEW_SRC [N] [ROUNDS]
#   OLD_SRC, NEW_SRC: source trees (e.g. a `git worktree add` of an older commit)
#   N: concurrent matches (default 100); ROUNDS: old/new pairs (default 2)
# Everything runs on 127.0.0.1 and stops by itself.
set -euo pipefail
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
n=${3:-100}
rounds=${4:-2}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in old new; do
	src=${!v}
	(cd "$src" && go build -o "$work/$v-matchd" ./cmd/matchd && go build -o "$work/$v-matchctl" ./cmd/matchctl)
done

run_all() {
	set -euo pipefail
	metric() { # name: sum of every series of a counter
		curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 ~ "^"m"([{]|$)" {s+=$2} END {printf "%.0f", s}'
	}
	cpu() { awk '{print $14+$15}' "/proc/$node_pid/stat"; }
	for r in $(seq "$rounds"); do
		for v in old new; do
			local token=measure-token schema="wire_${v}_$r"
			port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
			psql "$DATABASE_URL" -qc "CREATE SCHEMA $schema" >/dev/null
			local url="$DATABASE_URL"; [[ $url == *\?* ]] && url="$url&search_path=$schema" || url="$url?search_path=$schema"
			# Newer nodes limit connections per client address; the load comes from one.
			local extra=()
			"$work/$v-matchd" --help 2>&1 | grep -q max-connections-per-address && extra=(--max-connections-per-address 100000)
			"$work/$v-matchd" --database-url "$url" --listen "127.0.0.1:$port" "${extra[@]}" \
				--gossip-addr 127.0.0.1:0 --remote-addr 127.0.0.1:0 --admin-token "$token" --log-level warn \
				>"$work/matchd.out" 2>"$work/matchd.err" &
			node_pid=$!
			for _ in $(seq 100); do grep -q "matchd ready" "$work/matchd.out" 2>/dev/null && break; sleep 0.2; done
			grep -q "matchd ready" "$work/matchd.out" || { cat "$work/matchd.err"; exit 1; }
			local f0 b0 fi0 bi0 i0 c0 f1 b1 fi1 bi1 i1 c1
			f0=$(metric matchgrain_edge_frames_out_total); b0=$(metric matchgrain_edge_bytes_out_total)
			fi0=$(metric matchgrain_edge_frames_in_total); bi0=$(metric matchgrain_edge_bytes_in_total)
			i0=$(metric matchgrain_grain_intents_accepted_total); c0=$(cpu)
			"$work/$v-matchctl" load --server "http://127.0.0.1:$port" --token "$token" --matches "$n" \
				--concurrency "$n" --timeout 20m | sed "s/^/  $v: /"
			f1=$(metric matchgrain_edge_frames_out_total); b1=$(metric matchgrain_edge_bytes_out_total)
			fi1=$(metric matchgrain_edge_frames_in_total); bi1=$(metric matchgrain_edge_bytes_in_total)
			i1=$(metric matchgrain_grain_intents_accepted_total); c1=$(cpu)
			kill "$node_pid"; wait "$node_pid" 2>/dev/null || true
			local hz; hz=$(getconf CLK_TCK)
			python3 - "$v" "$r" $((f1 - f0)) $((b1 - b0)) $((fi1 - fi0)) $((bi1 - bi0)) $((i1 - i0)) $((c1 - c0)) "$hz" <<'PY'
import sys
v, r, fo, bo, fi, bi, i, c, hz = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
print(f"{v} round {r}: {i} accepted intents; per intent: {fo/i:.2f} frames / {bo/i:.0f} bytes out, "
      f"{fi/i:.2f} frames / {bi/i:.0f} bytes in; matchd CPU {c/hz:.1f} s = {1e6*c/hz/i:.0f} µs/intent")
PY
		done
	done
}

if [[ -n "${DATABASE_URL:-}" ]]; then
	run_all
else
	deploy/pg-throwaway.sh run -- bash -c "$(declare -f run_all); work='$work'; n=$n; rounds=$rounds; run_all"
fi
