# shellcheck shell=bash
# scripts/lib/jvm_service_lib.sh — the supervisor of kbench's JVM services (scripts/kafka,
# scripts/trogdor): their state directories, Java, classpaths resolved by Maven, and their
# JVMs, each started detached with a pid file and a log, waited for, reported and stopped
# (SIGTERM, then SIGKILL). The service scripts keep what is theirs: configuration, command
# lines, readiness checks and messages.
#
# Sourced after cli_lib.sh (info, die, usage_error), never executed. Reads ROOT, PROG and,
# from the service script: SERVICE (its name in messages: Kafka, Trogdor), STATE_MARKER,
# DIR_ENV, DEFAULT_DIR and its usage function.
# File descriptors: 8 holds a cache's lock, 9 a state directory's.

# tail_log FILE: its last lines, indented, for error messages.
tail_log() {
  [[ -f $1 ]] || return 0
  printf '\n'
  tail -n 15 "$1" | sed 's/^/    /'
}

# ---------------------------------------------------------------- state directories

# svc_dir [DIR]: the state directory, DIR, else $DIR_ENV, else DEFAULT_DIR. Absolute, so
# pid checks against /proc/PID/cmdline compare like with like.
svc_dir() {
  local d="${1:-${!DIR_ENV:-$DEFAULT_DIR}}"
  [[ -n $d ]] || usage_error "empty state directory"
  realpath -m -- "$d"
}

# svc_check_dir DIR: refuse (exit 2) a DIR that is not new, empty or ours (start deletes
# what an earlier start left), or not writable.
svc_check_dir() {
  local dir=$1
  check_out_dir --dir "$dir"
  if [[ -e $dir && ! -f $dir/$STATE_MARKER ]] && [[ -n $(ls -A "$dir" 2>/dev/null) || ! -d $dir ]]; then
    usage_error "$dir is not empty and not a kbench $SERVICE state directory (no $STATE_MARKER); pick a new or empty --dir"
  fi
}

# svc_claim_dir DIR TEXT: make DIR and DIR/logs, and mark DIR as ours.
svc_claim_dir() {
  mkdir -p "$1/logs"
  echo "$2" >"$1/$STATE_MARKER"
}

# svc_lock DIR WAIT: one start or stop at a time per DIR (WAIT 0: do not wait).
svc_lock() {
  local dir=$1 wait=$2
  exec 9>"$dir/.lock"
  if ((wait)); then flock -w "$wait" 9; else flock -n 9; fi ||
    die 1 "another scripts/$PROG start/stop is working on $dir"
}

svc_check_timeout() {
  { is_uint "$1" && (($1 >= 1)); } || usage_error "--timeout must be a positive number of seconds, got '$1'"
}

