#!/usr/bin/env bash
# pg-ha.sh starts and stops a highly available PostgreSQL 15 for development,
# tests and CI: pg_auto_failover (Debian's postgresql-15-auto-failover) with a
# monitor and two nodes, a primary and a synchronous standby, each run by its
# own pg_autoctl keeper. The monitor promotes the standby by itself when the
# primary dies. One temporary directory holds everything (data, keeper
# configuration and state, logs); the servers listen on free ports of one
# address (loopback by default), trust every client from it, and everything
# is removed on stop.
#
# Usage:
#   eval "$(deploy/pg-ha.sh start [--fast] [--stop-with PID])"
#       prints `export DATABASE_URL=...` (both nodes, target_session_attrs=
#       read-write: it reaches whichever node is primary) and
#       `export MATCHGRAIN_PGHA_DIR=...`, once the pair is in sync.
#   deploy/pg-ha.sh kill-primary [--whole-node] [DIR]
#       SIGKILL to the current primary's postmaster (its keeper restarts it,
#       as a standby once the monitor has promoted the other node), or with
#       --whole-node to its keeper and postmaster both, as when the machine
#       dies; the node stays down until start-node. Prints the node's name.
#   deploy/pg-ha.sh kill-standby [--whole-node] [DIR]    the same for the standby.
#   deploy/pg-ha.sh kill-monitor [DIR]     SIGKILL to the monitor's keeper and
#       postmaster; start-monitor brings it back.
#   deploy/pg-ha.sh start-node NAME [DIR], start-monitor [DIR]
#       start a killed keeper again; a node that was primary rejoins as standby.
#   deploy/pg-ha.sh wait [DIR]   waits until one primary and one secondary
#       are settled and replicating synchronously.
#   deploy/pg-ha.sh status [DIR]  names the primary and the standby, their
#       states and the replication state.
#   deploy/pg-ha.sh stop [DIR]    stops everything and deletes DIR.
#   deploy/pg-ha.sh run [--fast] -- CMD ARGS...
#       starts the pair, runs CMD with DATABASE_URL and MATCHGRAIN_PGHA_DIR
#       exported, always stops and cleans up, and exits with CMD's status.
#   DIR defaults to $MATCHGRAIN_PGHA_DIR.
#
# Options:
#   --fast           fsync=off on every server (and initdb --no-sync): for
#                    tests, wrong for durable-latency numbers. Commits still
#                    wait for the standby (synchronous_commit stays on).
#   --stop-with PID  (start only) a detached watchdog stops and removes
#                    everything once process PID has exited.
#
# Environment:
#   PGHA_LISTEN      the address every server listens on and is reached at
#                    (default 127.0.0.1); e.g. an address inside a network
#                    namespace.
#   PGHA_CLIENTS     the client network trusted without a password (default
#                    PGHA_LISTEN/32).
#   PGHA_FAST_FAILOVER  1 (default) tunes the monitor's health checks and
#                    demote timeout and the keepers' network partition
#                    timeout down, so that a dead node is replaced within
#                    seconds; 0 keeps pg_auto_failover's defaults (about a
#                    minute for a whole node).
#   PG_BIN           directory with initdb/pg_ctl (default: PostgreSQL 15's).
#   PG_START_TIMEOUT seconds to wait for each step (default 90).
#
# Run as root, the servers run as the `postgres` user (PostgreSQL refuses to
# run as root), and missing packages are installed with apt-get. Messages go
# to stderr; only the export lines of start go to stdout.
set -euo pipefail

readonly MARKER=".matchgrain-pg-ha"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_START_TIMEOUT="${PG_START_TIMEOUT:-90}"
PGHA_LISTEN="${PGHA_LISTEN:-127.0.0.1}"
PGHA_CLIENTS="${PGHA_CLIENTS:-$PGHA_LISTEN/32}"
PGHA_FAST_FAILOVER="${PGHA_FAST_FAILOVER:-1}"
readonly NODES=(node1 node2)
# shellcheck source=deploy/pg-common.sh
source "$(dirname "$(readlink -f "$0")")/pg-common.sh"

