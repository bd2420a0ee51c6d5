# shellcheck shell=bash
# What scripts/kafka adds to the JVM service supervisor (jvm_service_lib.sh): Kafka's
# versions, jars and tool classes, and its nodes: how one starts, when the cluster is ready.
# Sourced, not executed, after cli_lib.sh and jvm_service_lib.sh; expects ROOT,
# SERVICE_CONFIG, DEFAULT_* and the constants that scripts/kafka defines. Everything
# user-facing goes to stderr except what a command is asked to print.

# ---------------------------------------------------------------- settings

effective_version() {
  local v="${1:-${KBENCH_KAFKA_VERSION:-$DEFAULT_VERSION}}"
  [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?$ ]] ||
    usage_error "'$v' is not a Kafka release version (expected e.g. 4.1.1 or 3.9.1)"
  printf '%s\n' "$v"
}

cache_dir() { printf '%s/kafka/%s\n' "$(cache_home)" "$1"; }

version_major() { printf '%s\n' "${1%%.*}"; }

# Kafka 4.x brokers and tools need Java 17; 3.x runs on 11 and up.
check_java_for() {
  local need=11
  (($(version_major "$2") >= 4)) && need=17
  svc_check_java "$1" "$need" "Kafka $2"
}

# java_and_classpath VERSION: the caller's java and cp for Kafka VERSION (its Java checked,
# its classpath resolved on first use).
java_and_classpath() {
  java="$(find_java)"
  check_java_for "$java" "$1"
  resolve_classpath "$1" >/dev/null
  cp="$(cat "$(cache_dir "$1")/classpath")"
}

# ---------------------------------------------------------------- tool classes

# Kafka moved several command classes from Scala (kafka.*) to Java
# (org.apache.kafka.tools.*) between 3.x and 4.0; map short names per version.
readonly KAFKA_TOOL_NAMES="storage topics broker-api-versions metadata-quorum producer-perf consumer-perf console-producer console-consumer"

tool_names() { printf '%s\n' "$KAFKA_TOOL_NAMES" | sed 's/ /, /g'; }

tool_class() {
  local version="$1" name="$2" v4=0
  (($(version_major "$version") >= 4)) && v4=1
  case "$name" in
    storage) echo kafka.tools.StorageTool ;;
    topics) echo org.apache.kafka.tools.TopicCommand ;;
    broker-api-versions)
      if ((v4)); then echo org.apache.kafka.tools.BrokerApiVersionsCommand; else echo kafka.admin.BrokerApiVersionsCommand; fi ;;
    metadata-quorum) echo org.apache.kafka.tools.MetadataQuorumCommand ;;
    producer-perf) echo org.apache.kafka.tools.ProducerPerformance ;;
    consumer-perf) echo org.apache.kafka.tools.ConsumerPerformance ;;
    console-producer)
      if ((v4)); then echo org.apache.kafka.tools.ConsoleProducer; else echo kafka.tools.ConsoleProducer; fi ;;
    console-consumer) echo org.apache.kafka.tools.consumer.ConsoleConsumer ;;
    *) return 1 ;;
  esac
}

# Logging for tools: warnings to stderr. Both properties are set; each logging
# backend (log4j2 for 4.x, reload4j for 3.x) reads only its own.
readonly TOOL_JVM_OPTS=(-Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$SERVICE_CONFIG/tools-log4j2.properties"
  "-Dlog4j.configuration=file:$SERVICE_CONFIG/tools-log4j.properties")

# Short-lived internal tools (format, readiness probe) start faster this way.
readonly QUICK_JVM_OPTS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto)

# ---------------------------------------------------------------- resolution

