#!/usr/bin/env bash
# compose-run.sh builds the matchd image and runs compose.yaml for real with
# podman and podman-compose, without any registry: three members and
# PostgreSQL start, a bot match is played through them with matchctl, the
# container that owns the match is stopped, and the match must still end
# normally on another member. `make compose-test` runs it (part of
# `make test`); it needs root (podman's networks) and Debian.
#
# No registry is reachable in CI, so the images' bases are made here from
# Debian packages installed on the host:
#   - the runtime base: a root filesystem holding Debian's busybox-static
#     (sh, wget and sleep, which the image's health check and the
#     Kubernetes preStop hook use), given to the Dockerfile's runtime stage
#     as RUNTIME_BASE, with BINARIES=prebuilt: the runtime stage of
#     deploy/docker/Dockerfile is built as users build it, from matchd and
#     matchctl compiled here instead of in its golang stage;
#   - PostgreSQL: Debian's postgresql-15 (the one deploy/pg-throwaway.sh
#     uses) copied with its shared libraries onto that busybox root, with an
#     entry point that honours the official image's POSTGRES_USER,
#     POSTGRES_PASSWORD and POSTGRES_DB, given to compose as
#     MATCHGRAIN_POSTGRES_IMAGE.
# podman here needs runc and explicit ulimits (this machine refuses the
# defaults); they come from a containers.conf of its own through
# CONTAINERS_CONF, so nothing in /etc changes.
#
# Everything the run creates (containers, images, networks, volumes, CNI
# firewall chains) is found by comparing with what existed before and
# removed on exit, failed or not. Installs podman, podman-compose, runc,
# busybox-static and the CNI dnsname plugin through apt when missing.
#
# Environment: GO (default go), MATCHGRAIN_KEEP=1 keeps the temporary
# directory (logs) for diagnosis.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
GO=${GO:-go}

