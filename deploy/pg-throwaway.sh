#!/usr/bin/env bash
# pg-throwaway.sh starts and stops a throwaway PostgreSQL 15 for tests: one
# temporary directory holds the data, the unix socket and the server log, the
# server listens on a free port on 127.0.0.1 only, trusts every local client,
# and is removed completely on stop.
#
# Usage:
#   eval "$(deploy/pg-throwaway.sh start [--fast] [--stop-with PID])"
#       prints `export DATABASE_URL=...` and `export MATCHGRAIN_PG_DIR=...`.
#   deploy/pg-throwaway.sh stop [DIR]
#       stops the server in DIR (default $MATCHGRAIN_PG_DIR) and deletes DIR.
#   deploy/pg-throwaway.sh run [--fast] -- CMD ARGS...
#       starts a server, runs CMD with DATABASE_URL exported, always stops and
#       cleans up, and exits with CMD's status.
#
# Options:
#   --fast           start with fsync=off (and initdb --no-sync). Data is NOT
#                    crash-safe then; that is fine for tests (they use it), and
#                    wrong for benchmarks that claim durable-commit numbers.
#   --stop-with PID  (start only) a detached watchdog stops and removes the
#                    server once process PID has exited, so a test binary that
#                    dies without running its cleanup does not leak a server.
#
# Environment:
#   PG_BIN           directory with initdb/pg_ctl (default: PostgreSQL 15's).
#   PG_START_TIMEOUT seconds to wait for the server to accept connections (30).
#
# Run as root, the server runs as the `postgres` user (PostgreSQL refuses to
# run as root); otherwise it runs as the current user. Messages go to stderr;
# only the export lines go to stdout.
set -euo pipefail

readonly MARKER=".matchgrain-pg-throwaway"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_START_TIMEOUT="${PG_START_TIMEOUT:-30}"
# shellcheck source=deploy/pg-common.sh
source "$(dirname "$(readlink -f "$0")")/pg-common.sh"

log() { printf 'pg-throwaway: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	# The header comment, up to the first line that is not a comment.
	awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
	exit 2
}

