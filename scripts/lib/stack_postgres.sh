# shellcheck shell=bash disable=SC2034  # STATUS_RC is read by scripts/stack
# PostgreSQL part of scripts/stack: a project-local cluster run by the `postgres` user
# (initdb and postgres refuse to run as root). Sourced by scripts/stack.

PG_PIDFILE="$STACK_DIR/postgres.pid"
PG_LINK="$STACK_DIR/pg"         # the cluster's folder, or a symlink to it (pg_prepare_dir)

# pg_set_paths: paths as the postgres user must see them (through no symlink under a
# folder it cannot enter).
pg_set_paths() {
  PG_DIR="$PG_LINK"
  [[ -L $PG_LINK ]] && PG_DIR=$(readlink -f "$PG_LINK")
  PG_DATA="$PG_DIR/data"
  PG_LOG="$PG_DIR/postgres.log"
  PG_SOCK_DIR="$PG_DIR/run"
}
pg_set_paths

# pg_bindir: the server binaries of Debian's PostgreSQL (15 on Debian 12; newest otherwise).
pg_bindir() {
  local d
  if [[ -x /usr/lib/postgresql/15/bin/initdb ]]; then
    echo /usr/lib/postgresql/15/bin
    return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x $d/initdb && -x $d/pg_ctl ]] && { echo "$d"; return 0; }
  done
  return 1
}

pg_missing_packages() {
  pg_bindir >/dev/null || echo postgresql
  command -v psql >/dev/null || echo postgresql-client
}

pg_as_postgres() { runuser -u postgres -- "$@"; }

# pg_ours: our pid file points at a live postmaster of our data dir. If the pid file is
# missing but our data dir has a live postmaster (postmaster.pid), adopt it.
pg_ours() {
  local pid
  pid=$(read_pid "$PG_PIDFILE")
  if [[ -n $pid ]] && pid_matches "$pid" "$PG_DATA"; then
    return 0
  fi
  pid=$(read_pid "$PG_DATA/postmaster.pid")
  if [[ -n $pid ]] && pid_matches "$pid" "$PG_DATA"; then
    echo "$pid" >"$PG_PIDFILE"
    return 0
  fi
  return 1
}

pg_port_open() { port_open 127.0.0.1 "$PG_PORT"; }

pg_psql_admin() {
  # client_min_messages: a repeated GRANT's NOTICE ("is already a member") is no news.
  PGCONNECT_TIMEOUT=5 PGOPTIONS="-c client_min_messages=warning" psql -X -q -w -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres "$@"
}

pg_ready() { PGCONNECT_TIMEOUT=2 pg_psql_admin -tAc 'select 1' >/dev/null 2>&1; }

# pg_prepare_dir: the postgres user must be able to reach the data dir. When the stack
# dir sits under a folder it cannot enter (e.g. /root, mode 700), keep the cluster in
# /var/lib/postgresql/duetime-stacks/<hash> and point $STACK_DIR/pg at it.
pg_prepare_dir() {
  if [[ -e $PG_LINK ]]; then
    return 0
  fi
  if runuser -u postgres -- test -x "$STACK_DIR" 2>/dev/null; then
    mkdir -p "$PG_LINK"
  else
    local real
    real="/var/lib/postgresql/duetime-stacks/$(printf '%s' "$STACK_DIR" | sha256sum | cut -c1-12)"
    warn "user postgres cannot enter $STACK_DIR; keeping the cluster in $real (linked from $PG_LINK)"
    mkdir -p "$real"
    ln -sfn "$real" "$PG_LINK"
  fi
  pg_set_paths
  chown postgres:postgres "$PG_DIR"
  chmod 755 "$PG_DIR"
}

