#!/usr/bin/env bash
# trace-fsync.sh times every fdatasync and fsync on this machine with
# `perf trace` (kernel tracepoints: no ptrace, nothing slowed but the calls'
# own bookkeeping) and summarises those of one command, PostgreSQL's by
# default. It answers "is the tail of my commits the disk's?": every commit
# waits for the flush of the WAL, so one slow flush holds up every append in
# flight (docs/performance.md §2).
#
# Usage:
#   deploy/trace-fsync.sh record SECONDS FILE   record every flush for SECONDS into FILE (root)
#   deploy/trace-fsync.sh summary FILE [COMM]   the flushes of COMM (default postgres) in FILE:
#                                               count, rate, percentiles and each one over 10 ms
#
# Run `record` beside a load (deploy/measure.sh open1000, say). perf comes
# with Debian's linux-perf package. Two CPUs finishing calls out of order
# make perf print a call in two lines ("... [continued]"), which summary
# joins; a call whose two halves perf timed on different clocks gets an
# impossible duration and is counted apart, not summarised.
set -euo pipefail

die() { printf 'trace-fsync: %s\n' "$*" >&2; exit 2; }

case "${1:-}" in
record)
	(($# == 3)) || die "usage: $0 record SECONDS FILE"
	command -v perf >/dev/null || die "perf is not installed (Debian: apt-get install linux-perf)"
	# SIGINT, not timeout's SIGTERM: perf writes what it holds only on INT.
	timeout -s INT "$2" perf trace -a -e fdatasync,fsync -o "$3" || [[ $? == 124 ]]
	;;
summary)
	(($# == 2 || $# == 3)) || die "usage: $0 summary FILE [COMM]"
	[[ -r "$2" ]] || die "cannot read $2"
	python3 - "$2" "${3:-postgres}" <<'EOF'
import re, sys

# "  5.239 ( 0.186 ms): postgres/18042 fdatasync(fd: 11) ... = 0", or the
# same call finished on another CPU: "... postgres/18042  ... [continued]: fdatasync()) = 0".
line = re.compile(r'^\s*([\d.]+) \(\s*([\d.]+) ms\): (.+)/(\d+)\s+(?:\.\.\. \[continued\]: )?(fdatasync|fsync)\(')
path, comm = sys.argv[1], sys.argv[2]
calls, unusable = [], 0
with open(path) as f:
    for text in f:
        m = line.match(text)
        if not m or m.group(3) != comm:
            continue
        ms = float(m.group(2))
        if ms > 3.6e6:  # an hour: the two halves came from different clocks
            unusable += 1
            continue
        calls.append((float(m.group(1)), ms))
if not calls:
    sys.exit(f"trace-fsync: no timed flush of {comm} in {path}")
times = sorted(ms for _, ms in calls)
n = len(times)
span = max(1e-3, (max(t for t, _ in calls) - min(t for t, _ in calls)) / 1000)
q = lambda p: times[min(n - 1, int(p * n))]
print(f"{comm}: {n} flushes in {span:.1f} s ({n / span:.0f}/s), {unusable} with unusable times")
print(f"ms: mean {sum(times) / n:.3f} p50 {q(.5):.3f} p90 {q(.9):.3f} p99 {q(.99):.3f} "
      f"p99.9 {q(.999):.3f} max {times[-1]:.1f}")
print("over 2/5/10/20/50 ms: " + " / ".join(str(sum(1 for ms in times if ms > th)) for th in (2, 5, 10, 20, 50)))
slow = sorted((t, ms) for t, ms in calls if ms > 10)
print("over 10 ms (s into the trace: ms): " + (", ".join(f"{t / 1000:.1f}: {ms:.1f}" for t, ms in slow) or "none"))
EOF
	;;
*)
	die "usage: $0 record SECONDS FILE | summary FILE [COMM]"
	;;
esac
