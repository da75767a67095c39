# shellcheck shell=bash
# Helpers shared by scripts/stack and scripts/tools. Sourced, never run.

log()  { printf '[%s] %s\n' "${LOG_TAG:-duetime}" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "${LOG_TAG:-duetime}" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "${LOG_TAG:-duetime}" "$*" >&2; exit 1; }

# now_ms: wall clock in milliseconds (for timings only).
now_ms() { date +%s%3N; }

# port_open HOST PORT: true when something accepts a TCP connection there.
port_open() {
  # shellcheck disable=SC2016  # expanded by the inner bash
  timeout 1 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# pid_alive PID: the process exists and is not a zombie.
pid_alive() {
  local pid=$1 state
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/stat ]] || return 1
  # field 3 of /proc/PID/stat is the state; the command name (field 2) may hold spaces
  state=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}

# pid_cmdline PID: the process' command line, NULs turned to spaces.
pid_cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }

# pid_matches PID NEEDLE: PID is alive and NEEDLE occurs in its command line
# (guards against a recycled PID being taken for one of our servers).
pid_matches() {
  pid_alive "$1" || return 1
  [[ $(pid_cmdline "$1") == *"$2"* ]]
}

# read_pid FILE: print the first line of a pid file if it holds a number.
read_pid() {
  local pid=""
  if [[ -f $1 ]]; then read -r pid <"$1" 2>/dev/null || true; fi
  [[ $pid =~ ^[0-9]+$ ]] && printf '%s\n' "$pid"
  return 0
}

# wait_until SECONDS DESCRIPTION CMD...: poll CMD every 0.2 s until it succeeds;
# false after the deadline.
wait_until() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  while ! "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      warn "timed out after ${secs}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

# show_log_tail FILE [LINES]: print the end of a log to stderr, for error reports.
show_log_tail() {
  local file=$1 n=${2:-40}
  if [[ -r $file ]]; then
    printf -- '----- last %s lines of %s -----\n' "$n" "$file" >&2
    tail -n "$n" "$file" >&2 || true
    printf -- '----- end of %s -----\n' "$file" >&2
  else
    printf -- '(no log at %s)\n' "$file" >&2
  fi
}

# sha256_of FILE...: one hash over the files' contents.
sha256_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# apt_install PKG...: install Debian packages non-interactively; apt-get update once
# per run, and only when something is to be installed.
APT_UPDATED=0
apt_install() {
  (($# > 0)) || return 0
  command -v apt-get >/dev/null || die "apt-get not found; install by hand: $*"
  [[ $(id -u) -eq 0 ]] || die "need root to install: $* (run as root, or install them first)"
  export DEBIAN_FRONTEND=noninteractive
  if ((APT_UPDATED == 0)); then
    log "apt-get update"
    apt-get update -qq </dev/null >&2 || die "apt-get update failed"
    APT_UPDATED=1
  fi
  log "apt-get install -y $*"
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "$@" </dev/null >&2 || die "apt-get install $* failed"
}

# spawn_detached PIDFILE LOGFILE CMD...: start CMD in a new session (so it outlives the
# calling shell and its process group), stdin from /dev/null, stdout+stderr appended to
# LOGFILE, fd 9 (our lock) closed. The process writes its own PID to PIDFILE before exec.
spawn_detached() {
  local pidfile=$1 logfile=$2; shift 2
  rm -f "$pidfile"
  printf '===== %s starting: %s\n' "$(date -Is)" "$*" >>"$logfile"
  # shellcheck disable=SC2016  # expanded by the inner bash
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" "$@" \
    </dev/null >>"$logfile" 2>&1 9>&- &
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s $pidfile ]] && return 0
    sleep 0.1
  done
  die "could not start ${1:-process} (no pid file $pidfile)"
}

# stop_pid NAME PID DEADLINE: SIGTERM, wait up to DEADLINE seconds, then SIGKILL.
stop_pid() {
  local name=$1 pid=$2 secs=$3
  log "$name: stopping pid $pid (SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + secs))
  while pid_alive "$pid"; do
    if ((SECONDS >= deadline)); then
      warn "$name: pid $pid still alive after ${secs}s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      pid_alive "$pid" && die "$name: pid $pid survived SIGKILL"
      break
    fi
    sleep 0.2
  done
}

# rotate_log FILE: keep one previous copy once a log passes 50 MB.
rotate_log() {
  local f=$1
  if [[ -f $f ]] && (($(stat -c %s "$f") > 50 * 1024 * 1024)); then
    mv -f "$f" "$f.1"
  fi
}
