#!/usr/bin/env bash
# A throw-away two-node Slurm on this one machine, for the Slurm tests (Debian's slurm-wlm 22.05
# and munge; see ../shared/reference/slurm.md for what was seen working).
#
#   bash .ci/slurm_cluster.sh install     Debian packages slurmctld slurmd slurm-client munge,
#                                         only when slurmctld is not on PATH. Never fails the
#                                         caller: when it cannot install it prints one line and
#                                         exits 0 (the Slurm tests then skip with the reason).
#   bash .ci/slurm_cluster.sh start DIR   munged, slurmctld and two slurmd (nodes n1, n2, both at
#                                         127.0.0.1, partition debug) with every key, socket,
#                                         state, spool, pid and log file under DIR; waits until
#                                         both nodes are idle, writes DIR/env and prints its one
#                                         line: `export SLURM_CONF=DIR/slurm.conf`. On failure:
#                                         one line why on stderr, everything it started is
#                                         stopped, exit 1.
#   bash .ci/slurm_cluster.sh stop DIR    cancels the cluster's jobs, then stops its daemons by
#                                         the pids recorded in DIR/pids (TERM, up to 5 s, KILL).
#                                         Idempotent; always exits 0.
#
# - Ports: slurmctld and the two slurmd get ports picked at random in 20000-32767 (below the
#   kernel's ephemeral range) that no TCP socket uses, under a lock file shared by every
#   cluster this script starts, held until the daemons listen: two clusters on one machine
#   (a developer's and CI's) never collide.
# - Node names n1, n2 do not resolve: reach nodes by their NodeAddr (127.0.0.1).
# - Scheduling is tuned for tests (batch_sched_delay=0, main loop every 2 s, backfill every
#   1 s): seen, the backfill pass starts a job 0.5-1 s after sbatch. KillWait=5 (SIGTERM to
#   SIGKILL at a time limit or scancel), OverTimeLimit=0, finished jobs stay in
#   `scontrol show job` for MinJobAge=600 s.
#   No accounting: `sacct` does not work, use squeue / scontrol show job.
# - The daemons run as root (SlurmUser=root) in sessions of their own (setsid). A stop also
#   kills what a job leaves behind when its slurmd dies first: slurmstepd processes holding a
#   log under DIR open, and processes with SLURM_CONF=DIR/slurm.conf and a SLURM_JOB_ID.
set -euo pipefail

PROG="slurm_cluster"
PORT_MIN=20000
PORT_MAX=32767
PORT_LOCK=/tmp/torchscale-slurm-ports.lock  # fixed: shared whatever TMPDIR says
START_TIMEOUT_S=30
# cluster daemons and what they need on PATH
COMMANDS=(slurmctld slurmd munged munge unmunge mungekey sinfo squeue scontrol scancel)

say() { echo "$PROG: $*"; }
warn() { echo "$PROG: $*" >&2; }

usage() {
    echo "usage: bash $0 install | start DIR | stop DIR" >&2
    exit 2
}

# --- install --------------------------------------------------------------------------------

cmd_install() {
    if command -v slurmctld >/dev/null 2>&1; then
        say "slurmctld present: $(slurmctld -V 2>/dev/null || echo '?')"
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        say "Slurm not installed: no apt-get (the Slurm tests will skip)"
        return 0
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            say "Slurm not installed: not root and no sudo (the Slurm tests will skip)"
            return 0
        fi
    fi
    local start=$SECONDS log why
    log="$(mktemp "${TMPDIR:-/tmp}/torchscale-slurm-apt.XXXXXX")"
    if ! "${sudo[@]}" timeout 300 apt-get update -qq >"$log" 2>&1; then
        why="$(grep -m1 -E '^(W|E|Err):' "$log" || tail -n1 "$log")"
        rm -f "$log"
        say "Slurm not installed: apt-get update failed: $why (the Slurm tests will skip)"
        return 0
    fi
    if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" timeout 600 apt-get install -y -qq \
            --no-install-recommends slurmctld slurmd slurm-client munge >"$log" 2>&1; then
        why="$(grep -m1 -E '^(E|Err):' "$log" || tail -n1 "$log")"
        rm -f "$log"
        say "Slurm not installed: apt-get install failed: $why (the Slurm tests will skip)"
        return 0
    fi
    rm -f "$log"
    if ! command -v slurmctld >/dev/null 2>&1; then
        say "Slurm not installed: slurmctld still not on PATH after apt-get (the Slurm tests will skip)"
        return 0
    fi
    say "installed $(slurmctld -V 2>/dev/null || echo slurm) and munge in $((SECONDS - start)) s"
}

