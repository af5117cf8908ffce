#!/bin/sh
# The entry point of the PostgreSQL image compose-run.sh builds from Debian's
# postgresql-15 when no registry is reachable. It honours the variables of
# the official postgres image that compose.yaml sets (POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB): on first start it creates the cluster
# with that superuser and password and the database, then serves on every
# address with password authentication.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}" "${PGDATA:=/var/lib/postgresql/data}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pw=$(mktemp)
	printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >"$pw"
	initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" -E UTF8 --no-locale \
		--auth-local=trust --auth-host=scram-sha-256 >/dev/null
	rm -f "$pw"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	if [ "$POSTGRES_DB" != postgres ]; then
		echo "CREATE DATABASE \"$POSTGRES_DB\"" | postgres --single -D "$PGDATA" -j postgres >/dev/null
	fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c jit=off