pg_write_conf() {
  local durable=off sock_dir=$PG_SOCK_DIR conf
  case "${PG_DURABLE,,}" in
    on|1|true|yes) durable=on ;;
    off|0|false|no|"") durable=off ;;
    *) die "DUETIME_PG_DURABLE must be on or off, not '$PG_DURABLE'" ;;
  esac
  # a unix socket path must fit in 107 bytes
  if (( ${#sock_dir} + 20 > 107 )); then
    sock_dir=/tmp
  fi
  conf=$(cat <<EOF
# Written by scripts/stack on every 'up'; edit the script, not this file.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$sock_dir'
max_connections = 300
shared_buffers = 256MB
max_locks_per_transaction = 256
# The data is cached or on SSD: at the default 4 the planner reads a whole small table
# (a herd's runs, attempts, definitions) for each batch of run ids instead of probing keys.
random_page_cost = 1.1
# DUETIME_PG_DURABLE=$durable: 'off' trades crash safety for speed (dev/test only)
fsync = $durable
synchronous_commit = $durable
full_page_writes = $durable
timezone = 'UTC'
log_timezone = 'UTC'
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
# TLS with the stack's certificate (scripts/certs; copies in the data dir, which PostgreSQL
# wants owned by it); clients choose: plaintext connections are still accepted.
ssl = on
ssl_cert_file = 'duetime-server.crt'
ssl_key_file = 'duetime-server.key'
# Per-statement time for the benches (bench/harness StatementStats); loaded at start only.
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = 'all'
EOF
)
  pg_copy_cert "$TLS_CERT" duetime-server.crt 644
  pg_copy_cert "$TLS_KEY" duetime-server.key 600
  if [[ ! -f $PG_DATA/duetime.conf ]] || [[ $(cat "$PG_DATA/duetime.conf") != "$conf" ]]; then
    printf '%s\n' "$conf" >"$PG_DATA/duetime.conf"
    chown postgres:postgres "$PG_DATA/duetime.conf"
    PG_CONF_CHANGED=1
  fi
  grep -q "^include_if_exists = 'duetime.conf'" "$PG_DATA/postgresql.conf" ||
    printf "\ninclude_if_exists = 'duetime.conf'\n" >>"$PG_DATA/postgresql.conf"
  mkdir -p "$PG_SOCK_DIR"
  chown postgres:postgres "$PG_SOCK_DIR"
}

# pg_copy_cert FILE NAME MODE: FILE into the data dir as NAME, owned by postgres; a changed
# copy has the server reload.
pg_copy_cert() {
  if ! cmp -s "$1" "$PG_DATA/$2"; then
    install -o postgres -g postgres -m "$3" "$1" "$PG_DATA/$2"
    PG_CONF_CHANGED=1
  fi
}

pg_init() {
  local bin=$1
  [[ -f $PG_DATA/PG_VERSION ]] && return 0
  log "postgres: initdb $PG_DATA"
  mkdir -p "$PG_DATA"
  chown postgres:postgres "$PG_DATA"
  chmod 700 "$PG_DATA"
  pg_as_postgres "$bin/initdb" -D "$PG_DATA" -U postgres --auth=trust \
    --encoding=UTF8 --no-locale --no-sync </dev/null >"$STACK_DIR/pg-initdb.log" 2>&1 ||
    { show_log_tail "$STACK_DIR/pg-initdb.log"; die "postgres: initdb failed"; }
}

# pg_ensure_db: role duetime (LOGIN CREATEDB, password duetime) and database duetime.
pg_ensure_db() {
  pg_psql_admin -c "DO \$\$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'duetime') THEN
        CREATE ROLE duetime LOGIN CREATEDB PASSWORD 'duetime';
      END IF; END \$\$;" || return 1
  # Tests drop their databases WITH (FORCE), which must be able to end an autovacuum worker.
  pg_psql_admin -c "GRANT pg_signal_backend TO duetime" >/dev/null || return 1
  if [[ $(pg_psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = 'duetime'") != 1 ]]; then
    pg_psql_admin -c 'CREATE DATABASE duetime OWNER duetime' || return 1
  fi
  # The benches read every database's statement statistics from database duetime.
  pg_psql_admin -d duetime -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
    >/dev/null 2>&1 || log "postgres: pg_stat_statements unavailable (restart to load it)"
  pg_psql_admin -c "GRANT pg_read_all_stats TO duetime" >/dev/null || return 1
}

# pg_restart_if_pending BIN: restarts the server when a reloaded setting takes effect only at
# start (shared_preload_libraries); other settings need no restart.
pg_restart_if_pending() {
  local pending
  wait_until "$PG_TIMEOUT" "postgres on port $PG_PORT" pg_ready || return 0
  pending=$(pg_psql_admin -tAc "SELECT string_agg(name, ', ') FROM pg_settings
      WHERE pending_restart AND name <> 'port' AND name NOT LIKE 'shared_buffers'")
  [[ -n $pending ]] || return 0
  log "postgres: restarting for $pending"
  setsid -w runuser -u postgres -- "$1/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -m fast \
    -w -t "$PG_TIMEOUT" restart </dev/null >"$STACK_DIR/pg-ctl.log" 2>&1 9>&- ||
    { cat "$STACK_DIR/pg-ctl.log" >&2; die "postgres: restart failed"; }
  read_pid "$PG_DATA/postmaster.pid" >"$PG_PIDFILE"
}

pg_up() {
  local bin pid
  PG_CONF_CHANGED=0
  if pg_ours; then
    pg_write_conf
    if ((PG_CONF_CHANGED)); then
      bin=$(pg_bindir)
      log "postgres: settings changed; reloading (a port/memory change needs 'down' + 'up')"
      pg_as_postgres "$bin/pg_ctl" -D "$PG_DATA" reload >/dev/null 9>&- || true
      pg_restart_if_pending "$bin"
    fi
    if ! wait_until "$PG_TIMEOUT" "postgres on port $PG_PORT" pg_ready; then
      show_log_tail "$PG_LOG"
      die "postgres: ours (pid $(read_pid "$PG_PIDFILE")) is running but does not answer on 127.0.0.1:$PG_PORT"
    fi
    pg_ensure_db || die "postgres: could not create role/database duetime"
    log "postgres: already running (ours, pid $(read_pid "$PG_PIDFILE"), port $PG_PORT)"
    return 0
  fi
  rm -f "$PG_PIDFILE"
  if pg_port_open; then
    log "postgres: something not started by us answers on 127.0.0.1:$PG_PORT; using it, not managing it"
    pg_ensure_db 2>/dev/null ||
      warn "postgres: could not check/create role and database duetime on the foreign server"
    return 0
  fi

  bin=$(pg_bindir) || die "postgres: server binaries not found"
  pg_prepare_dir
  pg_init "$bin"
  pg_write_conf
  log "postgres: starting on 127.0.0.1:$PG_PORT (durable=$PG_DURABLE)"
  # pg_ctl detaches the postmaster itself; setsid keeps it out of our session anyway.
  if ! setsid -w runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" \
      -w -t "$PG_TIMEOUT" start </dev/null >"$STACK_DIR/pg-ctl.log" 2>&1 9>&-; then
    cat "$STACK_DIR/pg-ctl.log" >&2 || true
    show_log_tail "$PG_LOG"
    die "postgres: did not start on 127.0.0.1:$PG_PORT"
  fi
  pid=$(read_pid "$PG_DATA/postmaster.pid")
  [[ -n $pid ]] || die "postgres: started, but no postmaster.pid"
  echo "$pid" >"$PG_PIDFILE"
  if ! wait_until "$PG_TIMEOUT" "postgres on port $PG_PORT" pg_ready; then
    show_log_tail "$PG_LOG"
    die "postgres: started (pid $pid) but does not answer on 127.0.0.1:$PG_PORT"
  fi
  pg_ensure_db || die "postgres: could not create role/database duetime"
  log "postgres: running (pid $pid)"
}

pg_down() {
  local bin pid
  if pg_ours; then
    pid=$(read_pid "$PG_PIDFILE")
    bin=$(pg_bindir) || die "postgres: server binaries not found"
    log "postgres: stopping pid $pid (pg_ctl stop -m fast)"
    if ! pg_as_postgres "$bin/pg_ctl" -D "$PG_DATA" stop -m fast -w -t "$STOP_TIMEOUT" \
        </dev/null >/dev/null 9>&-; then
      warn "postgres: fast stop timed out; immediate stop"
      pg_as_postgres "$bin/pg_ctl" -D "$PG_DATA" stop -m immediate -w -t 10 </dev/null >/dev/null 9>&- ||
        die "postgres: could not stop pid $pid"
    fi
  elif pg_port_open; then
    log "postgres: 127.0.0.1:$PG_PORT is not ours; leaving it alone"
  else
    log "postgres: not running"
  fi
  rm -f "$PG_PIDFILE"
}

pg_purge() {
  if [[ -L $PG_LINK && $PG_DIR == /var/lib/postgresql/duetime-stacks/* ]]; then
    rm -rf "$PG_DIR"
  fi
  rm -rf "$PG_LINK" "$STACK_DIR/pg-initdb.log" "$STACK_DIR/pg-ctl.log"
  pg_set_paths
}

pg_status() {
  local pid
  if pg_ours; then
    pid=$(read_pid "$PG_PIDFILE")
    if pg_port_open; then
      status_line postgres "running (ours)" "$PG_PORT" "$pid" "$PG_DATA"
    else
      status_line postgres "starting/unresponsive (ours)" "$PG_PORT" "$pid" "$PG_DATA"
      STATUS_RC=3
    fi
  elif pg_port_open; then
    status_line postgres "running (foreign)" "$PG_PORT" - -
  else
    status_line postgres stopped "$PG_PORT" - "$PG_DATA"
    STATUS_RC=3
  fi
}
