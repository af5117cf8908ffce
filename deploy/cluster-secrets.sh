#!/usr/bin/env bash
# cluster-secrets.sh makes the secrets that members of a cluster on a real
# network need (docs/security.md §1): a gossip key, a cluster CA, and one
# certificate per member for the actor remote's mutual TLS, whose subject
# alternative names are the addresses peers dial (--remote-addr's host).
#
# Usage:
#   deploy/cluster-secrets.sh OUTDIR NAME=SAN[,SAN...] [NAME=SAN...]
# writes into OUTDIR (created, mode 700):
#   gossip.key             one base64 32-byte key (MATCHD_GOSSIP_KEY_FILE)
#   ca.crt, ca.key         the cluster CA (keep ca.key offline)
#   NAME.crt, NAME.key     a member certificate with the given SANs
# A SAN that parses as an IP address becomes an IP SAN, anything else a DNS
# SAN (wildcards such as *.matchd-gossip.default.svc.cluster.local allowed).
#
# Examples:
#   deploy/cluster-secrets.sh deploy/docker/secrets member1=172.28.0.11 member2=172.28.0.12 member3=172.28.0.13
#   deploy/cluster-secrets.sh /tmp/k8s member='*.matchd-gossip.default.svc.cluster.local'
#
# Certificates are valid for 825 days (CA: 10 years); rerun to renew, and
# replace the files atomically: members re-read them on change. Needs openssl.
set -euo pipefail

die() { printf 'cluster-secrets: %s\n' "$*" >&2; exit 1; }
[[ $# -ge 2 ]] || { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
command -v openssl >/dev/null || die "openssl is needed"

out=$1
shift
mkdir -p "$out"
chmod 700 "$out"
umask 077

if [[ ! -s "$out/gossip.key" ]]; then
	head -c 32 /dev/urandom | base64 >"$out/gossip.key"
fi
if [[ ! -s "$out/ca.key" ]]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
		-subj "/CN=matchgrain cluster CA" -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
fi

for spec in "$@"; do
	name=${spec%%=*}
	sans=${spec#*=}
	[[ "$name" =~ ^[A-Za-z0-9_.-]+$ && "$sans" != "$spec" && -n "$sans" ]] || die "bad member spec $spec (want NAME=SAN[,SAN...])"
	alt=""
	IFS=, read -ra list <<<"$sans"
	for s in "${list[@]}"; do
		if [[ "$s" =~ ^[0-9.]+$ || "$s" == *:* ]]; then
			alt+="${alt:+,}IP:$s"
		else
			alt+="${alt:+,}DNS:$s"
		fi
	done
	ext=$(mktemp)
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=critical,CA:FALSE\n' "$alt" >"$ext"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
		-keyout "$out/$name.key" -out "$out/$name.csr" 2>/dev/null
	openssl x509 -req -in "$out/$name.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
		-days 825 -extfile "$ext" -out "$out/$name.crt" 2>/dev/null
	rm -f "$out/$name.csr" "$ext"
	printf 'cluster-secrets: %s: %s\n' "$name" "$alt" >&2
done
rm -f "$out/ca.srl"
# Containers run as another user than the one who ran this script: the
# files are readable by all in a directory only the owner can list.
chmod 644 "$out"/*.crt "$out"/*.key "$out/gossip.key"
chmod 600 "$out/ca.key"
chmod 711 "$out"
