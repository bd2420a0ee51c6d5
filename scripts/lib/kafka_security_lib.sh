# shellcheck shell=bash
# TLS and SASL for scripts/kafka: a throwaway CA and certificates made with openssl, SCRAM
# users created by Kafka's own storage tool when the nodes are formatted, the broker's
# listener settings and the client settings a user needs.
# Sourced after cli_lib.sh, jvm_service_lib.sh and kafka_lib.sh, never executed.
#
# Everything lives in the cluster's state directory and is made anew at every start:
#   security                     the mode (plaintext, ssl, sasl_plaintext, sasl_ssl, mtls)
#   client.properties            librdkafka settings, for kbench --client-config
#   client-java.properties       the same for Kafka's Java tools (--command-config,
#                                --producer.config, --consumer.config)
#   tls/ca.pem                   the CA every client must trust (public)
#   tls/ca.key, tls/broker.p12, tls/client.key, tls/client.p12   private, mode 600
# The passwords are random per start and appear only in those files and the nodes'
# server.properties; `stop` deletes the files and scrubs the passwords out of
# server.properties, so a state directory under results/ keeps no secret once stopped.

readonly SECURITY_MODES="plaintext ssl sasl_plaintext sasl_ssl mtls"
readonly SCRAM_MECHANISM=SCRAM-SHA-512
readonly SCRAM_CLIENT_USER=kbench
# Brokers authenticate to each other over the same listener with their own user.
readonly SCRAM_BROKER_USER=kbench-broker
readonly SCRUBBED_SECRET="(deleted by scripts/kafka stop)"

# security_protocol MODE — Kafka's name of the listener's protocol.
security_protocol() {
  case "$1" in
    plaintext) echo PLAINTEXT ;;
    ssl | mtls) echo SSL ;;
    sasl_plaintext) echo SASL_PLAINTEXT ;;
    sasl_ssl) echo SASL_SSL ;;
    *) return 1 ;;
  esac
}

security_uses_tls() { [[ $1 == ssl || $1 == mtls || $1 == sasl_ssl ]]; }
security_uses_sasl() { [[ $1 == sasl_* ]]; }

# One line for messages and status: "sasl_ssl (SASL_SSL, SCRAM-SHA-512)".
security_summary() {
  local mode="$1" what
  what="$(security_protocol "$mode")"
  security_uses_sasl "$mode" && what+=", $SCRAM_MECHANISM"
  [[ $mode == mtls ]] && what+=", client certificates required"
  printf '%s (%s)\n' "$mode" "$what"
}

check_security_mode() {
  security_protocol "$1" >/dev/null ||
    usage_error "--security must be one of: ${SECURITY_MODES// /, }; got '$1'"
  if security_uses_tls "$1"; then
    command -v openssl >/dev/null 2>&1 ||
      die 2 "openssl not found (needed to make the cluster's throwaway certificates); run scripts/setup, or: apt-get install openssl"
  fi
}

