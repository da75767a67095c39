# shellcheck shell=bash disable=SC2034  # STATUS_RC is read by scripts/stack
# Kafka part of scripts/stack: a single-node KRaft broker+controller from the jars in
# Maven Central (deploy/kafka/pom.xml). Sourced by scripts/stack.

KAFKA_POM="$REPO_ROOT/deploy/kafka/pom.xml"
KAFKA_PIDFILE="$STACK_DIR/kafka.pid"
KAFKA_DIR="$STACK_DIR/kafka"
KAFKA_LIBS="$KAFKA_DIR/libs"
KAFKA_DATA="$KAFKA_DIR/data"
KAFKA_PROPS="$KAFKA_DIR/server.properties"
KAFKA_LOG4J="$KAFKA_DIR/log4j.properties"
KAFKA_TOOLS_LOG4J="$KAFKA_DIR/tools-log4j.properties"
KAFKA_ADMIN_PROPS="$KAFKA_DIR/admin.properties"
KAFKA_LOG="$KAFKA_DIR/kafka.log"
KAFKA_TOPICS_OK="$KAFKA_DIR/topics.ok"

kafka_missing_packages() {
  command -v java >/dev/null || echo default-jre-headless
  command -v mvn >/dev/null || echo maven
}

kafka_bootstrap() { echo "127.0.0.1:$KAFKA_PORT"; }

kafka_ours() {
  local pid
  pid=$(read_pid "$KAFKA_PIDFILE")
  [[ -n $pid ]] && pid_matches "$pid" "$KAFKA_PROPS"
}

# kafka_fetch_libs: the broker's runtime classpath into $KAFKA_LIBS, once per pom version.
# Tries the pom's version first, then each of KAFKA_FALLBACK_VERSIONS.
kafka_fetch_libs() {
  local want have="" tmp v ok=""
  want=$(sha256_of "$KAFKA_POM")
  [[ -f $KAFKA_LIBS/.pom.sha256 ]] && have=$(cat "$KAFKA_LIBS/.pom.sha256")
  if [[ $have == "$want" ]] && compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null; then
    return 0
  fi
  mkdir -p "$KAFKA_DIR"
  tmp="$KAFKA_DIR/libs.tmp.$$"
  rm -rf "$tmp"
  for v in "" "${KAFKA_FALLBACK_VERSIONS[@]}"; do
    log "kafka: fetching broker jars with Maven${v:+ (kafka.version=$v)}"
    if mvn -q -B -Dstyle.color=never -f "$KAFKA_POM" dependency:copy-dependencies \
        -DoutputDirectory="$tmp" -DincludeScope=runtime ${v:+"-Dkafka.version=$v"} \
        </dev/null >"$KAFKA_DIR/mvn.log" 2>&1; then
      ok=1
      break
    fi
    rm -rf "$tmp"
    warn "kafka: mvn failed${v:+ for $v}; see $KAFKA_DIR/mvn.log"
  done
  if [[ -z $ok ]]; then
    show_log_tail "$KAFKA_DIR/mvn.log"
    die "kafka: could not fetch the broker jars"
  fi
  echo "$want" >"$tmp/.pom.sha256"
  rm -rf "$KAFKA_LIBS"
  mv "$tmp" "$KAFKA_LIBS"
  log "kafka: jars ready: $(cd "$KAFKA_LIBS" && ls kafka_2.13-*.jar)"
}