# Kafka's poms name slf4j-api but, in 4.x, no binding to log4j2 (the release tarball adds
# one by hand). Without a binding the broker would log nothing. Prints the binding's
# GROUP:ARTIFACT:VERSION when LIB lacks one.
missing_binding() {
  local lib="$1" f
  for f in "$lib"/*.jar; do
    case "$(basename "$f")" in
      slf4j-reload4j-*|slf4j-log4j12-*|log4j-slf4j-impl-*|log4j-slf4j2-impl-*|logback-classic-*|slf4j-simple-*) return 1 ;;
    esac
  done
  local core slf4j
  core="$(find "$lib" -maxdepth 1 -name 'log4j-core-*.jar' -printf '%f\n' | head -n 1)"
  slf4j="$(find "$lib" -maxdepth 1 -name 'slf4j-api-*.jar' -printf '%f\n' | head -n 1)"
  [[ -n $slf4j ]] || return 1 # nothing logs through SLF4J: nothing to bind
  local slf4j_version="${slf4j#slf4j-api-}"
  slf4j_version="${slf4j_version%.jar}"
  if [[ -n $core ]]; then
    local log4j_version="${core#log4j-core-}"
    log4j_version="${log4j_version%.jar}"
    if [[ $slf4j_version == 1.* ]]; then
      echo "org.apache.logging.log4j:log4j-slf4j-impl:$log4j_version"
    else
      echo "org.apache.logging.log4j:log4j-slf4j2-impl:$log4j_version"
    fi
  else
    echo "org.slf4j:slf4j-reload4j:$slf4j_version"
  fi
}

# kafka_mvn CACHE VERSION EXTRA... — Maven run for Kafka's broker, its tools and EXTRA jars.
kafka_mvn() {
  local c=$1 version=$2
  shift 2
  svc_write_pom "$c/pom.xml" "$version" "Apache Kafka $version" \
    "org.apache.kafka:kafka_2.13:$version" "org.apache.kafka:kafka-tools:$version" "$@"
  svc_mvn "$c" "org/apache/kafka/kafka_2.13/$version" && return 0
  if grep -qE "(kafka_2\.13|kafka-tools):(jar|pom):$version.*(was not found|Could not find)|Could not find artifact org\.apache\.kafka:(kafka_2\.13|kafka-tools)" "$c/mvn.log"; then
    rm -rf "$c" # leave no empty cache entry for a version that does not exist
    die 2 "Kafka $version is not on Maven Central (org.apache.kafka:kafka_2.13:$version not found); pick a released version, e.g. $DEFAULT_VERSION or 3.9.1"
  fi
  die 1 "Maven failed to resolve Kafka $version; see $c/mvn.log:$(tail_log "$c/mvn.log")"
}

# fill_kafka CACHE — the jars of the version CACHE is named after, in CACHE/lib.new.
fill_kafka() {
  local c=$1 version extra=() more
  version="$(basename "$c")"
  # A binding found missing before is asked for up front: one Maven run, not two.
  [[ -f $c/extra-deps ]] && read -ra extra <"$c/extra-deps"
  kafka_mvn "$c" "$version" "${extra[@]}"
  if more="$(missing_binding "$c/lib.new")"; then
    info "adding an SLF4J logging binding so the broker writes its logs"
    extra+=("$more")
    echo "${extra[*]}" >"$c/extra-deps"
    kafka_mvn "$c" "$version" "${extra[@]}"
  fi
}

# resolve_classpath VERSION — print the classpath, resolving it on first use.
resolve_classpath() { svc_classpath "$(cache_dir "$1")" "Apache Kafka $1" fill_kafka; }

# ---------------------------------------------------------------- nodes

# port_in_use PORT [HOST] — HOST defaults to KAFKA_HOST, the address the brokers listen
# on (scripts/kafka start --host), else 127.0.0.1.
port_in_use() { svc_port_open "${2:-${KAFKA_HOST:-127.0.0.1}}" "$1"; }

# node_host I — node I's address: its namespace's with --netns, else KAFKA_HOST.
node_host() { printf '%s\n' "${NODE_HOSTS[$1]:-${KAFKA_HOST:-127.0.0.1}}"; }

# A KRaft cluster id: 16 random bytes, URL-safe base64 without padding. Kafka's
# own generator avoids a leading '-', which command lines would take for an option.
random_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ $id != -* ]] && break
  done
  printf '%s\n' "$id"
}

node_count() { find "$1" -mindepth 2 -maxdepth 2 -path "$1/node-*/server.properties" 2>/dev/null | wc -l; }

# node_pidfiles DIR — the pid files of DIR's nodes (those with a configuration).
node_pidfiles() {
  local n
  for n in "$1"/node-*/server.properties; do
    [[ -f $n ]] && printf '%s\n' "${n%/server.properties}/pid"
  done
  return 0
}

# node_pid DIR NODE — the pid of node NODE (node-I) while its broker JVM runs.
node_pid() { svc_pid "$1/$2/pid"; }

# stopped (no node alive), running (all alive) or partial.
cluster_state() {
  local pidfiles=()
  mapfile -t pidfiles < <(node_pidfiles "$1")
  svc_state "${pidfiles[@]}"
}

# start_node JAVA CP VERSION DIR I — launch node I detached, record its pid.
start_node() {
  local java="$1" cp="$2" dir="$4" i="$5"
  local node="$dir/node-$i" logs="$dir/logs/node-$i"
  # The KBENCH_* option strings are split on spaces on purpose, like KAFKA_OPTS.
  local heap=() extra=()
  read -ra heap <<<"${KBENCH_KAFKA_HEAP_OPTS:--Xms512m -Xmx1g}"
  read -ra extra <<<"${KBENCH_KAFKA_JVM_OPTS:-}"
  # G1 with short pauses, as Kafka's own start scripts run the broker.
  local opts=("${heap[@]}" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
    "-Dkafka.logs.dir=$logs"
    "-Dlog4j2.configurationFile=$SERVICE_CONFIG/log4j2.properties"
    "-Dlog4j.configuration=file:$SERVICE_CONFIG/log4j.properties"
    "${extra[@]}")
  svc_launch "$node/pid" "$logs/stdout.log" "node $i" "${NODE_NETNS[$i]:-}" \
    "$java" "${opts[@]}" -cp "$cp" kafka.Kafka "$node/server.properties"
}

# Explain why a node died, with the hints that match its last words.
node_failure_hint() {
  local logs="$1"
  if grep -qs 'UnsupportedClassVersionError' "$logs/stdout.log"; then
    echo " (this Kafka needs a newer Java: set JAVA_HOME to a newer JDK)"
  elif grep -qs 'Address already in use' "$logs/stdout.log" "$logs/server.log"; then
    echo " (a port is already in use: pick others with --port-base)"
  fi
}

# wait_ready JAVA CP VERSION DIR N PORT_BASE BOOTSTRAP TIMEOUT — until N brokers answer.
# The hooks below read these locals (bash scoping is dynamic).
wait_ready() {
  local java="$1" cp="$2" version="$3" dir="$4" n="$5" port_base="$6" bootstrap="$7" timeout="$8"
  local seen=0 probe_class pidfiles=() i
  probe_class="$(tool_class "$version" broker-api-versions)"
  for ((i = 0; i < n; i++)); do pidfiles+=("$dir/node-$i/pid"); done
  svc_wait "$timeout" 1 brokers_registered node_died brokers_late "${pidfiles[@]}"
}

# Cheap check first (all broker ports accept connections), then ask the cluster itself:
# the metadata response lists brokers once registered.
brokers_registered() {
  local i out
  for ((i = 0; i < n; i++)); do
    port_in_use $((port_base + i)) "$(node_host "$i")" || return 1
  done
  out="$(timeout 30 "$java" "${QUICK_JVM_OPTS[@]}" "${TOOL_JVM_OPTS[@]}" -cp "$cp" "$probe_class" \
    --bootstrap-server "$bootstrap" --command-config "$dir/client-java.properties" 2>/dev/null)" || true
  seen="$(grep -cE '^[^ ]+ \(id: [0-9]+' <<<"$out" || true)"
  ((seen == n))
}

node_died() {
  local node logs
  node="$(basename "$(dirname "$1")")"
  logs="$dir/logs/$node"
  info "error: node ${node#node-} exited during startup$(node_failure_hint "$logs"); logs: $logs/server.log and $logs/stdout.log$(tail_log "$logs/stdout.log")$(tail_log "$logs/server.log")"
}

brokers_late() {
  info "error: timed out after $1 s waiting for $n broker(s) to register ($seen seen); logs: $dir/logs/node-*/server.log$(tail_log "$dir/logs/node-0/server.log")"
}

# kill_nodes DIR TIMEOUT — SIGTERM our nodes, SIGKILL what is left after TIMEOUT s.
kill_nodes() {
  local pidfiles=()
  mapfile -t pidfiles < <(find "$1" -mindepth 2 -maxdepth 2 -path "$1/node-*/pid" 2>/dev/null)
  svc_stop TERM "$2" "the nodes of $1" "${pidfiles[@]}" || info "no Kafka node of $1 is running"
}