log() { printf 'pg-ha: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
	exit 2
}

# as_pg runs a command as the user that owns the servers, with pg_autoctl's
# configuration and state kept inside DIR (XDG_* below), not in a home.
as_pg() {
	local env=(env "PATH=$PG_BIN:$PATH" "XDG_CONFIG_HOME=$DIR/xdg/config"
		"XDG_DATA_HOME=$DIR/xdg/data" "XDG_RUNTIME_DIR=$DIR/xdg/run" "PGHOST=$DIR/sock")
	if [[ $EUID -eq 0 ]]; then
		runuser -u postgres -- "${env[@]}" "$@"
	else
		"${env[@]}" "$@"
	fi
}

ensure_binaries() {
	local missing=()
	[[ -x "$PG_BIN/initdb" && -x "$PG_BIN/pg_ctl" ]] || missing+=(postgresql-15)
	command -v pg_autoctl >/dev/null 2>&1 || missing+=(postgresql-15-auto-failover)
	command -v psql >/dev/null 2>&1 || missing+=(postgresql-client-15)
	((${#missing[@]})) || return 0
	[[ $EUID -eq 0 ]] || die "missing ${missing[*]}; install it (as root: apt-get install -y ${missing[*]})"
	log "installing ${missing[*]} with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq "${missing[@]}" >&2
	command -v pg_autoctl >/dev/null 2>&1 || die "pg_autoctl still missing after apt-get install"
}

port_in_use() { (exec 3<>"/dev/tcp/$PGHA_LISTEN/$1") 2>/dev/null; }

# free_ports N: N distinct ports nobody listens on now.
free_ports() {
	local want="$1" got=() p
	while ((${#got[@]} < want)); do
		p=$((20000 + RANDOM % 40000))
		port_in_use "$p" && continue
		[[ " ${got[*]} " == *" $p "* ]] && continue
		got+=("$p")
	done
	echo "${got[@]}"
}

# psql_at PORT DB SQL: one query, unaligned tuples only.
psql_at() {
	as_pg psql -X -q -At -h "$PGHA_LISTEN" -p "$1" -U postgres -d "$2" -c "$3"
}

monitor_sql() { psql_at "$(cat "$DIR/monitor.port")" pg_auto_failover "$1"; }

# until_true DESC CMD...: polls CMD every 0.2 s until it succeeds or
# PG_START_TIMEOUT passes.
until_true() {
	local desc="$1" deadline=$((SECONDS + PG_START_TIMEOUT))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || { log "timed out after ${PG_START_TIMEOUT}s waiting for $desc"; return 1; }
		sleep 0.2
	done
}

# init_data DATA FAST: initdb with the settings every server of ours gets,
# in postgresql.auto.conf, which PostgreSQL reads last (pg_auto_failover's
# own file would otherwise size shared_buffers for a dedicated machine and
# put the unix socket outside DIR). pg_autoctl adopts the directory.
init_data() {
	local data="$1" fast="$2"
	local args=(-D "$data" -U postgres -A trust -E UTF8 --locale=C)
	[[ "$fast" == 1 ]] && args+=(--no-sync)
	as_pg "$PG_BIN/initdb" "${args[@]}" >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
	printf '%s\n' 'local all all trust' "host all all $PGHA_CLIENTS trust" \
		'local replication all trust' "host replication all $PGHA_CLIENTS trust" |
		as_pg bash -c "cat >'$data/pg_hba.conf'"
	{
		echo "shared_buffers = '64MB'"
		echo "max_connections = 300"
		echo "unix_socket_directories = '$DIR/sock'"
		# A standby whose primary restarted (its postmaster killed alone)
		# reconnects within half a second, not the default 5 s; until it has,
		# every synchronous commit waits.
		echo "wal_retrieve_retry_interval = '500ms'"
		[[ "$fast" == 1 ]] && echo "fsync = off"
		true
	} | as_pg bash -c "cat >>'$data/postgresql.auto.conf'"
}

# keeper NAME: starts NAME's pg_autoctl keeper (or the monitor's) in a
# session of its own, so that its whole process tree (its services and the
# postmaster they run) can be signalled at once.
keeper() {
	local name="$1"
	as_pg setsid pg_autoctl run --pgdata "$DIR/$name" </dev/null >>"$DIR/$name.log" 2>&1 &
}

# keeper_pid NAME: the pid of NAME's running keeper (runuser and setsid
# fork, so it is not $!: pg_autoctl's own pid file says). Fails if none.
keeper_pid() {
	local f="$DIR/xdg/run/pg_autoctl$DIR/$1/pg_autoctl.pid" pid
	[[ -f "$f" ]] || return 1
	pid="$(head -n 1 "$f")"
	[[ "$pid" =~ ^[0-9]+$ ]] && alive_pid "$pid" && echo "$pid"
}

monitor_uri() {
	echo "postgres://autoctl_node@$PGHA_LISTEN:$(cat "$DIR/monitor.port")/pg_auto_failover?sslmode=disable"
}

start_monitor_first() {
	local fast="$1" port="$2"
	echo "$port" >"$DIR/monitor.port"
	init_data "$DIR/monitor" "$fast"
	as_pg pg_autoctl create monitor --pgdata "$DIR/monitor" --pgport "$port" --hostname "$PGHA_LISTEN" \
		--auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl" >>"$DIR/monitor.log" 2>&1 ||
		{ tail -n 30 "$DIR/monitor.log" >&2; die "pg_autoctl create monitor failed"; }
	as_pg pg_autoctl config set --pgdata "$DIR/monitor" postgresql.listen_addresses "$PGHA_LISTEN" >/dev/null
	if [[ "$PGHA_FAST_FAILOVER" == 1 ]]; then
		# The monitor probes every node twice a second and gives up on one
		# after one failed retry; a node whose probe fails and whose keeper
		# has not reported for 1 s is unhealthy, and a primary that does not
		# answer its demotion is taken as demoted after 1 s instead of 30.
		# Promotion of the standby then takes seconds, not a minute
		# (docs/operations.md, "Highly available PostgreSQL"; the keepers'
		# side is in tune_keeper).
		as_pg bash -c "cat >>'$DIR/monitor/postgresql.auto.conf'" <<-EOF
			pgautofailover.health_check_period = 500
			pgautofailover.health_check_timeout = 1000
			pgautofailover.health_check_max_retries = 1
			pgautofailover.health_check_retry_delay = 250
			pgautofailover.node_considered_unhealthy_timeout = 1000
			pgautofailover.primary_demote_timeout = 1000
		EOF
	fi
	keeper monitor
	until_true "the monitor" psql_at "$port" pg_auto_failover "SELECT 1" ||
		{ tail -n 30 "$DIR/monitor.log" >&2; return 1; }
}

# create_node NAME PORT FAST: registers NAME with the monitor and runs its
# keeper. The first node is initialised here (so that our settings are in
# it); the second is cloned from the primary by pg_autoctl.
create_node() {
	local name="$1" port="$2" fast="$3" data="$DIR/$1"
	[[ "$name" == node1 ]] && init_data "$data" "$fast"
	# --run: create, then go on as the keeper (one process tree per node).
	as_pg setsid pg_autoctl create postgres --pgdata "$data" --pgport "$port" --listen "$PGHA_LISTEN" \
		--hostname "$PGHA_LISTEN" --name "$name" --no-ssl --skip-pg-hba \
		--pgctl "$PG_BIN/pg_ctl" --username postgres --dbname matchgrain --monitor "$(monitor_uri)" --run \
		</dev/null >>"$DIR/$name.log" 2>&1 &
	echo "$port" >"$DIR/$name.port"
}

# tune_keeper NAME: with PGHA_FAST_FAILOVER, a primary that can reach
# neither the monitor nor a standby demotes itself after 1 s instead of 20,
# so that it has stopped before the monitor (1 s to call it unhealthy, 1 s
# of demote timeout) promotes the other node, as pg_auto_failover's defaults
# order them (20 s before 30 s). Synchronous replication already keeps such
# a primary from acknowledging a commit; this also ends its sessions, so
# clients move to the new primary instead of waiting on the old one. The
# running keeper rereads its configuration on SIGHUP (pg_autoctl reload).
tune_keeper() {
	[[ "$PGHA_FAST_FAILOVER" == 1 ]] || return 0
	as_pg pg_autoctl config set --pgdata "$DIR/$1" timeout.network_partition_timeout 1 >/dev/null
	as_pg pg_autoctl reload --pgdata "$DIR/$1" >>"$DIR/$1.log" 2>&1
}

# node_is NAME STATE: NAME last reported STATE to the monitor.
node_is() { [[ "$(monitor_sql "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '$1'")" == "$2" ]]; }

# alive NAME CMD...: CMD, but the whole start fails at once when NAME's
# keeper has exited (a bad option, a port taken) instead of timing out.
# It says why on fd 3, which its callers point at this script's stderr for
# the call alone (until_true silences the command's own; a keeper started
# while fd 3 was open would hold our caller's stderr open for good).
alive() {
	local name="$1"
	shift
	# The keeper writes its pid file a moment after it starts, and rewrites
	# it in place when its services change, so one read may find no pid:
	# only a keeper missing at two looks half a second apart has exited.
	if ((SECONDS > ${ALIVE_FROM:-0})) && ! keeper_pid "$name" >/dev/null; then
		sleep 0.5
		if ! keeper_pid "$name" >/dev/null; then
			tail -n 30 "$DIR/$name.log" >&3
			die "$name's keeper exited" 2>&3
		fi
	fi
	"$@"
}

# settled: one primary and one secondary, each in the state the monitor
# wants, and the primary replicating synchronously to the standby.
settled() {
	local n
	n="$(monitor_sql "SELECT count(*) FROM pgautofailover.node WHERE nodename LIKE 'node%'
		AND reportedstate = goalstate AND reportedstate IN ('primary', 'secondary')")"
	[[ "$n" == 2 ]] || return 1
	local primary
	primary="$(role_of primary)"
	[[ -n "$primary" ]] || return 1
	[[ "$(psql_at "$(cat "$DIR/$primary.port")" postgres \
		"SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')")" -ge 1 ]]
}

# role_of primary|secondary: the node the monitor has in that role.
role_of() {
	local states="'primary', 'wait_primary', 'single'"
	[[ "$1" == secondary ]] && states="'secondary', 'catchingup'"
	monitor_sql "SELECT nodename FROM pgautofailover.node WHERE nodename LIKE 'node%'
		AND goalstate IN ($states) ORDER BY nodeid LIMIT 1"
}

postmaster_pid() {
	local pidfile="$DIR/$1/postmaster.pid"
	[[ -f "$pidfile" ]] && head -n 1 "$pidfile"
}

# kill_node NAME WHOLE: SIGKILL to NAME's postmaster alone (its backends
# live on until they notice, as after a real postmaster crash), or if WHOLE
# to every process of the node at once, as when its machine dies: the
# keeper's process tree (so nothing restarts the postmaster), the postmaster
# and each of its children (backends make themselves process group leaders,
# so the keeper's group does not hold them).
kill_node() {
	local name="$1" whole="$2" pm keeper pids=()
	pm="$(postmaster_pid "$name" || true)"
	if [[ "$whole" == 1 ]]; then
		keeper="$(keeper_pid "$name" || true)"
		[[ -n "$keeper" ]] && pids+=("-$keeper")
		# shellcheck disable=SC2207 # pids are words
		[[ -n "$pm" ]] && pids+=($(ps -o pid= --ppid "$pm" 2>/dev/null || true))
	fi
	[[ -n "$pm" ]] && pids+=("$pm")
	((${#pids[@]})) || return 0
	kill -KILL -- "${pids[@]}" 2>/dev/null || true
	# Return once they are gone (reaped, not zombies): a keeper started
	# again at once would otherwise find its old pid alive and refuse.
	local deadline=$((SECONDS + 10)) p
	for p in "${keeper:-}" "$pm"; do
		[[ -n "$p" ]] || continue
		while alive_pid "$p" && ((SECONDS < deadline)); do sleep 0.05; done
	done
}

# alive_pid PID: PID runs and is not a zombie.
alive_pid() {
	local stat
	stat="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
	[[ -n "$stat" && "$stat" != Z* ]]
}

use_dir() {
	DIR="${1:-${MATCHGRAIN_PGHA_DIR:-}}"
	[[ -n "$DIR" ]] || die "no directory (set MATCHGRAIN_PGHA_DIR or pass one)"
	[[ -f "$DIR/$MARKER" ]] || die "$DIR was not made by pg-ha.sh"
	# The address it was started with, whatever this shell says.
	[[ -f "$DIR/listen" ]] && PGHA_LISTEN="$(cat "$DIR/listen")"
	return 0
}

stop_dir() {
	local dir="${1:-${MATCHGRAIN_PGHA_DIR:-}}"
	[[ -n "$dir" ]] || die "stop: no directory (set MATCHGRAIN_PGHA_DIR or pass one)"
	[[ -d "$dir" ]] || { log "stop: $dir is already gone"; return 0; }
	[[ -f "$dir/$MARKER" ]] || die "stop: $dir was not made by pg-ha.sh; refusing to delete it"
	DIR="$dir"
	local name pid
	for name in monitor "${NODES[@]}"; do
		pid="$(keeper_pid "$name")" && kill -KILL -- "-$pid" 2>/dev/null
		# immediate: the data is thrown away, so there is nothing to flush.
		[[ -f "$DIR/$name/postmaster.pid" ]] &&
			{ as_pg "$PG_BIN/pg_ctl" -D "$DIR/$name" -m immediate -w -t 30 stop >/dev/null 2>&1 || true; }
	done
	rm -rf -- "$DIR"
}

# prepare_dir DIR (pg-common.sh's make_dir): pg_autoctl's state and the
# address the formation listens on.
prepare_dir() {
	chmod 700 "$1/xdg/run"
	echo "$PGHA_LISTEN" >"$1/listen"
}

database_url() {
	printf "postgres://postgres@%s:%s,%s:%s/matchgrain?sslmode=disable&target_session_attrs=read-write&connect_timeout=2" \
		"$PGHA_LISTEN" "$(cat "$DIR/node1.port")" "$PGHA_LISTEN" "$(cat "$DIR/node2.port")"
}

# start_all FAST: monitor, primary, standby; returns once they are in sync.
start_all() {
	local fast="$1" ports
	read -r -a ports <<<"$(free_ports 3)"
	start_monitor_first "$fast" "${ports[0]}" || return 1
	create_node node1 "${ports[1]}" "$fast"
	ALIVE_FROM=$((SECONDS + 5))
	until_true "node1 to become the primary" alive node1 node_is node1 single 3>&2 ||
		{ tail -n 30 "$DIR/node1.log" >&2; return 1; }
	tune_keeper node1
	# pg_basebackup starts with a spread checkpoint, which paces the few
	# dirty buffers of a fresh server over minutes; one taken now leaves it
	# nothing to write.
	psql_at "${ports[1]}" postgres CHECKPOINT >/dev/null
	create_node node2 "${ports[2]}" "$fast"
	ALIVE_FROM=$((SECONDS + 5))
	until_true "the standby to be in sync" alive node2 settled 3>&2 ||
		{ tail -n 30 "$DIR/node1.log" "$DIR/node2.log" >&2; return 1; }
	tune_keeper node2
}

cmd_start() {
	start_args "$@"
	local fast=$start_fast stop_with=$start_stop_with
	ensure_binaries
	DIR="$(make_dir matchgrain-pgha xdg/config xdg/data xdg/run)"
	[[ -n "$stop_with" ]] && start_watchdog pg-ha-watchdog "$stop_with" "$DIR"
	local began=$SECONDS
	if ! (cd "$DIR" && start_all "$fast"); then
		stop_dir "$DIR"
		exit 1
	fi
	log "pg_auto_failover on $PGHA_LISTEN: monitor :$(cat "$DIR/monitor.port"), node1 :$(cat "$DIR/node1.port") (primary)," \
		"node2 :$(cat "$DIR/node2.port") (synchronous standby), in sync after $((SECONDS - began)) s; files in $DIR$([[ $fast == 1 ]] && echo ' (fsync=off)')"
	printf "export DATABASE_URL='%s'\n" "$(database_url)"
	printf "export MATCHGRAIN_PGHA_DIR='%s'\n" "$DIR"
}

cmd_run() {
	local fast=()
	while (($#)); do
		case "$1" in
		--fast) fast=(--fast) ;;
		--) shift; break ;;
		*) die "run: expected -- before the command, got $1" ;;
		esac
		shift
	done
	(($#)) || die "run: no command given after --"
	local out
	out="$("$0" start "${fast[@]}" --stop-with $$)" || exit 1
	eval "$out"
	trap 'stop_dir "$MATCHGRAIN_PGHA_DIR"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	log "running: $*"
	run_child "$@"
}

cmd_kill() {
	local role="$1" whole=0
	shift
	[[ "${1:-}" == --whole-node ]] && { whole=1; shift; }
	use_dir "${1:-}"
	local name
	name="$(role_of "$role")"
	[[ -n "$name" ]] || die "no $role now (status: $(cmd_status_line))"
	kill_node "$name" "$whole"
	log "killed the $role $name$([[ $whole == 1 ]] && echo ' (keeper and postmaster)')"
	echo "$name"
}

cmd_status_line() {
	monitor_sql "SELECT string_agg(nodename || ' ' || reportedstate || '/' || goalstate, ', ' ORDER BY nodeid)
		FROM pgautofailover.node" 2>/dev/null || echo "monitor unreachable"
}

cmd_status() {
	use_dir "${1:-}"
	local primary standby
	primary="$(role_of primary)" standby="$(role_of secondary)"
	echo "primary: ${primary:-none}"
	echo "standby: ${standby:-none}"
	echo "nodes (reported/goal): $(cmd_status_line)"
	if [[ -n "$primary" ]]; then
		echo "replication: $(psql_at "$(cat "$DIR/$primary.port")" postgres \
			"SELECT coalesce(string_agg(application_name || ' ' || state || ' ' || sync_state, ', '), 'no standby connected')
			FROM pg_stat_replication" 2>/dev/null || echo "primary unreachable")"
		echo "synchronous_standby_names: $(psql_at "$(cat "$DIR/$primary.port")" postgres "SHOW synchronous_standby_names" 2>/dev/null || echo '?')"
	fi
}

main() {
	(($#)) || usage
	local mode="$1"
	shift
	case "$mode" in
	start) cmd_start "$@" ;;
	stop) stop_dir "${1:-}" ;;
	run) cmd_run "$@" ;;
	kill-primary) cmd_kill primary "$@" ;;
	kill-standby) cmd_kill secondary "$@" ;;
	kill-monitor)
		use_dir "${1:-}"
		kill_node monitor 1
		log "killed the monitor (keeper and postmaster)"
		;;
	start-node)
		[[ "${1:-}" =~ ^node[12]$ ]] || die "start-node: name node1 or node2"
		local name="$1"
		use_dir "${2:-}"
		keeper_pid "$name" >/dev/null && die "$name's keeper runs already"
		(cd "$DIR" && keeper "$name")
		log "started $name's keeper"
		;;
	start-monitor)
		use_dir "${1:-}"
		keeper_pid monitor >/dev/null && die "the monitor's keeper runs already"
		(cd "$DIR" && keeper monitor)
		log "started the monitor's keeper"
		;;
	wait)
		use_dir "${1:-}"
		until_true "one primary and one synchronous standby" settled || { cmd_status >&2; exit 1; }
		;;
	status) cmd_status "$@" ;;
	-h | --help | help) usage ;;
	*) log "unknown mode $mode"; usage ;;
	esac
}

main "$@"
