# shellcheck shell=bash disable=SC2034  # STATUS_RC is read by scripts/stack
# etcd part of scripts/stack: Debian's etcd 3.4 as a one-member cluster on loopback.
# Sourced by scripts/stack.

ETCD_BIN=/usr/bin/etcd
ETCD_PIDFILE="$STACK_DIR/etcd.pid"
ETCD_DIR="$STACK_DIR/etcd"
ETCD_DATA="$ETCD_DIR/data"
ETCD_LOG="$ETCD_DIR/etcd.log"
ETCD_NAME=duetime

etcd_missing_packages() {
  [[ -x $ETCD_BIN ]] || echo etcd-server
  command -v etcdctl >/dev/null || echo etcd-client
}

etcd_endpoint() { echo "http://127.0.0.1:$ETCD_PORT"; }
etcd_tls_endpoint() { echo "https://127.0.0.1:$ETCD_TLS_PORT"; }

etcd_ours() {
  local pid
  pid=$(read_pid "$ETCD_PIDFILE")
  [[ -n $pid ]] && pid_matches "$pid" "$ETCD_DATA"
}

etcd_healthy() {
  ETCDCTL_API=3 etcdctl --endpoints "$(etcd_endpoint)" --dial-timeout=2s \
    --command-timeout=3s endpoint health >/dev/null 2>&1
}

etcd_start() {
  mkdir -p "$ETCD_DIR"
  mkdir -p "$ETCD_DATA"
  chmod 700 "$ETCD_DATA"
  rotate_log "$ETCD_LOG"
  log "etcd: starting on 127.0.0.1:$ETCD_PORT, TLS on $ETCD_TLS_PORT (peer $ETCD_PEER_PORT)"
  local peer="http://127.0.0.1:$ETCD_PEER_PORT"
  local clients
  clients="$(etcd_endpoint),$(etcd_tls_endpoint)"
  # --auto-compaction-retention=1: keep one hour of history so a long-lived dev stack
  # does not grow into the 2 GB backend quota. The TLS port requires a client certificate
  # signed by the stack's CA (--client-cert-auth); the plaintext one asks for nothing.
  spawn_detached "$ETCD_PIDFILE" "$ETCD_LOG" "$ETCD_BIN" \
    --name "$ETCD_NAME" --data-dir "$ETCD_DATA" \
    --listen-client-urls "$clients" --advertise-client-urls "$clients" \
    --cert-file "$TLS_CERT" --key-file "$TLS_KEY" --trusted-ca-file "$TLS_CA" --client-cert-auth \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "$ETCD_NAME=$peer" --initial-cluster-state new \
    --auto-compaction-mode periodic --auto-compaction-retention 1 \
    --logger zap --log-outputs stderr
}

etcd_wait() {
  if ! wait_until "$ETCD_TIMEOUT" "etcd on port $ETCD_PORT" etcd_healthy; then
    show_log_tail "$ETCD_LOG"
    die "etcd: does not answer on 127.0.0.1:$ETCD_PORT (pid $(read_pid "$ETCD_PIDFILE"))"
  fi
  log "etcd: running (pid $(read_pid "$ETCD_PIDFILE"))"
}

# etcd_up_begin: decide, and start etcd if needed, without waiting. Sets ETCD_STARTED.
etcd_up_begin() {
  ETCD_STARTED=0
  if etcd_ours; then
    return 0
  fi
  rm -f "$ETCD_PIDFILE"
  if port_open 127.0.0.1 "$ETCD_PORT"; then
    log "etcd: something not started by us answers on 127.0.0.1:$ETCD_PORT; using it, not managing it"
    return 0
  fi
  [[ -x $ETCD_BIN ]] || die "etcd: $ETCD_BIN not found"
  port_open 127.0.0.1 "$ETCD_PEER_PORT" &&
    die "etcd: the peer port 127.0.0.1:$ETCD_PEER_PORT is taken by another process (set DUETIME_ETCD_PEER_PORT)"
  etcd_start
  ETCD_STARTED=1
}

etcd_up_finish() {
  if etcd_ours; then
    if ((ETCD_STARTED)); then
      etcd_wait
    elif etcd_healthy; then
      log "etcd: already running (ours, pid $(read_pid "$ETCD_PIDFILE"), port $ETCD_PORT)"
      tls_serves "$ETCD_TLS_PORT" ||
        warn "etcd: no TLS on port $ETCD_TLS_PORT (started before it had one): 'scripts/stack down && scripts/stack up' to add it"
    else
      etcd_wait
    fi
  elif ((ETCD_STARTED)); then
    show_log_tail "$ETCD_LOG"
    die "etcd: exited right after start"
  else
    etcd_healthy || warn "etcd: the foreign server on port $ETCD_PORT fails 'endpoint health'"
  fi
}

etcd_down() {
  if etcd_ours; then
    stop_pid etcd "$(read_pid "$ETCD_PIDFILE")" "$STOP_TIMEOUT"
  elif port_open 127.0.0.1 "$ETCD_PORT"; then
    log "etcd: 127.0.0.1:$ETCD_PORT is not ours; leaving it alone"
  else
    log "etcd: not running"
  fi
  rm -f "$ETCD_PIDFILE"
}

etcd_purge() { rm -rf "$ETCD_DIR"; }

etcd_status() {
  if etcd_ours; then
    if port_open 127.0.0.1 "$ETCD_PORT"; then
      status_line etcd "running (ours)" "$ETCD_PORT" "$(read_pid "$ETCD_PIDFILE")" "$ETCD_DATA"
    else
      status_line etcd "starting/unresponsive (ours)" "$ETCD_PORT" "$(read_pid "$ETCD_PIDFILE")" "$ETCD_DATA"
      STATUS_RC=3
    fi
  elif port_open 127.0.0.1 "$ETCD_PORT"; then
    status_line etcd "running (foreign)" "$ETCD_PORT" - -
  else
    status_line etcd stopped "$ETCD_PORT" - "$ETCD_DATA"
    STATUS_RC=3
  fi
}