kafka_version() {
  local j
  j=$(cd "$KAFKA_LIBS" 2>/dev/null && ls kafka_2.13-*.jar 2>/dev/null | head -n1)
  j=${j#kafka_2.13-}
  echo "${j%.jar}"
}

kafka_write_config() {
  mkdir -p "$KAFKA_DIR" "$KAFKA_DATA"
  cat >"$KAFKA_PROPS.new" <<EOF
# Written by scripts/stack on every 'up'; edit the script, not this file.
# Single-node KRaft: this process is both broker and controller.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SSL://127.0.0.1:$KAFKA_TLS_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SSL://127.0.0.1:$KAFKA_TLS_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL
# The SSL listener serves the stack's certificate (scripts/certs); clients verify it with
# the stack's CA and need no certificate of their own.
ssl.keystore.type=PKCS12
ssl.keystore.location=$TLS_KEYSTORE
ssl.keystore.password=$(cat "$TLS_DIR/keystore.password")
ssl.client.auth=none
log.dirs=$KAFKA_DATA
num.partitions=6
log.retention.hours=24
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
# one node: internal topics with one replica (the transaction lines are required for
# idempotent/transactional producers)
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
# fewer internal partitions than the defaults (50): quicker first group/txn use in tests
offsets.topic.num.partitions=6
transaction.state.log.num.partitions=6
EOF
  if [[ -f $KAFKA_PROPS ]] && cmp -s "$KAFKA_PROPS" "$KAFKA_PROPS.new"; then
    rm -f "$KAFKA_PROPS.new"
  else
    mv -f "$KAFKA_PROPS.new" "$KAFKA_PROPS"
    kafka_ours && warn "kafka: server.properties changed; 'scripts/stack down && scripts/stack up' to apply"
  fi
  cat >"$KAFKA_LOG4J" <<'EOF'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.apache.kafka.storage.internals.log=WARN
log4j.logger.kafka.authorizer.logger=WARN
EOF
  cat >"$KAFKA_TOOLS_LOG4J" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
  cat >"$KAFKA_ADMIN_PROPS" <<'EOF'
request.timeout.ms=5000
default.api.timeout.ms=8000
EOF
}

# kafka_cli [-t SECONDS] CLASS ARGS...: a Kafka command-line tool, tuned for a quick JVM
# start, killed after SECONDS (default 60).
kafka_cli() {
  local secs=60
  if [[ $1 == -t ]]; then secs=$2; shift 2; fi
  timeout "$secs" java -Xms64m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
    -Dlog4j.configuration="file:$KAFKA_TOOLS_LOG4J" -cp "$KAFKA_LIBS/*" "$@" </dev/null 9>&-
}

kafka_format() {
  [[ -f $KAFKA_DATA/meta.properties ]] && return 0
  local id
  id=$(kafka_cli kafka.tools.StorageTool random-uuid) || die "kafka: StorageTool random-uuid failed"
  log "kafka: formatting $KAFKA_DATA (cluster id $id)"
  kafka_cli kafka.tools.StorageTool format -t "$id" -c "$KAFKA_PROPS" --ignore-formatted \
    >"$KAFKA_DIR/format.log" 2>&1 ||
    { show_log_tail "$KAFKA_DIR/format.log"; die "kafka: StorageTool format failed"; }
}

kafka_start() {
  rotate_log "$KAFKA_LOG"
  log "kafka: starting $(kafka_version) on 127.0.0.1:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT)"
  spawn_detached "$KAFKA_PIDFILE" "$KAFKA_LOG" java -Xms512m -Xmx768m \
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$KAFKA_LOG4J" -Dkafka.logs.dir="$KAFKA_DIR" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_PROPS"
}

kafka_list_topics() {
  kafka_cli -t 30 org.apache.kafka.tools.TopicCommand --bootstrap-server "$(kafka_bootstrap)" \
    --command-config "$KAFKA_ADMIN_PROPS" --list
}

kafka_topics_spec() { printf '%s\n' "${KAFKA_TOPICS[@]}"; }

# kafka_wait: the port answers, then a metadata request (topic list) succeeds.
kafka_wait() {
  local what=$1 alive_check=$2
  local deadline=$((SECONDS + KAFKA_TIMEOUT))
  while ! port_open 127.0.0.1 "$KAFKA_PORT"; do
    if [[ $alive_check == 1 ]] && ! kafka_ours; then
      show_log_tail "$KAFKA_LOG"
      die "kafka: the broker exited during start-up"
    fi
    if ((SECONDS >= deadline)); then
      show_log_tail "$KAFKA_LOG"
      die "kafka: $what does not answer on 127.0.0.1:$KAFKA_PORT after ${KAFKA_TIMEOUT}s"
    fi
    sleep 0.3
  done
  while ! KAFKA_TOPIC_LIST=$(kafka_list_topics 2>"$KAFKA_DIR/admin.err"); do
    if ((SECONDS >= deadline)); then
      cat "$KAFKA_DIR/admin.err" >&2 || true
      show_log_tail "$KAFKA_LOG"
      die "kafka: $what accepts connections but cannot list topics after ${KAFKA_TIMEOUT}s"
    fi
    sleep 1
  done
}

# kafka_ensure_topics: create the missing topics (--if-not-exists), from KAFKA_TOPIC_LIST,
# one CLI process per topic, in parallel (each is mostly JVM start-up).
kafka_ensure_topics() {
  local spec name parts pids=() names=() i failed=""
  for spec in "${KAFKA_TOPICS[@]}"; do
    name=${spec%%:*}
    parts=${spec##*:}
    if grep -qxF "$name" <<<"$KAFKA_TOPIC_LIST"; then
      continue
    fi
    log "kafka: creating topic $name ($parts partitions)"
    kafka_cli -t 60 org.apache.kafka.tools.TopicCommand --bootstrap-server "$(kafka_bootstrap)" \
      --command-config "$KAFKA_ADMIN_PROPS" --create --if-not-exists --topic "$name" \
      --partitions "$parts" --replication-factor 1 >/dev/null 2>"$KAFKA_DIR/topic-$name.err" &
    pids+=("$!")
    names+=("$name")
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      rm -f "$KAFKA_DIR/topic-${names[$i]}.err"
    else
      cat "$KAFKA_DIR/topic-${names[$i]}.err" >&2 || true
      failed+=" ${names[$i]}"
    fi
  done
  [[ -z $failed ]] || die "kafka: could not create topic(s):$failed"
}

# The topics were ensured for this broker process and this topic list.
kafka_topics_marker() { echo "$(read_pid "$KAFKA_PIDFILE") $(kafka_topics_spec | sha256sum | cut -c1-16)"; }

kafka_up_begin() {
  KAFKA_STARTED=0
  if kafka_ours; then
    return 0
  fi
  rm -f "$KAFKA_PIDFILE"
  if port_open 127.0.0.1 "$KAFKA_PORT"; then
    log "kafka: something not started by us answers on 127.0.0.1:$KAFKA_PORT; using it, not managing it"
    return 0
  fi
  port_open 127.0.0.1 "$KAFKA_CONTROLLER_PORT" &&
    die "kafka: the controller port 127.0.0.1:$KAFKA_CONTROLLER_PORT is taken by another process (set DUETIME_KAFKA_CONTROLLER_PORT)"
  kafka_fetch_libs
  kafka_write_config
  kafka_format
  kafka_start
  KAFKA_STARTED=1
}

kafka_up_finish() {
  if kafka_ours; then
    if ((KAFKA_STARTED == 0)) && port_open 127.0.0.1 "$KAFKA_PORT" &&
        [[ -f $KAFKA_TOPICS_OK && $(cat "$KAFKA_TOPICS_OK") == "$(kafka_topics_marker)" ]]; then
      log "kafka: already running (ours, pid $(read_pid "$KAFKA_PIDFILE"), port $KAFKA_PORT)"
      return 0
    fi
    kafka_wait "the broker (pid $(read_pid "$KAFKA_PIDFILE"))" 1
    kafka_ensure_topics
    kafka_topics_marker >"$KAFKA_TOPICS_OK"
    log "kafka: running (pid $(read_pid "$KAFKA_PIDFILE")), topics ready"
  elif ((KAFKA_STARTED)); then
    show_log_tail "$KAFKA_LOG"
    die "kafka: the broker exited right after start"
  else
    # foreign broker: use it; make sure our topics exist if the CLI jars are here
    if compgen -G "$KAFKA_LIBS/kafka-tools-*.jar" >/dev/null; then
      kafka_write_config
      if KAFKA_TOPIC_LIST=$(kafka_list_topics 2>/dev/null); then
        (kafka_ensure_topics) || warn "kafka: could not create the topics on the foreign broker"
      else
        warn "kafka: cannot list topics on the foreign broker at $(kafka_bootstrap)"
      fi
    fi
  fi
}

kafka_down() {
  if kafka_ours; then
    stop_pid kafka "$(read_pid "$KAFKA_PIDFILE")" "$KAFKA_STOP_TIMEOUT"
  elif port_open 127.0.0.1 "$KAFKA_PORT"; then
    log "kafka: 127.0.0.1:$KAFKA_PORT is not ours; leaving it alone"
  else
    log "kafka: not running"
  fi
  rm -f "$KAFKA_PIDFILE" "$KAFKA_TOPICS_OK"
}

# kafka_purge: data, config and logs; the downloaded jars (libs/) stay as a cache.
kafka_purge() {
  rm -rf "$KAFKA_DATA" "$KAFKA_TOPICS_OK" "$KAFKA_PROPS" "$KAFKA_LOG" "$KAFKA_LOG".* \
    "$KAFKA_DIR"/*.log "$KAFKA_DIR"/*.err "$KAFKA_DIR"/libs.tmp.*
}

kafka_status() {
  local pid
  if kafka_ours; then
    pid=$(read_pid "$KAFKA_PIDFILE")
    if port_open 127.0.0.1 "$KAFKA_PORT"; then
      status_line kafka "running (ours)" "$KAFKA_PORT" "$pid" "$KAFKA_DATA"
    else
      status_line kafka "starting/unresponsive (ours)" "$KAFKA_PORT" "$pid" "$KAFKA_DATA"
      STATUS_RC=3
    fi
  elif port_open 127.0.0.1 "$KAFKA_PORT"; then
    status_line kafka "running (foreign)" "$KAFKA_PORT" - -
  else
    status_line kafka stopped "$KAFKA_PORT" - "$KAFKA_DATA"
    STATUS_RC=3
  fi
}