# Alphanumeric only: these go inside JAAS quotes and properties files unescaped.
random_secret() {
  local s=""
  while ((${#s} < 32)); do s+="$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"; done
  printf '%s\n' "${s:0:32}"
}

# make_certificates TLS_DIR HOST... — CA, broker and client certificates. The broker's
# names 127.0.0.1 and the nodes' addresses (what they listen on and advertise), nothing
# else: a client that connects as "localhost" fails hostname verification, which is how
# the failure tests provoke it. Passwords reach openssl through the environment, never its
# command line.
make_certificates() {
  local tls="$1" days=7 h names="IP:127.0.0.1"
  shift
  for h in "$@"; do
    [[ $h == 127.0.0.1 || ,$names, == *",IP:$h,"* || ,$names, == *",DNS:$h,"* ]] && continue
    if [[ $h =~ ^[0-9.]+$ || $h == *:* ]]; then names+=",IP:$h"; else names+=",DNS:$h"; fi
  done
  mkdir -p "$tls"
  chmod 700 "$tls"
  (
    umask 077
    cd "$tls"
    export KBENCH_TLS_PASS
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days "$days" \
      -subj "/CN=kbench throwaway CA" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign"
    local who
    for who in broker client; do
      local subject="/CN=kbench $who" san=""
      [[ $who == broker ]] && subject="/CN=127.0.0.1" && san="subjectAltName=$names"
      openssl req -newkey rsa:2048 -nodes -keyout "$who.key.plain" -out "$who.csr" -subj "$subject"
      printf '%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n' "$san" >"$who.ext"
      openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days "$days" \
        -extfile "$who.ext" -out "$who.pem"
      # PKCS#12 for Java (the broker's keystore, the Java tools' client keystore).
      openssl pkcs12 -export -in "$who.pem" -inkey "$who.key.plain" -certfile ca.pem -name "$who" \
        -out "$who.p12" -passout env:KBENCH_TLS_PASS
      rm -f "$who.csr" "$who.ext"
    done
    # librdkafka's client key, encrypted (PKCS#8): ssl.key.password is then a real secret
    # that the redaction and the leak tests have to keep out of every output.
    openssl pkcs8 -topk8 -in client.key.plain -out client.key -passout env:KBENCH_TLS_PASS
    rm -f ./*.key.plain ca.srl
    chmod 644 ca.pem broker.pem client.pem
  ) >"$tls/openssl.log" 2>&1 || die 1 "making the throwaway certificates failed; see $tls/openssl.log:$(tail_log "$tls/openssl.log")"
}

# prepare_security DIR MODE HOST... — writes the files listed above (the broker
# certificate naming every node's HOST) and sets SECURITY_BLOCK (the broker's settings) and
# SCRAM_FORMAT_ARGS (the storage tool's --add-scram arguments).
# Both are read by scripts/kafka.
# shellcheck disable=SC2034
prepare_security() {
  local dir="$1" mode="$2" protocol listener
  protocol="$(security_protocol "$mode")"
  listener="$(tr '[:upper:]' '[:lower:]' <<<"$protocol")"
  SECURITY_BLOCK="" SCRAM_FORMAT_ARGS=()
  rm -rf "$dir/tls" "$dir/client.properties" "$dir/client-java.properties"
  echo "$mode" >"$dir/security"
  local client=("security.protocol=$protocol") java=("security.protocol=$protocol") broker=()
  if security_uses_tls "$mode"; then
    KBENCH_TLS_PASS="$(random_secret)"
    make_certificates "$dir/tls" "${@:3}"
    broker+=("ssl.keystore.type=PKCS12" "ssl.keystore.location=$dir/tls/broker.p12"
      "ssl.keystore.password=$KBENCH_TLS_PASS" "ssl.key.password=$KBENCH_TLS_PASS"
      "ssl.truststore.type=PEM" "ssl.truststore.location=$dir/tls/ca.pem")
    client+=("ssl.ca.location=$dir/tls/ca.pem")
    java+=("ssl.truststore.type=PEM" "ssl.truststore.location=$dir/tls/ca.pem")
    if [[ $mode == mtls ]]; then
      broker+=("ssl.client.auth=required")
      client+=("ssl.certificate.location=$dir/tls/client.pem" "ssl.key.location=$dir/tls/client.key"
        "ssl.key.password=$KBENCH_TLS_PASS")
      java+=("ssl.keystore.type=PKCS12" "ssl.keystore.location=$dir/tls/client.p12"
        "ssl.keystore.password=$KBENCH_TLS_PASS" "ssl.key.password=$KBENCH_TLS_PASS")
    else
      broker+=("ssl.client.auth=none")
    fi
    unset KBENCH_TLS_PASS
  fi
  if security_uses_sasl "$mode"; then
    local client_pw broker_pw module=org.apache.kafka.common.security.scram.ScramLoginModule
    client_pw="$(random_secret)"
    broker_pw="$(random_secret)"
    broker+=("sasl.enabled.mechanisms=$SCRAM_MECHANISM" "sasl.mechanism.inter.broker.protocol=$SCRAM_MECHANISM"
      "listener.name.$listener.${SCRAM_MECHANISM,,}.sasl.jaas.config=$module required username=\"$SCRAM_BROKER_USER\" password=\"$broker_pw\";")
    client+=("sasl.mechanisms=$SCRAM_MECHANISM" "sasl.username=$SCRAM_CLIENT_USER" "sasl.password=$client_pw")
    java+=("sasl.mechanism=$SCRAM_MECHANISM"
      "sasl.jaas.config=$module required username=\"$SCRAM_CLIENT_USER\" password=\"$client_pw\";")
    # KRaft keeps SCRAM credentials in the metadata log: users that exist before the first
    # broker starts (the brokers need theirs to replicate) are written at format time.
    SCRAM_FORMAT_ARGS=(--add-scram "$SCRAM_MECHANISM=[name=$SCRAM_BROKER_USER,password=$broker_pw]"
      --add-scram "$SCRAM_MECHANISM=[name=$SCRAM_CLIENT_USER,password=$client_pw]")
  fi
  local line
  for line in "${broker[@]}"; do SECURITY_BLOCK+="$line"$'\n'; done
  (
    umask 077
    {
      echo "# librdkafka settings of the $(security_summary "$mode") cluster in $dir,"
      echo "# for kbench --client-config. Throwaway secrets; deleted by scripts/kafka stop."
      printf '%s\n' "${client[@]}"
    } >"$dir/client.properties"
    {
      echo "# Java client settings of the same cluster, for Kafka's tools (--command-config ...)."
      printf '%s\n' "${java[@]}"
    } >"$dir/client-java.properties"
  )
}

# forget_secrets DIR — after stop: nothing that could authenticate stays on disk.
forget_secrets() {
  local dir="$1" f
  rm -rf "$dir/tls" "$dir/client.properties" "$dir/client-java.properties"
  for f in "$dir"/node-*/server.properties; do
    [[ -f $f ]] || continue
    sed -i -E "s|^([^#=]*password=).*|\1$SCRUBBED_SECRET|; s|(password=\")[^\"]*\"|\1$SCRUBBED_SECRET\"|g" "$f"
  done
}
