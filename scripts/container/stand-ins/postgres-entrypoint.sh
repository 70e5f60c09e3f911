#!/bin/sh
# The official postgres image's contract, in short: a first start makes the cluster with
# POSTGRES_USER and POSTGRES_PASSWORD and the database POSTGRES_DB; every start then runs
# PostgreSQL as the postgres user, listening on every address, password auth from outside.
set -eu
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >/run/postgresql/pw
  chown postgres /run/postgresql/pw
  as_postgres initdb -D "$PGDATA" --username="$user" --pwfile=/run/postgresql/pw --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm /run/postgresql/pw
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    as_postgres createdb -U "$user" "$db"
    as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$@" -D "$PGDATA" -c listen_addresses='*'
