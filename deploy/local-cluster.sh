#!/usr/bin/env bash
# local-cluster.sh runs a Matchgrain cluster on this machine, for trying it by
# hand: N matchd members on loopback that share one throwaway PostgreSQL
# (deploy/pg-throwaway.sh), one admin token and one ticket key.
#
# Usage:
#   deploy/local-cluster.sh start N [-- MATCHD-FLAGS...]
#       builds matchd, starts PostgreSQL and N members (the first is the
#       gossip seed of the others), waits until every member is ready, and
#       prints each member's addresses, the file holding the admin token
#       and the database URL. Secrets reach the members through their
#       environment (MATCHD_ADMIN_TOKEN, MATCHD_TICKET_KEY), never their
#       command line, and are never printed.
#       MATCHD-FLAGS are passed to every member; MATCHD_* environment
#       variables reach them too (matchd reads one per flag).
#   deploy/local-cluster.sh status
#       prints the same, with each member's process state and /healthz.
#   deploy/local-cluster.sh stop
#       stops every member (SIGTERM, then SIGKILL after 20 s) and PostgreSQL,
#       and deletes the cluster's directory.
#
# Output lines are stable, for scripts and tests:
#   member <i> pid=<pid> http=<ip:port> tcp=<ip:port> gossip=<ip:port> remote=<ip:port> id=<member id>
#   admin-token-file <path of a 0600 file holding the token>
#   database-url <url>
#   dir <cluster directory>
#
# Environment:
#   MATCHGRAIN_CLUSTER_DIR  state directory (default ${TMPDIR:-/tmp}/matchgrain-local-cluster);
#                           one cluster per directory.
#   MATCHD_BIN              a matchd binary to use instead of building one.
#   GO                      the go command used to build (default go).
#   READY_TIMEOUT           seconds to wait for each member (default 60).
#
# Every listener binds 127.0.0.1 on a free port; nothing is reachable from
# other machines. Logs are in <dir>/member-<i>.log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${MATCHGRAIN_CLUSTER_DIR:-${TMPDIR:-/tmp}/matchgrain-local-cluster}"
READY_TIMEOUT="${READY_TIMEOUT:-60}"
GO="${GO:-go}"

log() { printf 'local-cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
	exit 2
}

random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# wait_ready waits for the ready line of member i and prints its fields.
wait_ready() {
	local i=$1 pid=$2 deadline=$((SECONDS + READY_TIMEOUT)) line
	while ((SECONDS < deadline)); do
		line="$(grep -m1 '^matchd ready ' "$DIR/member-$i.log" 2>/dev/null || true)"
		if [[ -n "$line" ]]; then
			printf '%s\n' "${line#matchd ready }" >"$DIR/member-$i.addr"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { tail -n 20 "$DIR/member-$i.log" >&2; die "member $i exited"; }
		sleep 0.2
	done
	tail -n 20 "$DIR/member-$i.log" >&2
	die "member $i not ready within ${READY_TIMEOUT}s"
}

# field prints one key=value field of a member's ready line.
field() { tr ' ' '\n' <"$DIR/member-$1.addr" | sed -n "s/^$2=//p"; }

print_cluster() {
	local with_health=$1 f i pid state health
	for f in "$DIR"/member-*.pid; do
		[[ -e "$f" ]] || continue
		i="${f##*/member-}"
		i="${i%.pid}"
		pid="$(cat "$f")"
		if [[ ! -e "$DIR/member-$i.addr" ]]; then
			printf 'member %s pid=%s state=starting\n' "$i" "$pid"
			continue
		fi
		printf 'member %s pid=%s http=%s tcp=%s gossip=%s remote=%s id=%s' "$i" "$pid" \
			"$(field "$i" http)" "$(field "$i" tcp)" "$(field "$i" gossip)" "$(field "$i" remote)" "$(field "$i" member)"
		if [[ "$with_health" == yes ]]; then
			state=running
			kill -0 "$pid" 2>/dev/null || state=exited
			health="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$(field "$i" http)/healthz" 2>/dev/null || true)"
			printf ' state=%s healthz=%s' "$state" "${health:-none}"
		fi
		printf '\n'
	done
	printf 'admin-token-file %s\n' "$DIR/admin-token"
	printf 'database-url %s\n' "$(cat "$DIR/database-url")"
	printf 'dir %s\n' "$DIR"
}

