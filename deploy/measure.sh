#!/usr/bin/env bash
# measure.sh runs the load table of docs/performance.md on this machine and
# prints it: one matchd node on a throwaway PostgreSQL with fsync on (durable:
# every accepted intent is committed before its result is sent), driven over
# WebSocket by `matchctl load` on the same machine. Each workload gets a fresh
# node (and database schema), so its memory figures start from an idle node.
# The last column is the node's own account of the window, from its latency
# histograms: the mean time of an intent at the edge (with its p50 and p99
# estimated from the histogram's buckets), of its durable append, and of one
# PostgreSQL statement of the group-commit writer.
#
# Usage: deploy/measure.sh [WORKLOAD...]
#   closed100   closed loop, 100 matches at once (bots decide as fast as they can;
#               the node allows any intent rate per connection for it)
#   closed1000  closed loop, 1,000 matches at once
#   open100     open loop, 100 matches × 2 intents/s, random phase
#   open1000    open loop, 1,000 matches × 2 intents/s
#   idle10000   10,000 connected, silent sessions (5,000 matches)
#   idleN       N such sessions, e.g. idle50000 (not in the default set: it
#               takes many minutes). Past MEASURE_IDLE_PER_ADDRESS sessions
#               they bind to 127.0.0.2, 127.0.0.3, ... in turn, as one
#               source address has about 28,000 ephemeral ports toward the
#               node, and the node allows that many per address; the
#               file-descriptor limits are raised for this run only (ulimit;
#               raising the hard limit needs CAP_SYS_RESOURCE).
#   failover    3 members on the one PostgreSQL, MEASURE_FAILOVER_MATCHES
#               matches at 0.2 intents/s with their sessions spread over the
#               members, then SIGKILL of the member owning the most: per
#               affected match, the time from the kill to its first accepted
#               intent; its last line reads exactly
#               failover: affected=N p50=Xms p99=Yms max=Zms never=N lost=N
#   cluster3    the open loop (MEASURE_CLUSTER_MATCHES matches × MEASURE_RATE)
#               on 3 members, every session connected to a member that does
#               not own its match, then the same load on one node: intents/s,
#               p50/p99 and node CPU per intent summed over the members
#   spectators  the open loop (MEASURE_SPECTATE_MATCHES matches × MEASURE_RATE)
#               on one node without spectators, then on a fresh node with
#               MEASURE_SPECTATORS spectators following each match: the
#               node's extra CPU per frame delivered to a spectator and its
#               extra peak RSS per spectator
# Default: the first five, in this order (failover, cluster3, spectators and any other
# idleN only when named).
#
# Environment:
#   MEASURE_WARMUP     warm-up before measuring (default 20s; 1,000 matches
#                      ramp up 32 at a time, so they get 60s at least)
#   MEASURE_DURATION   measured time per workload (default 30s)
#   MEASURE_RATE       open-loop intents/s per match (default 2)
#   MEASURE_IDLE       sessions of an idle workload (default: the N in its name)
#   MEASURE_IDLE_PER_ADDRESS  sessions per source address (default 20000; at
#                      least 64, as the admin calls share 127.0.0.1's limit)
#   MEASURE_IDLE_HOLD  how long they are held (default 30s)
#   MEASURE_FAILOVER_MATCHES  matches in play at the kill (default 3000; a
#                      few hundred on a shared machine)
#   MEASURE_FAILOVER_RATE     their intents/s each (default 0.2)
#   MEASURE_FAILOVER_SETTLE   play once all are connected, before the kill
#                      (default 20s)
#   MEASURE_CLUSTER_MATCHES   cluster3's matches (default 1000)
#   MEASURE_SPECTATE_MATCHES  the spectators workload's matches (default 1000)
#   MEASURE_SPECTATORS        spectators per match there (default 5)
#   MEASURE_FAILOVER_FLAGS    more matchd flags for the three members
#                      (MEASURE_PROFILE keeps their logs: with --log-level=info
#                      they time each phase of the failover)
#   MEASURE_PROFILE    directory: also take a 20 s CPU profile, a heap
#                      profile and a goroutine count of the node during each
#                      workload (pprof through --debug-listen) and its
#                      runtime.MemStats, with the matchd binary next to them,
#                      and a CPU profile of the load generator's whole run
#                      (WORKLOAD.loadgen.cpu.pprof, read with its matchctl)
#   MEASURE_MATCHD     a matchd binary to measure instead of this tree's (an
#                      older build, for before/after with the same load tool)
#   DATABASE_URL       use this PostgreSQL instead of a throwaway one
# Everything listens on 127.0.0.1 and stops by itself; the JSON reports stay
# in the work directory printed at the start until the script exits.
set -euo pipefail
cd "$(dirname "$0")/.."
workloads=("$@")
((${#workloads[@]})) || workloads=(closed100 closed1000 open100 open1000 idle10000)
for w in "${workloads[@]}"; do
	case "$w" in closed100 | closed1000 | open100 | open1000 | failover | cluster3 | spectators) ;;
	*) [[ "$w" =~ ^idle[1-9][0-9]*$ ]] || { echo "measure.sh: unknown workload $w" >&2; exit 2; } ;;
	esac
done

work=$(mktemp -d)
trap 'kill ${node_pid:-} ${member_pids[*]:-} 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
if [[ -n "${MEASURE_MATCHD:-}" ]]; then
	cp "$MEASURE_MATCHD" "$work/matchd"
else
	go build -o "$work/matchd" ./cmd/matchd
fi
go build -o "$work/matchctl" ./cmd/matchctl
echo "work directory: $work" >&2
# What the table printers below share; each imports it from $work.
cat >"$work/measure_tables.py" <<'EOF'
def calls(node):
    """The node's read and write system calls per intent, where it exports them."""
    if "readCallsPerIntent" not in node and "writeCallsPerIntent" not in node:
        return ""
    return f" ({node.get('readCallsPerIntent', 0):.1f} reads, {node.get('writeCallsPerIntent', 0):.1f} writes)"
EOF

run_all() {
	set -euo pipefail
	trap 'kill ${node_pid:-} ${member_pids[*]:-} 2>/dev/null || true' EXIT
	local warmup=${MEASURE_WARMUP:-20s} dur=${MEASURE_DURATION:-30s} rate=${MEASURE_RATE:-2}
	local hold=${MEASURE_IDLE_HOLD:-30s} prof=${MEASURE_PROFILE:-}
	local token=measure-token
	[[ -n "$prof" ]] && mkdir -p "$prof" && cp "$work/matchd" "$prof/matchd" && cp "$work/matchctl" "$prof/matchctl"
	free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
	# The load generator is one address and opens thousands of connections
	# at once: lift the connection, per-address and handshake limits for it. The idle workload's matches never see a
	# decision, so their decision clocks must outlast the minutes it takes
	# to connect 10,000 sessions, or matches end by timeout while held.
	start_node() { # $1: schema, then extra matchd flags
		local schema=$1 port dport
		shift
		port=$(free_port)
		dport=$(free_port)
		PGOPTIONS=--client-min-messages=warning psql -q "$DATABASE_URL" -c "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" >/dev/null
		"$work/matchd" --database-url "$DATABASE_URL" --database-schema "$schema" --listen "127.0.0.1:$port" \
			--gossip-addr 127.0.0.1:0 --remote-addr 127.0.0.1:0 --admin-token "$token" --log-level warn \
			--debug-listen "127.0.0.1:$dport" --max-connections 30000 --max-connections-per-address 30000 --max-handshakes 30000 \
			"$@" >"$work/$schema.out" 2>"$work/$schema.err" &
		node_pid=$!
		for _ in $(seq 150); do grep -q "matchd ready" "$work/$schema.out" 2>/dev/null && break; sleep 0.2; done
		grep -q "matchd ready" "$work/$schema.out" || { cat "$work/$schema.err" >&2; exit 1; }
		server="http://127.0.0.1:$port"
		debug="http://127.0.0.1:$dport"
	}
	profile() { # $1: name, $2: seconds to wait before profiling
		[[ -n "$prof" ]] || return 0
		prof_pid=
		(sleep "$2"
			curl -s -o "$prof/$1.cpu.pprof" "$debug/debug/pprof/profile?seconds=20" || true
			curl -s -o "$prof/$1.heap.pprof" "$debug/debug/pprof/heap" || true
			# runtime.MemStats in text (the end of the file): heap in use and
			# idle, stacks, what the runtime holds from the OS.
			curl -s "$debug/debug/pprof/heap?debug=1" | sed -n '/^# runtime.MemStats/,$p' >"$prof/$1.memstats.txt" || true
			curl -s -o "$prof/$1.goroutine.txt" "$debug/debug/pprof/goroutine?debug=1" || true) &
		prof_pid=$!
	}
	# idle_limits N: file descriptors for N sessions (the node and the load
	# generator hold one each, plus a margin) and, past 20,000 sessions,
	# the source addresses to spread them over, in sources, and the node's
	# per-address limit for them, in per_addr.
	idle_limits() {
		local want=$(($1 + 1024))
		if (($(ulimit -n) < want)); then
			if (($(ulimit -Hn) < want)); then
				ulimit -Hn "$want" || { echo "measure.sh: $1 sessions need $want file descriptors; the hard limit is $(ulimit -Hn)" >&2; exit 1; }
			fi
			ulimit -n "$want"
		fi
		local per=${MEASURE_IDLE_PER_ADDRESS:-20000}
		per_addr=30000
		if (($1 > per)); then
			local list=() i
			for ((i = 0; i < ($1 + per - 1) / per; i++)); do list+=("127.0.0.$((i + 2))"); done
			sources=(--idle-source-addrs "$(IFS=,; echo "${list[*]}")")
			per_addr=$per
		fi
	}
	# Three members of one cluster on one schema ($1), with more matchd
	# flags after it: their pids in member_pids, "URL=PID,…" in members and
	# "URL,…" in member_urls.
	start_members() {
		local schema=$1 i port seed=""
		shift
		PGOPTIONS=--client-min-messages=warning psql -q "$DATABASE_URL" -c "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" >/dev/null
		member_pids=() members="" member_urls="" member_debug=()
		for i in 1 2 3; do
			port=$(free_port)
			member_debug+=("http://127.0.0.1:$(free_port)")
			"$work/matchd" --database-url "$DATABASE_URL" --database-schema "$schema" --listen "127.0.0.1:$port" \
				--debug-listen "${member_debug[-1]#http://}" \
				--node-name "member$i" --cluster-name "measure-$$-$schema" --gossip-addr 127.0.0.1:0 --remote-addr 127.0.0.1:0 \
				${seed:+--join "$seed"} --admin-token "$token" --log-level warn \
				--max-connections 30000 --max-connections-per-address 30000 --max-handshakes 30000 \
				"$@" >"$work/$schema.$i.out" 2>"$work/$schema.$i.err" &
			member_pids+=($!)
			for _ in $(seq 150); do grep -q "matchd ready" "$work/$schema.$i.out" 2>/dev/null && break; sleep 0.2; done
			grep -q "matchd ready" "$work/$schema.$i.out" || { cat "$work/$schema.$i.err" >&2; exit 1; }
			[[ -n "$seed" ]] || seed=$(sed -n 's/^matchd ready .*gossip=\([^ ]*\).*/\1/p' "$work/$schema.$i.out")
			members+="${members:+,}http://127.0.0.1:$port=${member_pids[-1]}"
			member_urls+="${member_urls:+,}http://127.0.0.1:$port"
		done
	}
	stop_members() {
		kill "${member_pids[@]}" 2>/dev/null || true
		wait "${member_pids[@]}" 2>/dev/null || true
		member_pids=()
	}
	# failover: the load tool kills one of the members itself
	# (matchctl load --failover).
	run_failover() {
		local schema=m_failover n=${MEASURE_FAILOVER_MATCHES:-3000}
		# shellcheck disable=SC2086 # MEASURE_FAILOVER_FLAGS is a list of flags
		start_members "$schema" ${MEASURE_FAILOVER_FLAGS:-}
		local dbpid=()
		[[ -r "${MATCHGRAIN_PG_DIR:-}/data/postmaster.pid" ]] &&
			dbpid=(--database-pid "$(head -1 "$MATCHGRAIN_PG_DIR/data/postmaster.pid")")
		"$work/matchctl" load --token "$token" --failover "$members" --matches "$n" \
			--rate "${MEASURE_FAILOVER_RATE:-0.2}" --settle "${MEASURE_FAILOVER_SETTLE:-20s}" "${dbpid[@]}" \
			>"$work/failover.txt" || true
		stop_members
		# The members' logs (with MEASURE_FAILOVER_FLAGS=--log-level=info:
		# topology changes, each activation's claim and rebuild times)
		# against the kill's time in the report: where the failover's time went.
		[[ -n "$prof" ]] && cp "$work/$schema".*.err "$work/failover.txt" "$prof/"
		cat "$work/failover.txt"
	}
	# cluster3: the open loop on three members with every session on a
	# member that does not own its match, then the same load on one node.
	run_cluster3() {
		local n=${MEASURE_CLUSTER_MATCHES:-1000} rate=${MEASURE_RATE:-2} wu=$warmup dur=${MEASURE_DURATION:-30s} dbpid=()
		((n >= 1000)) && (($(secs "$wu") < 60)) && wu=60s
		[[ -r "${MATCHGRAIN_PG_DIR:-}/data/postmaster.pid" ]] &&
			dbpid=(--database-pid "$(head -1 "$MATCHGRAIN_PG_DIR/data/postmaster.pid")")
		start_members m_cluster3
		# MEASURE_PROFILE: member 1's profiles (cluster3.*), then the one node's (cluster3one.*).
		debug=${member_debug[0]}
		profile cluster3 $(($(secs "$wu") + 5))
		"$work/matchctl" load --token "$token" --cluster "$member_urls" --matches "$n" --rate "$rate" \
			--warmup "$wu" --duration "$dur" --json "${dbpid[@]}" >"$work/cluster3.json" || true
		[[ -n "${prof_pid:-}" ]] && { wait "$prof_pid" 2>/dev/null || true; prof_pid=; }
		stop_members
		start_node m_cluster3one
		profile cluster3one $(($(secs "$wu") + 5))
		"$work/matchctl" load --server "$server" --token "$token" --matches "$n" --rate "$rate" \
			--warmup "$wu" --duration "$dur" --json "${dbpid[@]}" >"$work/cluster3.one.json" || true
		[[ -n "${prof_pid:-}" ]] && { wait "$prof_pid" 2>/dev/null || true; prof_pid=; }
		kill "$node_pid"
		wait "$node_pid" 2>/dev/null || true
		node_pid=
		python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
sys.path.insert(0, work)
from measure_tables import calls
print()
print("| same load | intents/s | p50 | p99 | max | errors | CPU per intent (summed over the nodes; their system calls per intent) | each member's | machine: cores busy (PostgreSQL) |")
print("|---|---|---|---|---|---|---|---|---|")
base = None
for name, f in (("3 members, every session on a member that does not own its match", "cluster3.json"), ("1 node", "cluster3.one.json")):
    try:
        r = json.load(open(f"{work}/{f}"))
    except Exception as e:
        print(f"| {name} | failed: {e} |")
        continue
    node, lat, m = r.get("node") or {}, r["latencyMs"], r.get("machine") or {}
    each = " / ".join(f"{u['cpuMsPerIntent']:.3f}" for u in r.get("members") or [] if u) or "—"
    print(f"| {name}: {r['matches']:,} matches × {r['ratePerMatch']:g}/s | {r['intentsPerSecond']:,.0f} | {lat['p50']:.1f} ms | {lat['p99']:.1f} ms | "
          f"{lat['max']:.0f} ms | {r['errors']} | {node.get('cpuMsPerIntent', 0):.3f} ms{calls(node)} | {each} | "
          f"{m.get('busyCores', 0):.2f} of {m.get('cpus', 0)} ({m.get('databaseCores') or 0:.2f}) |")
EOF
	}
	# spectators: the same open loop on a fresh node without spectators,
	# then with MEASURE_SPECTATORS per match; the difference is theirs.
	run_spectators() {
		local n=${MEASURE_SPECTATE_MATCHES:-1000} k=${MEASURE_SPECTATORS:-5} rate=${MEASURE_RATE:-2} wu=$warmup
		local dur=${MEASURE_DURATION:-30s} dbpid=() with
		((n >= 1000)) && (($(secs "$wu") < 60)) && wu=60s
		[[ -r "${MATCHGRAIN_PG_DIR:-}/data/postmaster.pid" ]] &&
			dbpid=(--database-pid "$(head -1 "$MATCHGRAIN_PG_DIR/data/postmaster.pid")")
		for with in 0 "$k"; do
			start_node "m_spectators$with" --max-spectators "$k"
			profile "spectators$with" $(($(secs "$wu") + 5))
			"$work/matchctl" load --server "$server" --token "$token" --matches "$n" --rate "$rate" --spectators "$with" \
				--warmup "$wu" --duration "$dur" --json "${dbpid[@]}" >"$work/spectators$with.json" || true
			[[ -n "${prof_pid:-}" ]] && { wait "$prof_pid" 2>/dev/null || true; prof_pid=; }
			kill "$node_pid"
			wait "$node_pid" 2>/dev/null || true
			node_pid=
		done
		python3 - "$work" "$k" <<'EOF'
import json, sys
work, k = sys.argv[1], sys.argv[2]
print()
print("| same load | intents/s | p50 | p99 | errors | frames to spectators/s | node CPU s | node CPU per intent | node peak RSS | machine: cores busy (PostgreSQL) |")
print("|---|---|---|---|---|---|---|---|---|---|")
runs = []
for name, f in (("without spectators", "spectators0.json"), (f"{k} spectators per match", f"spectators{k}.json")):
    try:
        r = json.load(open(f"{work}/{f}"))
    except Exception as e:
        print(f"| {name} | failed: {e} |")
        continue
    runs.append(r)
    node, lat, m = r.get("node") or {}, r["latencyMs"], r.get("machine") or {}
    print(f"| {r['matches']:,} matches × {r['ratePerMatch']:g}/s, {name} | {r['intentsPerSecond']:,.0f} | {lat['p50']:.1f} ms | {lat['p99']:.1f} ms | "
          f"{r['errors']} | {r.get('spectatorFrames', 0) / max(r['measuredSeconds'], 1e-9):,.0f} | {node.get('cpuSeconds', 0):.1f} | "
          f"{node.get('cpuMsPerIntent', 0):.3f} ms | {node.get('peakRssBytes', 0) / 2**20:.0f} MiB | "
          f"{m.get('busyCores', 0):.2f} of {m.get('cpus', 0)} ({m.get('databaseCores') or 0:.2f}) |")
if len(runs) == 2 and runs[0].get("node") and runs[1].get("node") and runs[1].get("spectatorFrames"):
    a, b = runs
    # The run without spectators, scaled to the intents of the run with them.
    base = a["node"]["cpuSeconds"] * b["intents"] / max(a["intents"], 1)
    per_frame = (b["node"]["cpuSeconds"] - base) / b["spectatorFrames"] * 1e6
    spectators = b["matches"] * b["spectators"]
    per_spec = (b["node"]["peakRssBytes"] - a["node"]["peakRssBytes"]) / spectators / 1024
    print()
    print(f"spectators: {per_frame:.1f} µs of node CPU per frame delivered to a spectator; "
          f"{per_spec:.1f} KiB of node peak RSS per spectator ({spectators:,} spectators)")
EOF
	}
	secs() { python3 -c "import sys,re; m=re.fullmatch(r'(\d+)(s|m)', sys.argv[1]); print(int(m[1])*(60 if m[2]=='m' else 1))" "$1"; }
	local table=()
	for w in "${workloads[@]}"; do
		[[ "$w" == failover || "$w" == cluster3 || "$w" == spectators ]] || table+=("$w")
	done
	for w in "${table[@]}"; do
		local n=${w//[a-z]/} wu=$warmup idle=${MEASURE_IDLE:-${w//[a-z]/}} sources=() per_addr
		((n >= 1000)) && (($(secs "$wu") < 60)) && wu=60s
		echo "== $w" >&2
		# A closed loop measures what the node can carry, so its node lets a
		# connection send more than the protocol's default 16 intents/s
		# (an anti-abuse limit, docs/protocol.md §9.11) and its bots send
		# as fast as they decide: at 16/s per connection 100 matches could
		# never offer more than 3,200 intents/s.
		case "$w" in
		idle*)
			idle_limits "$idle"
			start_node "m_$w" --decision-time 1h --bank-time 1h --max-connections $((idle + 1000)) \
				--max-connections-per-address "$per_addr" ;;
		closed*) start_node "m_$w" --intents-per-second 100000 --intent-burst 100000 ;;
		*) start_node "m_$w" ;;
		esac
		local loadprof=() dbpid=()
		[[ -n "$prof" ]] && loadprof=(--cpu-profile "$prof/$w.loadgen.cpu.pprof")
		# A PostgreSQL of our own (pg-throwaway.sh sets MATCHGRAIN_PG_DIR) is
		# on this machine: its CPU goes in the report next to the node's.
		[[ -r "${MATCHGRAIN_PG_DIR:-}/data/postmaster.pid" ]] &&
			dbpid=(--database-pid "$(head -1 "$MATCHGRAIN_PG_DIR/data/postmaster.pid")")
		case "$w" in
		closed*)
			profile "$w" $(($(secs "$wu") + 5))
			"$work/matchctl" load --server "$server" --token "$token" --matches "$n" --connection-rate 0 \
				--warmup "$wu" --duration "$dur" --json "${loadprof[@]}" "${dbpid[@]}" >"$work/$w.json" || true ;;
		open*)
			profile "$w" $(($(secs "$wu") + 5))
			"$work/matchctl" load --server "$server" --token "$token" --matches "$n" --rate "$rate" \
				--warmup "$wu" --duration "$dur" --json "${loadprof[@]}" "${dbpid[@]}" >"$work/$w.json" || true ;;
		idle*)
			"$work/matchctl" load --server "$server" --token "$token" --idle "$idle" --idle-hold "$hold" \
				"${sources[@]}" --json >"$work/$w.json" &
			local load_pid=$!
			# The heap profile is of the node while it holds every session
			# (after matchctl exits they are closed): wait until the edge
			# counts them all open, then take it.
			if [[ -n "$prof" ]]; then
				for _ in $(seq 1500); do
					kill -0 "$load_pid" 2>/dev/null || break
					open_now=$(curl -s -H "Authorization: Bearer $token" "$server/metrics" |
						awk '/^matchgrain_edge_connections[{ ]/ {n += $NF} END {print n + 0}')
					if ((open_now >= idle)); then
						curl -s -o "$prof/$w.heap.pprof" "$debug/debug/pprof/heap?gc=1"
						curl -s "$debug/debug/pprof/heap?debug=1" | sed -n '/^# runtime.MemStats/,$p' >"$prof/$w.memstats.txt"
						curl -s -o "$prof/$w.goroutine.txt" "$debug/debug/pprof/goroutine?debug=1"
						break
					fi
					sleep 0.2
				done
			fi
			wait "$load_pid" || true ;;
		esac
		[[ -n "${prof_pid:-}" ]] && { wait "$prof_pid" 2>/dev/null || true; prof_pid=; }
		kill "$node_pid"
		wait "$node_pid" 2>/dev/null || true
		node_pid=
	done
	if ((${#table[@]})); then
		python3 - "$work" "${table[@]}" <<'EOF'
import json, sys
work, names = sys.argv[1], sys.argv[2:]
sys.path.insert(0, work)
from measure_tables import calls
print()
print("| workload | intents/s | p50 | p90 | p99 | max | skipped ticks | errors | node CPU per intent (system calls per intent) | node peak RSS | per match (peak − start) | cores busy (load generator / PostgreSQL) | node's times: intent mean (p50 / p99) / append (p99) / statement (p99) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
idle = []
for n in names:
    try:
        r = json.load(open(f"{work}/{n}.json"))
    except Exception as e:
        print(f"| {n} | failed: {e} |")
        continue
    if n.startswith("idle"):
        idle.append(r)
        continue
    mode = "closed loop" if r["mode"] == "closed" else f"open loop {r['ratePerMatch']:g}/s per match"
    node = r.get("node") or {}
    lat = r["latencyMs"]
    ticks = f"{r['skippedTicks']:,} of {r['ticks']:,}" if r["mode"] == "open" else "—"
    print(f"| {r['matches']:,} matches, {mode} | {r['intentsPerSecond']:,.0f} | {lat['p50']:.1f} ms | {lat['p90']:.1f} ms | "
          f"{lat['p99']:.1f} ms | {lat['max']:.0f} ms | {ticks} | {r['errors']} | "
          f"{node.get('cpuMsPerIntent', 0):.3f} ms{calls(node)} | {node.get('peakRssBytes', 0)/2**20:.0f} MiB | "
          + (f"{(node.get('peakRssBytes', 0) - node.get('rssBytesAtStart', 0))/r['matches']/1024:.1f} KiB |"
             if r["mode"] == "open" else "— |")
          + (f" {m['busyCores']:.2f} of {m['cpus']} ({m['loadGeneratorCores']:.2f} / "
             + (f"{m['databaseCores']:.2f}" if "databaseCores" in m else "—") + ") |" if (m := r.get("machine")) else " — |")
          + (f" {t['intent']:.2f} ({t.get('intentP50', 0):.1f} / {t.get('intentP99', 0):.1f}) / {t['append']:.2f} ({t.get('appendP99', 0):.1f}) / {t['statement']:.2f} ({t.get('statementP99', 0):.1f}) ms |"
             if (t := node.get("serverMs")) else " — |"))
for r in idle:
    print()
    print(f"idle: {r['connected']:,} of {r['sessions']:,} sessions connected, {r['dropped']} dropped, held {r['heldSeconds']:.0f} s; "
          f"node RSS {r['rssBytesBefore']/2**20:.1f} → {r['rssBytesHeld']/2**20:.1f} MiB: "
          f"{r['rssBytesPerConnection']/1024:.1f} KiB per connection (seat and half a match included)")
EOF
	fi
	for w in "${workloads[@]}"; do
		case "$w" in
		failover | cluster3 | spectators)
			echo "== $w" >&2
			"run_$w" ;;
		esac
	done
}

if [[ -n "${DATABASE_URL:-}" ]]; then
	run_all
else
	deploy/pg-throwaway.sh run -- bash -c "$(declare -f run_all); work='$work'; workloads=(${workloads[*]}); run_all"
fi