say() { printf 'compose-run: %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }
if [[ $(id -u) != 0 ]]; then
	# CI runs as root; elsewhere this is the one part of make test that needs it.
	[[ -z "${CI:-}" ]] || die "run as root (podman networks and firewall rules)"
	say "skipped: needs root (podman networks and firewall rules); CI runs it"
	exit 0
fi

need=()
command -v podman >/dev/null || need+=(podman)
command -v podman-compose >/dev/null || need+=(podman-compose)
command -v runc >/dev/null || need+=(runc)
[[ -x /bin/busybox ]] && /bin/busybox --list | grep -qx wget || need+=(busybox-static)
[[ -x /usr/lib/cni/dnsname ]] || need+=(golang-github-containernetworking-plugin-dnsname)
command -v openssl >/dev/null || need+=(openssl)
[[ -x /usr/lib/postgresql/15/bin/postgres ]] || need+=(postgresql-15)
if ((${#need[@]})); then
	say "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

tmp=$(mktemp -d /tmp/mgcompose.XXXXXX)
run=mgci$(basename "$tmp" | cut -d. -f2 | tr 'A-Z' 'a-z')
export CONTAINERS_CONF=$tmp/containers.conf
# runc: crun is not installed. The ulimits: podman's defaults ask for more
# processes than this machine lets a container set, so runc fails with
# "error setting rlimit type 6"; these are within the host's own limits.
cat >"$CONTAINERS_CONF" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
[network]
network_backend = "cni"
EOF

# What exists before the run: everything else found at the end is ours.
rules() { # every firewall rule and chain, one "TABLE RULE" a line
	for t in filter nat mangle; do
		iptables -t "$t" -S 2>/dev/null | sed "s/^/$t /"
	done | sort
}
snapshot() {
	podman ps -aq --no-trunc | sort >"$tmp/$1.containers"
	podman images -aq --no-trunc | sort -u >"$tmp/$1.images"
	podman network ls -q | sort >"$tmp/$1.networks"
	podman volume ls -q | sort >"$tmp/$1.volumes"
	ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | { grep '^cni-' || true; } | sort >"$tmp/$1.links"
	rules >"$tmp/$1.allrules"
	{ grep -E 'CNI|cni-' "$tmp/$1.allrules" || true; } >"$tmp/$1.rules"
}
cleanup() {
	local rc=$?
	set +e
	if ((rc != 0)); then
		for c in postgres member1 member2 member3; do
			say "--- last log lines of $c"
			podman logs --tail 30 "${run}_${c}_1" 2>&1 | sed 's/^/  /' >&2
		done
	fi
	(cd "$tmp" && podman-compose -p "$run" -f "$repo/deploy/docker/compose.yaml" down -t 5 >/dev/null 2>&1)
	snapshot after
	comm -13 "$tmp/before.containers" "$tmp/after.containers" | xargs -r podman rm -f -v >/dev/null 2>&1
	comm -13 "$tmp/before.volumes" "$tmp/after.volumes" | xargs -r podman volume rm -f >/dev/null 2>&1
	comm -13 "$tmp/before.networks" "$tmp/after.networks" | xargs -r podman network rm -f >/dev/null 2>&1
	# Images last, when no container uses them.
	comm -13 "$tmp/before.images" "$tmp/after.images" | xargs -r podman rmi -f >/dev/null 2>&1
	# CNI's and dnsname's firewall rules (only those: other work on this
	# machine may change the firewall meanwhile): the new rules in chains
	# that existed (built-in chains show as -P), then the new chains,
	# flushed first because they jump to each other.
	comm -13 "$tmp/before.rules" <(rules) | grep -E 'CNI|cni-' >"$tmp/new.rules"
	while read -r t op chain rest; do
		[[ "$op" == -A ]] && grep -qE "^$t -(N $chain\$|P $chain )" "$tmp/before.allrules" && eval "iptables -t $t -D $chain $rest"
	done <"$tmp/new.rules"
	awk '$2 == "-N" { print $1, $3 }' "$tmp/new.rules" | while read -r t chain; do iptables -t "$t" -F "$chain"; done
	awk '$2 == "-N" { print $1, $3 }' "$tmp/new.rules" | while read -r t chain; do iptables -t "$t" -X "$chain"; done
	# The bridges of the networks (dnsname keeps them).
	comm -13 "$tmp/before.links" <(ip -o link show | awk -F": " "{ sub(/@.*/, \"\", \$2); print \$2 }" | grep "^cni-" | sort) | xargs -r -n1 ip link del
	snapshot final
	local left=""
	for k in containers images networks volumes links rules; do
		if ! cmp -s "$tmp/before.$k" "$tmp/final.$k"; then
			left+=" $k: $(comm -13 "$tmp/before.$k" "$tmp/final.$k" | tr '\n' ' ')"
		fi
	done
	if [[ -n "$left" ]]; then
		say "FAIL: left behind:$left"
		rc=1
	fi
	if [[ "${MATCHGRAIN_KEEP:-}" == 1 ]]; then say "kept $tmp"; else rm -rf "$tmp"; fi
	exit "$rc"
}
snapshot before
trap cleanup EXIT
started=$SECONDS

say "building matchd and matchctl (static)"
mkdir -p "$tmp/bin"
CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/bin/matchd" ./cmd/matchd
CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/bin/matchctl" ./cmd/matchctl

# The busybox root both images start from.
base=$tmp/base
mkdir -p "$base/rootfs/bin" "$base/rootfs/etc" "$base/rootfs/tmp"
cp /bin/busybox "$base/rootfs/bin/busybox"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$base/rootfs/etc/passwd"
printf 'root:x:0:\n' >"$base/rootfs/etc/group"
chmod 1777 "$base/rootfs/tmp"
printf 'FROM scratch\nCOPY rootfs/ /\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n' >"$base/Containerfile"
podman build -q -t "localhost/$run-base:latest" "$base" >/dev/null

say "building the runtime stage of deploy/docker/Dockerfile"
podman build -q --format docker -f deploy/docker/Dockerfile -t "localhost/$run-matchd:latest" \
	--build-arg BINARIES=prebuilt --build-arg "RUNTIME_BASE=localhost/$run-base:latest" "$tmp/bin" >/dev/null

say "building PostgreSQL 15 from the host's Debian package"
pg=$tmp/pg
mkdir -p "$pg/rootfs"
{
	find /usr/lib/postgresql/15/bin -type f
	find /usr/lib/postgresql/15/lib -maxdepth 1 -name '*.so' ! -name 'llvmjit*'
} >"$pg/files"
# Each binary's shared libraries (ldd's "=> /path" and the loader).
xargs -a "$pg/files" ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u >"$pg/libs"
while read -r f; do
	mkdir -p "$pg/rootfs$(dirname "$f")"
	cp -L "$f" "$pg/rootfs$f"
done < <(cat "$pg/files" "$pg/libs")
mkdir -p "$pg/rootfs/usr/share/postgresql" "$pg/rootfs/usr/share/zoneinfo"
cp -a /usr/share/postgresql/15 "$pg/rootfs/usr/share/postgresql/"
cp -a /usr/share/zoneinfo/. "$pg/rootfs/usr/share/zoneinfo/"
cp deploy/docker/postgres-entrypoint.sh "$pg/rootfs/entrypoint.sh"
cat >"$pg/Containerfile" <<EOF
FROM localhost/$run-base:latest
COPY rootfs/ /
RUN echo 'postgres:x:999:999:postgres:/var/lib/postgresql:/bin/sh' >>/etc/passwd \\
 && echo 'postgres:x:999:' >>/etc/group \\
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \\
 && chown -R 999:999 /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:/bin PGDATA=/var/lib/postgresql/data
USER 999:999
ENTRYPOINT ["/bin/sh", "/entrypoint.sh"]
EOF
podman build -q -t "localhost/$run-postgres:15" "$pg" >/dev/null
say "images built in $((SECONDS - started)) s"

# Cluster secrets for the members' service names, readable by the image's
# user; the token is the run's own.
secrets=$tmp/secrets
deploy/cluster-secrets.sh "$secrets" member1=member1 member2=member2 member3=member3 >/dev/null
chown -R 10001:10001 "$secrets"
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export MATCHGRAIN_IMAGE=localhost/$run-matchd:latest MATCHGRAIN_POSTGRES_IMAGE=localhost/$run-postgres:15 \
	MATCHGRAIN_SECRETS=$secrets MATCHGRAIN_ADMIN_TOKEN=$token
declare -A http
for m in 1 2 3; do
	http[$m]=$(free_port)
	export "MATCHGRAIN_MEMBER${m}_HTTP=${http[$m]}" "MATCHGRAIN_MEMBER${m}_TCP=$(free_port)"
done
compose() { (cd "$tmp" && podman-compose -p "$run" -f "$repo/deploy/docker/compose.yaml" "$@"); }

# PostgreSQL first and ready, then the members: podman-compose 1.0.3 starts
# depends_on in order but does not wait for service_healthy.
say "starting PostgreSQL"
compose up -d --no-build postgres >"$tmp/up-postgres.log" 2>&1 || { cat "$tmp/up-postgres.log" >&2; die "podman-compose up postgres"; }
poll() { # poll SECONDS WHAT COMMAND...: run COMMAND until it succeeds.
	local until=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS < until)) || die "$what: not within the deadline"
		sleep 0.5
	done
}
poll 60 "PostgreSQL ready" podman exec "${run}_postgres_1" pg_isready -U matchgrain -d matchgrain
say "starting three members"
compose up -d --no-build member1 member2 member3 >"$tmp/up-members.log" 2>&1 || { cat "$tmp/up-members.log" >&2; die "podman-compose up members"; }
ctl() { "$tmp/bin/matchctl" "$1" --token "$token" "${@:2}"; }
for m in 1 2 3; do
	poll 90 "member$m /healthz" curl -fsS "http://127.0.0.1:${http[$m]}/healthz"
	# The image's own HEALTHCHECK (wget inside the container; podman runs
	# it on demand, it has no systemd timers here).
	podman healthcheck run "${run}_member${m}_1" >/dev/null 2>&1 || die "member$m: the image's HEALTHCHECK fails"
done
# Every member sees all three (they found each other by service name); each
# one's own id, to know which container owns a match.
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
three() { [[ $(ctl cluster --server "http://127.0.0.1:${http[$1]}" | json 'len(d["members"])') == 3 ]]; }
declare -A memberOf
for m in 1 2 3; do
	poll 60 "member$m sees three members" three "$m"
	memberOf[$(ctl cluster --server "http://127.0.0.1:${http[$m]}" | json 'next(m["id"] for m in d["members"] if m.get("self"))')]=member$m
done
say "members: ${!memberOf[*]}"

# A bot match played through member1's edge, slowly enough to stop its
# owner midway. The owner must be another member (stopping member1 would
# end the players' connections), so matches owned by member1 are abandoned
# and a new one created.
for try in 1 2 3 4 5 6 7 8; do
	# matchctl itself in the background, not through ctl: $! of a function
	# is its subshell, and killing that left the player of an abandoned try
	# writing on into the next try's log (which grep then read as binary).
	playlog="$tmp/play$try.log"
	"$tmp/bin/matchctl" play --token "$token" --server "http://127.0.0.1:${http[1]}" --seed "$((40 + try))" \
		--think 150ms --timeout 5m >"$playlog" 2>&1 &
	player=$!
	poll 60 "the match id" grep -q 'match ' "$playlog"
	id=$(grep -ao 'match [A-Za-z0-9_-]*' "$playlog" | head -1 | cut -d' ' -f2)
	# The store's row exists from the match's creation, its owner only from
	# its first activation (a member may refuse that for a moment).
	owned() { [[ -n $(ctl match --server "http://127.0.0.1:${http[1]}" "$1" | json 'd["owner"]') ]]; }
	poll 60 "an owner for $id" owned "$id"
	owner=$(ctl match --server "http://127.0.0.1:${http[1]}" "$id" | json 'd["owner"]')
	ownerName=${memberOf[$owner]:-}
	[[ -n "$ownerName" ]] || die "match $id is owned by $owner, no member of this run"
	[[ "$ownerName" != member1 ]] && break
	say "match $id lives on member1 (the players' edge): another one"
	kill "$player"
	wait "$player" || true
done
[[ "$ownerName" == member[23] ]] || die "no match landed on member2 or member3 (owner $owner = $ownerName)"
[[ $(ctl match --server "http://127.0.0.1:${http[1]}" "$id" | json 'd["finished"]') == False ]] || die "match $id ended before its owner could be stopped"
say "match $id is owned by $ownerName; stopping its container mid-match"
podman stop -t 30 "${run}_${ownerName}_1" >>"$tmp/stop.log" 2>&1
stopped=$SECONDS
wait "$player" || { cat "$playlog" >&2; die "the match did not continue after $ownerName stopped"; }
tail -3 "$playlog" | sed 's/^/  /' >&2
after=$(ctl match --server "http://127.0.0.1:${http[1]}" "$id")
newOwner=$(json 'd["owner"]' <<<"$after")
finished=$(json 'd["finished"]' <<<"$after")
[[ "$finished" == True ]] || die "match $id is not finished in the store: $after"
[[ -n "$newOwner" && "$newOwner" != "$owner" ]] || die "the match's owner is still $owner after its container stopped: $after"
say "ok: match $id finished on $newOwner, $((SECONDS - stopped)) s after $ownerName stopped; whole run $((SECONDS - started)) s"
