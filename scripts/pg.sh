#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL cluster for tests and benches, on loopback.
#
#   bash scripts/pg.sh start DIR [PORT]   # prints the database URL on stdout
#   bash scripts/pg.sh stop DIR
#   bash scripts/pg.sh crash DIR          # immediate stop: crash recovery at the next start
#
# Uses Debian's `postgresql` package (CI installs it with apt-get). `initdb` refuses to run
# as root, so as root the cluster belongs to the `postgres` user and is run through runuser.
# The cluster trusts local connections: it listens on 127.0.0.1 only and lives in DIR.
set -euo pipefail
cmd=${1:?usage: pg.sh start|stop|crash DIR [PORT]}
dir=${2:?usage: pg.sh start|stop|crash DIR [PORT]}
port=${3:-55432}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ]; then
  echo "pg.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2
  exit 1
fi
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    if [ ! -f "$dir/PG_VERSION" ]; then
      as_owner "$bin/initdb" -D "$dir" -A trust -U agora -E UTF8 --locale=C.UTF-8 >"$dir.initdb.log" 2>&1 \
        || { cat "$dir.initdb.log" >&2; exit 1; }
    fi
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=on -c max_connections=300 -c idle_in_transaction_session_timeout=10s" \
      start >/dev/null
    as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U agora -d postgres -qAt \
      -c "CREATE EXTENSION IF NOT EXISTS pg_trgm" >/dev/null
    echo "postgresql://agora@127.0.0.1:$port/postgres"
    ;;
  stop)
    as_owner "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null
    ;;
  crash)
    as_owner "$bin/pg_ctl" -D "$dir" -m immediate -w stop >/dev/null
    ;;
  *)
    echo "usage: pg.sh start|stop|crash DIR [PORT]" >&2
    exit 2
    ;;
esac