# as_pg runs a command as the user that owns the server.
as_pg() {
	if [[ $EUID -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

ensure_binaries() {
	if [[ -x "$PG_BIN/initdb" && -x "$PG_BIN/pg_ctl" ]]; then
		return
	fi
	if [[ $EUID -ne 0 ]]; then
		die "no initdb/pg_ctl in $PG_BIN; install postgresql-15 (as root: apt-get install -y postgresql-15) or set PG_BIN"
	fi
	log "installing PostgreSQL 15 with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql-15 >&2 || apt-get install -y -qq postgresql >&2
	if [[ ! -x "$PG_BIN/initdb" ]]; then
		# The distribution's default major version is not 15: use whatever was installed.
		local found
		found="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
		[[ -n "$found" && -x "$found/initdb" ]] || die "PostgreSQL installed but no initdb found under /usr/lib/postgresql"
		PG_BIN="$found"
		log "using $PG_BIN"
	fi
	if [[ $EUID -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
		die "user postgres does not exist after installing PostgreSQL"
	fi
}

port_in_use() {
	# A successful connect means something listens there.
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# start_server DIR FAST: initdb, start on a free port, create the database.
# Prints the chosen port on stdout.
start_server() {
	local dir="$1" fast="$2"
	local data="$dir/data" sock="$dir/sock" logf="$dir/server.log"
	# initdb and pg_ctl complain when the postgres user cannot read the working directory.
	cd "$dir" || die "cannot enter $dir"
	local initdb_args=(-D "$data" -U postgres -A trust -E UTF8 --locale=C)
	[[ "$fast" == 1 ]] && initdb_args+=(--no-sync)
	if ! as_pg "$PG_BIN/initdb" "${initdb_args[@]}" >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		die "initdb failed"
	fi
	# Trust, but only over the unix socket in $dir and loopback TCP.
	printf '%s\n' 'local all all              trust' 'host  all all 127.0.0.1/32 trust' >"$data/pg_hba.conf" ||
		die "cannot write $data/pg_hba.conf"
	if [[ $EUID -eq 0 ]]; then
		chown postgres: "$data/pg_hba.conf" || die "cannot chown $data/pg_hba.conf"
	fi

	local opts="-c listen_addresses=127.0.0.1 -c unix_socket_directories=$sock -c max_connections=300"
	[[ "$fast" == 1 ]] && opts+=" -c fsync=off"

	local attempt port
	for attempt in 1 2 3 4 5 6 7 8; do
		port=$((20000 + RANDOM % 40000))
		port_in_use "$port" && continue
		if as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$logf" -w -t "$PG_START_TIMEOUT" \
			-o "$opts -c port=$port" start >"$dir/pg_ctl.log" 2>&1; then
			break
		fi
		if grep -q "could not bind\|Address already in use\|could not create any TCP/IP sockets" "$logf" 2>/dev/null; then
			log "port $port was taken, retrying (attempt $attempt)"
			port=""
			continue
		fi
		cat "$dir/pg_ctl.log" "$logf" >&2 2>/dev/null || true
		die "server did not start"
	done
	[[ -n "${port:-}" ]] || { cat "$logf" >&2 2>/dev/null || true; die "no free port found"; }

	# pg_ctl -w already waited; pg_isready confirms TCP answers before we hand out the URL.
	local deadline=$((SECONDS + PG_START_TIMEOUT))
	until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; do
		if ((SECONDS >= deadline)); then
			cat "$logf" >&2
			die "server not ready on port $port after ${PG_START_TIMEOUT}s"
		fi
		sleep 0.1
	done
	if ! as_pg "$PG_BIN/createdb" -h "$sock" -p "$port" -U postgres matchgrain 2>"$dir/createdb.log"; then
		cat "$dir/createdb.log" "$logf" >&2
		die "createdb matchgrain failed"
	fi
	echo "$port"
}

# stop_dir DIR: stop the server in DIR and delete DIR, but only if DIR is ours.
stop_dir() {
	local dir="$1"
	[[ -n "$dir" ]] || die "stop: no directory (set MATCHGRAIN_PG_DIR or pass one)"
	[[ -d "$dir" ]] || { log "stop: $dir is already gone"; return 0; }
	[[ -f "$dir/$MARKER" ]] || die "stop: $dir was not made by pg-throwaway.sh; refusing to delete it"
	if [[ -f "$dir/data/postmaster.pid" ]]; then
		# immediate: the data is thrown away, so there is nothing to flush.
		as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
			log "stop: pg_ctl stop failed (server already gone?)"
	fi
	rm -rf -- "$dir"
}

cmd_start() {
	start_args "$@"
	local fast=$start_fast stop_with=$start_stop_with
	ensure_binaries
	local dir port
	dir="$(make_dir matchgrain-pg)"
	if ! port="$(start_server "$dir" "$fast")"; then
		stop_dir "$dir"
		exit 1
	fi
	[[ -n "$stop_with" ]] && start_watchdog pg-throwaway-watchdog "$stop_with" "$dir"
	log "PostgreSQL on 127.0.0.1:$port, data in $dir$([[ $fast == 1 ]] && echo ' (fsync=off)')"
	printf "export DATABASE_URL='postgres://postgres@127.0.0.1:%s/matchgrain?sslmode=disable'\n" "$port"
	printf "export MATCHGRAIN_PG_DIR='%s'\n" "$dir"
}

cmd_run() {
	local fast=0
	while (($#)); do
		case "$1" in
		--fast) fast=1 ;;
		--) shift; break ;;
		*) die "run: expected -- before the command, got $1" ;;
		esac
		shift
	done
	(($#)) || die "run: no command given after --"
	ensure_binaries
	local dir port
	dir="$(make_dir matchgrain-pg)"
	# From here on the server must go away however we leave.
	trap 'stop_dir "$dir"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	port="$(start_server "$dir" "$fast")" || exit 1
	export DATABASE_URL="postgres://postgres@127.0.0.1:$port/matchgrain?sslmode=disable"
	export MATCHGRAIN_PG_DIR="$dir"
	log "PostgreSQL on 127.0.0.1:$port; running: $*"
	run_child "$@"
}

main() {
	(($#)) || usage
	local mode="$1"
	shift
	case "$mode" in
	start) cmd_start "$@" ;;
	stop) stop_dir "${1:-${MATCHGRAIN_PG_DIR:-}}" ;;
	run) cmd_run "$@" ;;
	-h | --help | help) usage ;;
	*) log "unknown mode $mode"; usage ;;
	esac
}

main "$@"