# svc_opts CMD SPEC... -- "$@": a command's options into the caller's variables. SPEC is
# --NAME=VAR (an option with a value) or --NAME=VAR! (a flag: VAR=1); -h/--help prints the
# usage; anything else is refused as an unknown argument of CMD.
svc_opts() {
  local _cmd=$1 _var
  local -A _opts=()
  shift
  while [[ $1 != -- ]]; do _opts["@${1%%=*}"]=${1#*=}; shift; done
  shift
  while (($#)); do
    [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
    _var=${_opts["@$1"]:-}
    [[ -n $_var ]] || usage_error "$_cmd: unknown argument '$1'"
    if [[ $_var == *! ]]; then
      printf -v "${_var%!}" 1
      shift
    else
      need_value "$@"
      printf -v "$_var" '%s' "$2"
      shift 2
    fi
  done
}

# svc_cmd_stop TIMEOUT STOP "$@": the stop command: --dir, --timeout (default TIMEOUT), then
# STOP DIR TIMEOUT stops the service under DIR's lock.
svc_cmd_stop() {
  local timeout=$1 stop=$2 dir=""
  shift 2
  svc_opts stop --dir=dir --timeout=timeout -- "$@"
  dir="$(svc_dir "$dir")"
  svc_check_timeout "$timeout"
  dry_run_exit
  if [[ ! -f $dir/$STATE_MARKER ]]; then
    info "nothing to stop: $dir is not a kbench $SERVICE state directory"
    return 0
  fi
  svc_lock "$dir" 60
  "$stop" "$dir" "$timeout"
  info "stopped; logs kept in $dir/logs"
}

# ---------------------------------------------------------------- Java

find_java() {
  local java=""
  if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then
    java="$JAVA_HOME/bin/java"
  elif command -v java >/dev/null 2>&1; then
    java="$(command -v java)"
  else
    die 2 "java not found. Run scripts/setup, or: apt-get install openjdk-17-jre-headless (or set JAVA_HOME)"
  fi
  printf '%s\n' "$java"
}

# Major Java version of a java binary (8 for "1.8.0_x", else the first number).
java_major() {
  local line
  line="$("$1" -version 2>&1 | head -n 1)"
  [[ $line =~ \"([0-9]+)(\.([0-9]+))? ]] || { echo 0; return; }
  if [[ ${BASH_REMATCH[1]} == 1 ]]; then echo "${BASH_REMATCH[3]:-0}"; else echo "${BASH_REMATCH[1]}"; fi
}

# svc_check_java JAVA NEED WHAT: exit 2 unless JAVA is Java NEED or newer.
svc_check_java() {
  local java=$1 need=$2 what=$3 have
  have="$(java_major "$java")"
  ((have >= need)) ||
    die 2 "$what needs Java $need or newer, but $java is Java $have; install openjdk-17-jre-headless or set JAVA_HOME"
}

# ---------------------------------------------------------------- classpaths

cache_home() { printf '%s\n' "${KBENCH_CACHE:-${HOME:?HOME is not set; set KBENCH_CACHE}/.cache/kbench}"; }
# One local Maven repository for every service: Kafka's client jars are shared.
maven_repo() { printf '%s/kafka/m2\n' "$(cache_home)"; }

classpath_valid() {
  local file="$1" entry entries=()
  [[ -s $file ]] || return 1
  IFS=: read -ra entries <"$file"
  ((${#entries[@]} > 0)) || return 1
  for entry in "${entries[@]}"; do
    [[ -f $entry ]] || return 1
  done
}

# svc_classpath CACHE WHAT FILL — print the classpath of the jars in CACHE/lib. The first
# time, FILL CACHE puts them in CACHE/lib.new (a Maven run takes minutes; a lock makes a
# second script wait for the first one's instead of starting its own).
svc_classpath() {
  local c=$1 what=$2 fill=$3
  if classpath_valid "$c/classpath"; then
    cat "$c/classpath"
    return 0
  fi
  command -v mvn >/dev/null 2>&1 ||
    die 2 "mvn not found (needed once to fetch the jars of $what). Run scripts/setup, or: apt-get install maven"
  mkdir -p "$c"
  exec 8>"$c/.lock"
  flock -w 900 8 || die 1 "timed out waiting for another resolution of $what ($c/.lock)"
  if ! classpath_valid "$c/classpath"; then # else someone else just finished
    local t0=$SECONDS
    info "resolving $what with Maven into $c (jars not cached yet)"
    "$fill" "$c"
    rm -rf "${c:?}/lib"
    mv "$c/lib.new" "$c/lib"
    find "$c/lib" -maxdepth 1 -name '*.jar' | LC_ALL=C sort | paste -sd: >"$c/classpath.new"
    mv "$c/classpath.new" "$c/classpath"
    info "resolved $what: $(find "$c/lib" -maxdepth 1 -name '*.jar' | wc -l) jars in $((SECONDS - t0)) s"
  fi
  exec 8>&- # release the lock: a caller may exec a JVM that would hold it
  cat "$c/classpath"
}

# svc_write_pom FILE VERSION WHAT GROUP:ARTIFACT:VERSION... — a throwaway pom whose
# runtime dependencies are the service's classpath.
svc_write_pom() {
  local file=$1 version=$2 what=$3 gav g a v
  shift 3
  {
    printf '<?xml version="1.0" encoding="UTF-8"?>\n'
    printf '<!-- Generated by kbench scripts/%s: the runtime classpath of %s. -->\n' "$PROG" "$what"
    printf '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
    printf '  <groupId>kbench.local</groupId>\n  <artifactId>%s-runtime</artifactId>\n' "$PROG"
    printf '  <version>%s</version>\n  <packaging>pom</packaging>\n  <dependencies>\n' "$version"
    for gav; do
      IFS=: read -r g a v <<<"$gav"
      printf '    <dependency>\n      <groupId>%s</groupId>\n      <artifactId>%s</artifactId>\n' "$g" "$a"
      printf '      <version>%s</version>\n    </dependency>\n' "$v"
    done
    printf '  </dependencies>\n</project>\n'
  } >"$file"
}

# Pinned so that resolution behaves the same on every machine.
readonly DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

# svc_mvn CACHE [PROBE] — copy the runtime dependencies of CACHE/pom.xml into CACHE/lib.new;
# offline first when the local repository holds PROBE (a path under it), as it then may
# hold everything. Non-zero on failure: CACHE/mvn.log says why.
svc_mvn() {
  local c=$1 probe=${2:-} repo
  repo="$(maven_repo)"
  local args=(-B -q -f "$c/pom.xml" "-Dmaven.repo.local=$repo"
    "$DEPENDENCY_PLUGIN:copy-dependencies" -DincludeScope=runtime "-DoutputDirectory=$c/lib.new")
  rm -rf "$c/lib.new"
  if [[ -n $probe && -d $repo/$probe ]] && mvn -o "${args[@]}" >"$c/mvn.log" 2>&1; then
    return 0
  fi
  rm -rf "$c/lib.new"
  mvn "${args[@]}" >"$c/mvn.log" 2>&1
}

# render_template IN OUT KEY VALUE... — replace @KEY@ and refuse leftovers.
render_template() {
  local in="$1" out="$2" text
  shift 2
  [[ -f $in ]] || die 1 "template $in is missing"
  text="$(<"$in")"
  while (($#)); do
    text="${text//@$1@/$2}"
    shift 2
  done
  if [[ $text =~ @[A-Z_]+@ ]]; then
    die 1 "template $in has an unfilled placeholder ${BASH_REMATCH[0]}"
  fi
  printf '%s\n' "$text" >"$out"
}

# ---------------------------------------------------------------- processes

# svc_launch PIDFILE LOG LABEL NETNS JAVA ARGS... — start JAVA ARGS detached (in network
# namespace NETNS unless empty), stdout and stderr to LOG, its pid in PIDFILE.
# setsid: the JVM outlives this script and does not get the caller's Ctrl-C. The inner shell
# writes its own pid and then becomes the JVM (exec), so the pid file names the JVM itself.
# The JVM carries its pid file's name as a system property: svc_pid knows it by that, so a
# recycled pid is never taken for it.
svc_launch() {
  local pidfile=$1 log=$2 label=$3 ns=$4 wrap=()
  shift 4
  [[ -n $ns ]] && wrap=(ip netns exec "$ns")
  rm -f "$pidfile"
  # shellcheck disable=SC2016  # $$ and $1 are the inner shell's
  "${wrap[@]}" setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' "kbench-$PROG" "$pidfile" \
    "$1" "-Dkbench.pidfile=$pidfile" "${@:2}" >"$log" 2>&1 </dev/null 7>&- 8>&- 9>&- &
  local waited=0
  while [[ ! -s $pidfile ]] && ((waited < 50)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  [[ -s $pidfile ]] || die 1 "$label did not start; see $log:$(tail_log "$log")"
}

# svc_pid PIDFILE — print the pid if it is alive and is the JVM svc_launch started with this
# pid file. A recycled pid or a zombie fails the check, so stop never signals a stranger.
svc_pid() {
  local pid cmdline
  [[ -f $1 ]] || return 1
  pid="$(<"$1")"
  is_uint "$pid" || return 1
  cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
  [[ $cmdline == *java*" -Dkbench.pidfile=$1 "* ]] ||
    # A JVM started by an older checkout, before the property, runs a file of this folder.
    [[ $cmdline != *" -Dkbench.pidfile="* && $cmdline == *java*" ${1%/*}/"* ]] || return 1
  printf '%s\n' "$pid"
}

# svc_state PIDFILE...: running, stopped or partial; svc_status_exit STATE: what status
# exits with (0 running, 3 stopped, 1 partial).
svc_state() {
  local alive=0 f
  for f; do svc_pid "$f" >/dev/null && alive=$((alive + 1)); done
  if ((alive == 0)); then echo stopped; elif ((alive == $#)); then echo running; else echo partial; fi
}

svc_status_exit() {
  case "$1" in
    running) return 0 ;;
    stopped) return 3 ;;
    *) return 1 ;;
  esac
}

# svc_wait TIMEOUT PERIOD READY DIED LATE PIDFILE... — every PERIOD s until READY succeeds
# (0). When a JVM of the PIDFILEs exits first, DIED PIDFILE explains and 1 is returned;
# after TIMEOUT s, LATE TIMEOUT does.
svc_wait() {
  local timeout=$1 period=$2 ready=$3 died=$4 late=$5 deadline f
  shift 5
  deadline=$((SECONDS + timeout))
  while :; do
    for f; do
      svc_pid "$f" >/dev/null || { "$died" "$f"; return 1; }
    done
    "$ready" && return 0
    ((SECONDS < deadline)) || { "$late" "$timeout"; return 1; }
    sleep "$period"
  done
}

# svc_stop SIGNAL TIMEOUT WHAT PIDFILE... — send SIGNAL to the live JVMs of the PIDFILEs,
# SIGKILL those left after TIMEOUT s, then delete the PIDFILEs. WHAT names them in messages.
# Returns 1, signalling nothing, when none was alive.
svc_stop() {
  local sig=$1 timeout=$2 what=$3 f pid pids=() live=() left
  shift 3
  for f; do
    pid="$(svc_pid "$f")" && pids+=("$pid") && live+=("$f")
  done
  if ((${#pids[@]} == 0)); then
    rm -f "$@"
    return 1
  fi
  info "stopping $what: pid ${pids[*]} (SIG$sig)"
  kill "-$sig" "${pids[@]}" 2>/dev/null || true
  local deadline=$((SECONDS + timeout)) killed=0
  while :; do
    left=()
    for f in "${live[@]}"; do pid="$(svc_pid "$f")" && left+=("$pid"); done
    ((${#left[@]} == 0)) && break
    if ((SECONDS >= deadline && !killed)); then
      info "$what: pid ${left[*]} did not stop within $timeout s; sending SIGKILL"
      kill -KILL "${left[@]}" 2>/dev/null || true
      # SIGKILL cannot be ignored: a few seconds more is only for the kernel to reap them.
      killed=1 deadline=$((SECONDS + 5))
    elif ((SECONDS >= deadline)); then
      break
    fi
    sleep 0.2
  done
  rm -f "$@"
}

# svc_guard CMD ARG... — from now until svc_unguard, any end of this script (an error, a
# timeout, Ctrl-C) runs CMD ARG... first, quietly, so that a start that fails takes down what
# it started.
svc_guard() {
  # shellcheck disable=SC2064  # the arguments are meant to be expanded now
  trap "$(printf '%q ' "$@") >/dev/null 2>&1 || true" EXIT
  trap 'exit 130' INT TERM
}
svc_unguard() { trap - EXIT INT TERM; }

# ---------------------------------------------------------------- network

# svc_port_open HOST PORT: something accepts connections there.
# shellcheck disable=SC2016  # $1 and $2 are the inner shell's
svc_port_open() { timeout 2 bash -c ': >/dev/tcp/$1/$2' _ "$1" "$2" 2>/dev/null; }

# A free base port now, so that scripts and tests never collide on fixed ports (the caller
# still checks every port before it starts anything). Exit 1: none found; 2: no venv.
svc_free_ports() { "$ROOT/scripts/lib/python" -m kbench.jvm_service free-ports "$@"; }

# svc_answers URL...: every URL answers an HTTP GET.
svc_answers() { "$ROOT/scripts/lib/python" -m kbench.jvm_service answers "$@" >/dev/null 2>&1; }
