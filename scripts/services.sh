#!/usr/bin/env bash
# Start the services the tests need: a throw-away PostgreSQL server on 127.0.0.1 (with a
# database holding PanDA's own schema), RabbitMQ with STOMP on loopback, and make sure
# headless Chromium is installed (report rendering test). Prints the env to export.
set -euo pipefail
PGPORT=${SCOUTLESS_PGPORT:-54329}
PGDATA=${SCOUTLESS_PGDATA:-/tmp/scoutless-pg}
need=()
[ -x "$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)/initdb" ] || need+=(postgresql)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} (Debian packages)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${need[@]}" >&2
fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi; }
if ! as_pg "$PGBIN/pg_isready -h 127.0.0.1 -p $PGPORT" >/dev/null 2>&1; then
  rm -rf "$PGDATA"; mkdir -p "$PGDATA"
  [ "$(id -u)" = 0 ] && chown postgres "$PGDATA"
  as_pg "$PGBIN/initdb -D $PGDATA --auth=trust -U postgres" >/dev/null
  as_pg "$PGBIN/pg_ctl -D $PGDATA -l $PGDATA/server.log -w -o '-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off' start" >/dev/null
fi
as_pg "$PGBIN/psql -h 127.0.0.1 -p $PGPORT -U postgres -tAc \"SELECT 1 FROM pg_database WHERE datname='scoutless_test'\"" | grep -q 1 \
  || as_pg "$PGBIN/createdb -h 127.0.0.1 -p $PGPORT -U postgres scoutless_test"
echo "SCOUTLESS_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:$PGPORT/scoutless_test"
# an empty database for benchmarks/serve.py --pg-url (it generates its history there)
as_pg "$PGBIN/psql -h 127.0.0.1 -p $PGPORT -U postgres -tAc \"SELECT 1 FROM pg_database WHERE datname='scoutless_bench'\"" | grep -q 1 \
  || as_pg "$PGBIN/createdb -h 127.0.0.1 -p $PGPORT -U postgres scoutless_bench"
echo "SCOUTLESS_BENCH_PG_URL=postgresql+psycopg://postgres@127.0.0.1:$PGPORT/scoutless_bench"
# PanDA's own schema (../shared/data/panda-database, schema doma_panda, DEFAULT partitions)
# in its own database, for trying the PanDA integration by hand (the tests load their own)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
as_pg "$PGBIN/psql -h 127.0.0.1 -p $PGPORT -U postgres -tAc \"SELECT 1 FROM pg_database WHERE datname='scoutless_panda'\"" | grep -q 1 \
  || as_pg "$PGBIN/createdb -h 127.0.0.1 -p $PGPORT -U postgres scoutless_panda"
PANDA_URL=postgresql+psycopg://postgres@127.0.0.1:$PGPORT/scoutless_panda
if PYTHONPATH=$ROOT/src "$PY" -m scoutless.panda.ddl "$PANDA_URL" >&2; then
  echo "SCOUTLESS_PANDA_DB_URL=$PANDA_URL"
else
  echo "PanDA DDL not loaded (needs scoutless importable by $PY)" >&2
fi
# RabbitMQ with its STOMP plugin: a private node on loopback (scripts/rabbitmq.sh)
"$ROOT/scripts/rabbitmq.sh" start
