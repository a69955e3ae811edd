#!/usr/bin/env bash
# A private RabbitMQ node with its STOMP plugin, on loopback, for tests, benchmarks and a
# single-machine deployment: own node name, ports and data folder, so it never clashes with
# a system RabbitMQ. No systemd needed (runs detached). Usage:
#   scripts/rabbitmq.sh start|stop|restart|status
# Environment (defaults): SCOUTLESS_RABBIT_DIR (/tmp/scoutless-rabbitmq),
#   SCOUTLESS_STOMP_PORT (61619), SCOUTLESS_STOMP_TLS_PORT (STOMP port + 1),
#   SCOUTLESS_AMQP_PORT (5679), SCOUTLESS_RABBIT_NODE (scoutless-rabbit@localhost); the
#   Erlang distribution port is AMQP port + 20000.
# STOMP over TLS listens on the TLS port with a certificate for localhost/127.0.0.1 signed
# by a CA made here with openssl at the first start ($DIR/tls/ca.pem: give it to the
# client as Settings.listener.tls_ca_file); tests only, never a production CA.
set -euo pipefail
DIR=${SCOUTLESS_RABBIT_DIR:-/tmp/scoutless-rabbitmq}
STOMP_PORT=${SCOUTLESS_STOMP_PORT:-61619}
STOMP_TLS_PORT=${SCOUTLESS_STOMP_TLS_PORT:-$((STOMP_PORT + 1))}
TLS=$DIR/tls
AMQP_PORT=${SCOUTLESS_AMQP_PORT:-5679}
export RABBITMQ_NODENAME=${SCOUTLESS_RABBIT_NODE:-scoutless-rabbit@localhost}
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$AMQP_PORT
export RABBITMQ_DIST_PORT=$((AMQP_PORT + 20000))
export RABBITMQ_MNESIA_BASE=$DIR/mnesia RABBITMQ_LOG_BASE=$DIR/log
export RABBITMQ_CONFIG_FILE=$DIR/rabbitmq RABBITMQ_ENABLED_PLUGINS_FILE=$DIR/enabled_plugins
export RABBITMQ_PID_FILE=$DIR/rabbit.pid HOME=${HOME:-/root}
# the package's own scripts, run as the calling user (the /usr/sbin wrappers would su to
# the 'rabbitmq' user, which cannot write this node's folder)
BIN=/usr/lib/rabbitmq/bin
[ -x "$BIN/rabbitmq-server" ] || BIN=$(dirname "$(command -v rabbitmq-server 2>/dev/null || echo /usr/sbin/x)")
ctl() { "$BIN/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" "$@"; }

install_if_missing() {
  [ -x "$BIN/rabbitmq-server" ] && return
  echo "installing rabbitmq-server (Debian package)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends rabbitmq-server >&2
  BIN=/usr/lib/rabbitmq/bin
}

# a CA and the broker's certificate (EC P-256: milliseconds), made once per folder
tls_certs() {
  [ -s "$TLS/server.pem" ] && [ -s "$TLS/ca.pem" ] && return
  mkdir -p "$TLS" && chmod 700 "$TLS"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  openssl req -x509 "${ec[@]}" -days 3650 -subj "/CN=scoutless test CA" \
    -keyout "$TLS/ca.key" -out "$TLS/ca.pem" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req "${ec[@]}" -subj "/CN=localhost" -keyout "$TLS/server.key" \
    -out "$TLS/server.csr" 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "extendedKeyUsage=serverAuth" \
    "keyUsage=critical,digitalSignature" "authorityKeyIdentifier=keyid" >"$TLS/server.ext"
  openssl x509 -req -in "$TLS/server.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" \
    -CAcreateserial -days 3650 -extfile "$TLS/server.ext" -out "$TLS/server.pem" 2>/dev/null
  chmod 600 "$TLS"/*.key
}

configure() {
  mkdir -p "$DIR/mnesia" "$DIR/log"
  tls_certs
  cat >"$DIR/rabbitmq.conf" <<CONF
listeners.tcp.1 = 127.0.0.1:$AMQP_PORT
stomp.listeners.tcp.1 = 127.0.0.1:$STOMP_PORT
stomp.listeners.ssl.1 = 127.0.0.1:$STOMP_TLS_PORT
ssl_options.cacertfile = $TLS/ca.pem
ssl_options.certfile = $TLS/server.pem
ssl_options.keyfile = $TLS/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
stomp.default_user = guest
stomp.default_pass = guest
loopback_users.guest = true
log.console = false
log.file.level = warning
CONF
  "$BIN/rabbitmq-plugins" --offline enable rabbitmq_stomp >/dev/null
}

running() { ctl status >/dev/null 2>&1; }

start() {
  install_if_missing
  if running; then echo "rabbitmq $RABBITMQ_NODENAME already running" >&2; else
    configure
    "$BIN/rabbitmq-server" -detached >/dev/null 2>&1
    ctl wait "$RABBITMQ_PID_FILE" --timeout 300 >/dev/null  # a loaded machine: a minute
  fi
  echo "SCOUTLESS_TEST_STOMP_URL=stomp://127.0.0.1:$STOMP_PORT"
  if grep -q "stomp.listeners.ssl" "$DIR/rabbitmq.conf" 2>/dev/null; then
    echo "SCOUTLESS_TEST_STOMP_TLS_URL=stomp+ssl://127.0.0.1:$STOMP_TLS_PORT"
    echo "SCOUTLESS_TEST_STOMP_TLS_CA=$TLS/ca.pem"
  fi
}

case "${1:-start}" in
  start) start ;;
  stop) if running; then ctl shutdown >/dev/null; fi ;;
  # the broker application restarts (connections drop, durable queues and persistent
  # messages survive) while the Erlang node stays up: what clients see of a broker restart
  restart) ctl eval 'ok = rabbit:stop(), ok = rabbit:start().' >/dev/null ;;
  status) running && echo running || { echo stopped; exit 1; } ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
