# shellcheck shell=bash
# TLS part of scripts/stack: a throwaway CA and one certificate (scripts/certs) for the stack's
# servers and for the services, and a check of what a server actually serves. Sourced by
# scripts/stack.

TLS_DIR="$STACK_DIR/tls"
TLS_CA="$TLS_DIR/ca.pem"
TLS_CERT="$TLS_DIR/cert.pem"
TLS_KEY="$TLS_DIR/key.pem"
TLS_KEYSTORE="$TLS_DIR/keystore.p12"

tls_missing_packages() { command -v openssl >/dev/null || echo openssl; }

# tls_up: make the CA and the certificate if missing (or expiring within 30 days).
tls_up() {
  "$REPO_ROOT/scripts/certs" "$TLS_DIR" || die "tls: could not make the stack's certificates"
}

# tls_check_started: a server this 'up' started (or PostgreSQL, whose TLS a reload turns on)
# must serve TLS with the stack's CA; one started earlier without it is only warned about.
tls_check_started() {
  if pg_ours && ! tls_serves "$PG_PORT" postgres; then
    show_log_tail "$PG_LOG"
    die "postgres: serves no TLS with the stack's CA on port $PG_PORT"
  fi
  if ((ETCD_STARTED)) && ! tls_serves "$ETCD_TLS_PORT"; then
    show_log_tail "$ETCD_LOG"
    die "etcd: serves no TLS with the stack's CA on port $ETCD_TLS_PORT"
  fi
  if ((KAFKA_STARTED)) && ! tls_serves "$KAFKA_TLS_PORT"; then
    show_log_tail "$KAFKA_LOG"
    die "kafka: serves no TLS with the stack's CA on port $KAFKA_TLS_PORT"
  fi
}

# tls_serves PORT [postgres]: the server on 127.0.0.1:PORT completes a TLS handshake whose
# certificate the stack's CA verifies (presenting the stack's certificate, as etcd requires).
tls_serves() {
  local port=$1 starttls=()
  [[ -s $TLS_CA ]] || return 1
  [[ ${2:-} == postgres ]] && starttls=(-starttls postgres)
  timeout 3 openssl s_client -connect "127.0.0.1:$port" "${starttls[@]}" -CAfile "$TLS_CA" \
    -cert "$TLS_CERT" -key "$TLS_KEY" -verify_return_error -brief </dev/null >/dev/null 2>&1
}