start() {
	[[ $# -ge 1 && "$1" =~ ^[1-9][0-9]*$ ]] || usage
	local n=$1 i pid seed=""
	shift
	if [[ $# -gt 0 ]]; then
		[[ "$1" == "--" ]] || usage
		shift
	fi
	if [[ -e "$DIR/pg-dir" ]]; then
		die "a cluster already runs in $DIR (deploy/local-cluster.sh stop, or set MATCHGRAIN_CLUSTER_DIR)"
	fi
	mkdir -p "$DIR"
	# A start that fails half way leaves nothing running behind.
	trap 'if [[ $? -ne 0 ]]; then log "start failed; cleaning up"; stop; fi' EXIT
	local bin="${MATCHD_BIN:-}"
	if [[ -z "$bin" ]]; then
		bin="$DIR/matchd"
		log "building matchd"
		(cd "$ROOT" && "$GO" build -o "$bin" ./cmd/matchd)
	fi
	log "starting PostgreSQL"
	local exports
	exports="$("$ROOT/deploy/pg-throwaway.sh" start)"
	eval "$exports"
	printf '%s\n' "$MATCHGRAIN_PG_DIR" >"$DIR/pg-dir"
	printf '%s\n' "$DATABASE_URL" >"$DIR/database-url"
	random_hex 24 >"$DIR/admin-token"
	random_hex 32 >"$DIR/ticket-key"
	chmod 600 "$DIR/admin-token" "$DIR/ticket-key"
	for ((i = 1; i <= n; i++)); do
		local args=(--node-name "member-$i" --database-url "$DATABASE_URL"
			--listen 127.0.0.1:0 --tcp-listen 127.0.0.1:0 --gossip-addr 127.0.0.1:0 --remote-addr 127.0.0.1:0)
		[[ -n "$seed" ]] && args+=(--join "$seed")
		# setsid: the member outlives this script and ignores the terminal's ^C.
		MATCHD_ADMIN_TOKEN="$(cat "$DIR/admin-token")" MATCHD_TICKET_KEY="$(cat "$DIR/ticket-key")" \
			setsid "$bin" "${args[@]}" "$@" >"$DIR/member-$i.log" 2>&1 </dev/null &
		pid=$!
		printf '%s\n' "$pid" >"$DIR/member-$i.pid"
		wait_ready "$i" "$pid"
		[[ -n "$seed" ]] || seed="$(field "$i" gossip)"
		log "member $i ready"
	done
	print_cluster no
}

stop_member() {
	local pid=$1 deadline=$((SECONDS + 20))
	kill -TERM "$pid" 2>/dev/null || return 0
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			log "pid $pid did not stop in 20 s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
			return 0
		fi
		sleep 0.2
	done
}

stop() {
	[[ -d "$DIR" ]] || { log "no cluster in $DIR"; return 0; }
	local f
	for f in "$DIR"/member-*.pid; do
		[[ -e "$f" ]] || continue
		stop_member "$(cat "$f")"
	done
	if [[ -s "$DIR/pg-dir" ]]; then
		"$ROOT/deploy/pg-throwaway.sh" stop "$(cat "$DIR/pg-dir")" || log "PostgreSQL stop failed"
	fi
	rm -rf "$DIR"
	log "stopped"
}

status() {
	[[ -s "$DIR/admin-token" ]] || die "no cluster in $DIR"
	print_cluster yes
}

case "${1:-}" in
start)
	shift
	start "$@"
	;;
stop) stop ;;
status) status ;;
*) usage ;;
esac
