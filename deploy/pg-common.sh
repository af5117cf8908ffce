# pg-common.sh holds what pg-throwaway.sh and pg-ha.sh share; they source it
# and set MARKER first. Not a command of its own.

# make_dir PREFIX [SUBDIR...]: a fresh directory under $TMPDIR named PREFIX.*
# with the script's MARKER (stop refuses a directory without it), sock/ and
# the SUBDIRs; a function prepare_dir, if the script defines one, adds its own
# files before the tree goes to the postgres user. Prints the directory.
make_dir() {
	local prefix="$1" dir
	shift
	dir="$(mktemp -d "${TMPDIR:-/tmp}/$prefix.XXXXXX")"
	touch "$dir/$MARKER"
	mkdir -p "$dir/sock"
	local sub
	for sub in "$@"; do
		mkdir -p "$dir/$sub"
	done
	if declare -F prepare_dir >/dev/null; then
		prepare_dir "$dir"
	fi
	if [[ $EUID -eq 0 ]]; then
		chown -R postgres: "$dir"
		# The postgres user must reach $dir through its parents too.
		if ! runuser -u postgres -- test -w "$dir"; then
			rm -rf -- "$dir"
			die "user postgres cannot reach $dir; set TMPDIR to a directory it can traverse"
		fi
	fi
	echo "$dir"
}

# start_watchdog NAME PID DIR: a detached process, titled NAME, that runs
# this script's `stop DIR` once PID has exited.
start_watchdog() {
	local name="$1" pid="$2" dir="$3"
	# setsid and closed stdio: the watchdog must not keep the caller's pipes open.
	# shellcheck disable=SC2016 # $1..$3 belong to the inner script.
	setsid bash -c '
		while kill -0 "$1" 2>/dev/null && [[ -d "$2" ]]; do sleep 1; done
		exec "$3" stop "$2"
	' "$name" "$pid" "$dir" "$(readlink -f "$0")" </dev/null >/dev/null 2>&1 &
}

# start_args ARGS...: the start command's options, into start_fast (0 or 1)
# and start_stop_with (a process id, or empty).
start_args() {
	start_fast=0 start_stop_with=""
	while (($#)); do
		case "$1" in
		--fast) start_fast=1 ;;
		--stop-with)
			[[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die "--stop-with needs a process id"
			start_stop_with="$2"
			shift
			;;
		*) die "start: unknown argument $1" ;;
		esac
		shift
	done
}

# run_child CMD ARGS...: runs CMD and exits with its status. CMD runs in the
# background because bash runs traps only once a foreground child has
# exited: a TERM from a CI timeout is passed on to CMD at once, and the
# caller's EXIT trap still cleans up. <&0 keeps our stdin, which a
# background job would otherwise lose.
run_child() {
	"$@" <&0 &
	child=$!
	trap 'kill -TERM "$child" 2>/dev/null || true' INT TERM
	local status
	while :; do
		status=0
		wait "$child" || status=$?
		# wait also returns when a trapped signal arrives; go on until CMD is gone.
		kill -0 "$child" 2>/dev/null || break
	done
	exit "$status"
}