# --- processes and ports ----------------------------------------------------------------------

# a pid recorded for DIR is ours while it lives (not a zombie) and its command line names DIR:
# a pid reused by some other process is never signalled
is_ours() {
    local pid="$1" dir="$2" state cmdline
    [ -r "/proc/$pid/stat" ] || return 1
    state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null)" || return 1
    [ "$state" != Z ] || return 1
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
    [[ "$cmdline" == *"$dir"* ]]
}

# processes a job of DIR's cluster left behind when its slurmd went first: slurmstepd (its
# environment is empty, but it keeps DIR/log/slurmd-NODE.log open) and the job's own processes
# (slurmstepd gives them SLURM_CONF=DIR/slurm.conf and SLURM_JOB_ID). One pid a line.
leftovers_of() {
    local dir="$1" proc comm fd environ
    for proc in /proc/[0-9]*; do
        [ "${proc#/proc/}" != "$$" ] || continue
        comm="$(cat "$proc/comm" 2>/dev/null)" || continue
        if [ "$comm" = slurmstepd ]; then
            for fd in "$proc"/fd/*; do
                if [[ "$(readlink "$fd" 2>/dev/null)" == "$dir/"* ]]; then
                    echo "${proc#/proc/}"
                    break
                fi
            done
            continue
        fi
        environ="$({ tr '\0' '\n' <"$proc/environ"; } 2>/dev/null)" || continue
        if grep -qxF "SLURM_CONF=$dir/slurm.conf" <<<"$environ" \
                && grep -q '^SLURM_JOB_ID=' <<<"$environ"; then
            echo "${proc#/proc/}"
        fi
    done
}

# every local TCP port some socket uses (any state), IPv4 and IPv6
ports_in_use() {
    local hex
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
        | awk '$2 ~ /:[0-9A-Fa-f]+$/ { n = split($2, a, ":"); print a[n] }' \
        | while read -r hex; do echo "$((16#$hex))"; done
}

port_listening() {
    local hex
    hex="$(printf '%04X' "$1")"
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
        | awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
                            END { exit !found }'
}

# N distinct free ports in PORT_MIN..PORT_MAX, one a line
pick_ports() {
    local want="$1" used picked=() port tries=0
    used=" $(ports_in_use | tr '\n' ' ') "
    while [ "${#picked[@]}" -lt "$want" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 1000 ] || return 1
        port=$((PORT_MIN + (RANDOM * 32768 + RANDOM) % (PORT_MAX - PORT_MIN + 1)))
        [[ "$used" == *" $port "* ]] && continue
        used="$used$port "
        picked+=("$port")
    done
    printf '%s\n' "${picked[@]}"
}

# --- stop -----------------------------------------------------------------------------------

# stop everything recorded in DIR/pids; quiet, always succeeds
stop_dir() {
    local dir="$1" pid pids=() waited
    [ -f "$dir/pids" ] || return 0
    # cancel the jobs first, while slurmctld can still tell slurmd to end them (SIGTERM, then
    # SIGKILL after KillWait): a slurmd killed under a running job leaves its slurmstepd behind
    if [ -f "$dir/slurm.conf" ] && is_ours "$(awk '$1 == "slurmctld" { print $2 }' "$dir/pids")" "$dir"; then
        local jobs
        jobs="$(SLURM_CONF="$dir/slurm.conf" timeout 10 squeue -h -o '%i' 2>/dev/null || true)"
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086  # one job id a word
            SLURM_CONF="$dir/slurm.conf" timeout 10 scancel $jobs >/dev/null 2>&1 || true
            for _ in $(seq 1 40); do
                jobs="$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o '%i' 2>/dev/null || true)"
                [ -z "$jobs" ] && break
                sleep 0.25
            done
        fi
    fi
    # slurmd first, then slurmctld, munged last (reverse order of start)
    while read -r _ pid; do
        [ -n "${pid:-}" ] || continue
        if is_ours "$pid" "$dir"; then
            pids=("$pid" "${pids[@]}")
        fi
    done <"$dir/pids"
    if [ "${#pids[@]}" -gt 0 ]; then
        kill -TERM "${pids[@]}" 2>/dev/null || true
        waited=0
        while [ "$waited" -lt 50 ]; do
            local left=0
            for pid in "${pids[@]}"; do
                is_ours "$pid" "$dir" && left=1
            done
            [ "$left" -eq 0 ] && break
            sleep 0.1
            waited=$((waited + 1))
        done
        for pid in "${pids[@]}"; do
            is_ours "$pid" "$dir" && kill -KILL "$pid" 2>/dev/null
        done
    fi
    # what a job left when its slurmd went first (a crashed slurmd, or scancel timed out)
    local leftovers
    for _ in 1 2 3; do
        leftovers="$(leftovers_of "$dir")"
        [ -n "$leftovers" ] || break
        # shellcheck disable=SC2086  # one pid a word
        kill -KILL $leftovers 2>/dev/null || true
        sleep 0.1
    done
    return 0
}

cmd_stop() {
    local dir="${1:-}"
    [ -n "$dir" ] || usage
    if [ -d "$dir" ]; then
        dir="$(cd "$dir" && pwd -P)"
        stop_dir "$dir"
        say "stopped the cluster in $dir"
    fi
    return 0
}

# --- start ----------------------------------------------------------------------------------

START_DIR=""
LOCK_FD=""

fail() {
    warn "$*"
    if [ -n "$LOCK_FD" ]; then
        exec {LOCK_FD}>&-
    fi
    [ -z "$START_DIR" ] || stop_dir "$START_DIR"
    exit 1
}

# one line from a daemon's logs for a one-line reason: the last fatal line of its log file or
# of its stdout/stderr (.out next to it), else the last line of the .out, else of the log
log_tail() {
    local log="$1" out="${1%.log}.out" line
    line="$(cat "$log" "$out" 2>/dev/null | grep -i 'fatal' | tail -n1)" || true
    [ -n "$line" ] || line="$(grep -v -E '^\s*$' "$out" 2>/dev/null | tail -n1)" || true
    [ -n "$line" ] || line="$(grep -v -E '^\s*$' "$log" 2>/dev/null | tail -n1)" || true
    echo "$line" | cut -c1-300
}

# start a daemon in a session of its own, detached from our stdio; record NAME PID
launch() {
    local name="$1" log="$2"
    shift 2
    # the port lock must not be inherited: a daemon holding it would block every later start
    if [ -n "$LOCK_FD" ]; then
        setsid "$@" </dev/null >>"$log" 2>&1 {LOCK_FD}>&- &
    else
        setsid "$@" </dev/null >>"$log" 2>&1 &
    fi
    echo "$name $!" >>"$START_DIR/pids"
    echo "$!"
}

alive_or_fail() {
    local name="$1" pid="$2" log="$3"
    is_ours "$pid" "$START_DIR" || fail "$name exited at start: $(log_tail "$log") (log: $log)"
}

write_conf() {
    local dir="$1" host="$2" ctld_port="$3" port1="$4" port2="$5" mem_mb="$6"
    cat >"$dir/slurm.conf" <<EOF
# written by .ci/slurm_cluster.sh: a throw-away two-node test cluster on one machine
ClusterName=torchscale
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=1
ReturnToService=2
MailProg=/bin/true
KillWait=5
OverTimeLimit=0
MinJobAge=600
# nodes that report fewer CPUs than configured (a 1-core machine) are not made INVALID
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$port1 CPUs=2 RealMemory=$mem_mb State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$port2 CPUs=2 RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
}

cmd_start() {
    local dir="${1:-}" cmd missing=()
    [ -n "$dir" ] || usage
    for cmd in "${COMMANDS[@]}"; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    [ "${#missing[@]}" -eq 0 ] \
        || fail "not on PATH: ${missing[*]} (bash .ci/slurm_cluster.sh install)"
    command -v setsid >/dev/null 2>&1 || fail "setsid not on PATH (util-linux)"
    command -v flock >/dev/null 2>&1 || fail "flock not on PATH (util-linux)"
    mkdir -p "$dir" || fail "cannot create $dir"
    dir="$(cd "$dir" && pwd -P)"
    # slurm.conf has no quoting and DIR/env is sourced by bash: keep the path plain
    [[ "$dir" =~ ^[A-Za-z0-9._/+@-]+$ ]] \
        || fail "DIR must be a plain path (letters, digits, . _ / + @ -): $dir"
    [ "${#dir}" -le 80 ] || fail "DIR is too long for a unix socket path (${#dir} > 80): $dir"
    if [ -f "$dir/pids" ]; then
        local name pid
        while read -r name pid; do
            if [ -n "${pid:-}" ] && is_ours "$pid" "$dir"; then
                fail "a cluster is already running in $dir ($name pid $pid): stop it first"
            fi
        done <"$dir/pids"
    fi
    START_DIR="$dir"
    : >"$dir/pids"
    rm -f "$dir/env"
    mkdir -p "$dir/log" "$dir/state" "$dir/spool/n1" "$dir/spool/n2" "$dir/run" "$dir/munge" \
        || fail "cannot create the cluster's directories under $dir"
    chmod 700 "$dir/munge" "$dir/state"

    local host mem_kb mem_mb
    host="$(hostname -s)" || fail "hostname -s failed"
    mem_kb="$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)"
    mem_mb=$((mem_kb / 1024 / 2))
    [ "$mem_mb" -gt 0 ] || fail "cannot read MemTotal from /proc/meminfo"

    # munge: a fresh key and a private munged
    local sock="$dir/munge/munge.socket" pid_munged
    rm -f "$dir/munge/munge.key"
    mungekey -c -k "$dir/munge/munge.key" >>"$dir/log/mungekey.log" 2>&1 \
        || fail "mungekey -c failed: $(log_tail "$dir/log/mungekey.log")"
    pid_munged="$(launch munged "$dir/log/munged.out" munged -F --force -S "$sock" \
        --key-file="$dir/munge/munge.key" --log-file="$dir/log/munged.log" \
        --pid-file="$dir/run/munged.pid" --seed-file="$dir/munge/munge.seed")"
    local ok=0
    for _ in $(seq 1 50); do
        if munge -S "$sock" -n 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then
            ok=1
            break
        fi
        alive_or_fail munged "$pid_munged" "$dir/log/munged.log"
        sleep 0.1
    done
    [ "$ok" -eq 1 ] || fail "munged did not answer within 5 s: $(log_tail "$dir/log/munged.log")"

    # ports: picked and bound under one lock shared by every cluster on this machine
    exec {LOCK_FD}>>"$PORT_LOCK" || fail "cannot open the port lock $PORT_LOCK"
    flock -w 60 "$LOCK_FD" || fail "could not take the port lock $PORT_LOCK within 60 s"
    local ports ctld_port port1 port2
    ports="$(pick_ports 3)" || fail "no free TCP ports in $PORT_MIN-$PORT_MAX"
    { read -r ctld_port; read -r port1; read -r port2; } <<<"$ports"
    write_conf "$dir" "$host" "$ctld_port" "$port1" "$port2" "$mem_mb"

    local conf="$dir/slurm.conf" pid_ctld pid_n1 pid_n2
    pid_ctld="$(launch slurmctld "$dir/log/slurmctld.out" slurmctld -D -c -f "$conf")"
    pid_n1="$(launch slurmd "$dir/log/slurmd-n1.out" slurmd -D -N n1 -f "$conf")"
    pid_n2="$(launch slurmd "$dir/log/slurmd-n2.out" slurmd -D -N n2 -f "$conf")"
    local deadline=$((SECONDS + 15)) port
    for port in "$ctld_port" "$port1" "$port2"; do
        while ! port_listening "$port"; do
            alive_or_fail slurmctld "$pid_ctld" "$dir/log/slurmctld.log"
            alive_or_fail "slurmd n1" "$pid_n1" "$dir/log/slurmd-n1.log"
            alive_or_fail "slurmd n2" "$pid_n2" "$dir/log/slurmd-n2.log"
            [ "$SECONDS" -lt "$deadline" ] || fail "nothing listens on port $port after 15 s (logs: $dir/log)"
            sleep 0.1
        done
    done
    exec {LOCK_FD}>&-
    LOCK_FD=""

    # both nodes registered and idle
    local state=""
    deadline=$((SECONDS + START_TIMEOUT_S))
    while :; do
        state="$(SLURM_CONF="$conf" timeout 10 sinfo -h -o '%T %D' 2>/dev/null | tr '\n' ' ')" || true
        [ "${state% }" = "idle 2" ] && break
        alive_or_fail slurmctld "$pid_ctld" "$dir/log/slurmctld.log"
        alive_or_fail "slurmd n1" "$pid_n1" "$dir/log/slurmd-n1.log"
        alive_or_fail "slurmd n2" "$pid_n2" "$dir/log/slurmd-n2.log"
        [ "$SECONDS" -lt "$deadline" ] \
            || fail "nodes not idle after ${START_TIMEOUT_S} s (sinfo: '${state% }'; logs: $dir/log)"
        sleep 0.2
    done
    echo "export SLURM_CONF=$conf" >"$dir/env"
    echo "export SLURM_CONF=$conf"
}

case "${1:-}" in
    install) cmd_install ;;
    start) [ "$#" -eq 2 ] || usage; cmd_start "$2" ;;
    stop) [ "$#" -eq 2 ] || usage; cmd_stop "$2" ;;
    *) usage ;;
esac
