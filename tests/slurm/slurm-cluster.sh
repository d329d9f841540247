#!/usr/bin/env bash
# A one-node Slurm cluster in a scratch directory, for tests/slurm: munged,
# slurmctld and slurmd from Debian's packages, each with its key, socket,
# ports, state, spool and logs under the directory, and a plugstack.conf that
# loads the given SPANK plugin.
#
#   slurm-cluster.sh start DIR PLUGIN [PLUGIN ARGS...]
#       starts the daemons; exits 0 once `sinfo` shows the node idle. Exits 77
#       with one line saying why when a daemon cannot start here (not root, a
#       program missing), 1 on any other failure (the logs are printed).
#       Clients then need SLURM_CONF=DIR/slurm.conf.
#   slurm-cluster.sh stop DIR
#       stops every daemon started in DIR and the jobs' processes; idempotent.
# If the process that ran `start` dies before `stop`, a watchdog stops the
# daemons and removes DIR.
set -uo pipefail

cmd=${1:-}
dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || { echo "usage: $0 start|stop DIR [PLUGIN ARGS...]" >&2; exit 2; }

# The pid in pid file $1, if that process is alive.
live_pid() {
  local pid
  [[ -s "$1" ]] || return 1
  pid=$(cat "$1")
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

if [[ "$cmd" == stop ]]; then
  export PATH=$PATH:/usr/sbin SLURM_CONF=$dir/slurm.conf
  # The jobs first (a test that failed half-way may leave one running):
  # slurmd leaves running steps alone when it stops.
  if live_pid "$dir/slurmctld.pid" >/dev/null && [[ -f "$dir/slurm.conf" ]]; then
    scancel --quiet --user="$(id -u)" 2>/dev/null
    for _ in $(seq 100); do
      [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break
      sleep 0.1
    done
  fi
  # Then the daemons, all at once; what has not ended in 5 s is killed.
  pids=()
  for name in slurmd slurmctld munged; do
    pid=$(live_pid "$dir/$name.pid") && pids+=("$pid")
  done
  ((${#pids[@]} == 0)) && exit 0
  kill -TERM "${pids[@]}" 2>/dev/null
  for _ in $(seq 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || exit 0
    sleep 0.05
  done
  kill -KILL "${pids[@]}" 2>/dev/null
  exit 0
fi

[[ "$cmd" == start ]] || { echo "usage: $0 start|stop DIR [PLUGIN ARGS...]" >&2; exit 2; }
plugin=${3:-}
shift 3 || true
skip() { echo "slurm-cluster: $*"; exit 77; }

[[ $(id -u) -eq 0 ]] || skip "not root: slurmd must run as root to start jobs as their user"
for prog in munged mungekey slurmctld slurmd sinfo srun; do
  command -v "$prog" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$prog" >/dev/null 2>&1 ||
    skip "$prog not found (Debian: apt-get install munge slurm-wlm)"
done
export PATH=$PATH:/usr/sbin
[[ -n "$plugin" && -f "$plugin" ]] || { echo "slurm-cluster: plugin '$plugin' not found" >&2; exit 1; }

mkdir -p "$dir"/{munge,state,spool,log} || exit 1
# A watchdog stops the daemons and removes DIR if the process that started
# this script (the test) dies without calling `stop`: a test killed at its
# time limit leaves nothing running. It ends by itself once DIR is gone.
owner=$PPID
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
setsid bash -c 'while [[ -d "$2" ]] && kill -0 "$3" 2>/dev/null; do sleep 1; done
  if [[ -d "$2" ]]; then bash "$1" stop "$2"; rm -rf "$2"; fi' \
  watchdog "$self" "$dir" "$owner" </dev/null >/dev/null 2>&1 &
chmod 0700 "$dir/munge"
mungekey -c -k "$dir/munge/munge.key" >/dev/null 2>&1 || skip "mungekey cannot create a key"
munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
  >"$dir/log/munged.out" 2>&1 || skip "munged cannot start: $(tail -1 "$dir/log/munged.out")"

# Two free TCP ports of our own (the kernel picks them).
read -r ctld_port slurmd_port < <(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
PY
)
# Job ids of its own too: a job's segment is named after its id, and two
# clusters on one machine must not name the same segments.
first_job_id=$(( (RANDOM * 32768 + RANDOM) % 60000000 + 1000000 ))
node=$(hostname -s)
node_line=$(slurmd -C 2>/dev/null | head -1)
[[ "$node_line" == NodeName=* ]] || skip "slurmd -C cannot read this node's hardware"
# The node as slurmd sees it, with memory left out (it is not requested).
node_line=$(sed -E 's/ RealMemory=[0-9]+//' <<<"$node_line")

cat >"$dir/slurm.conf" <<CONF
ClusterName=coexectest
FirstJobId=$first_job_id
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
KillWait=5
InactiveLimit=0
MinJobAge=300
PlugStackConfig=$dir/plugstack.conf
$node_line State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
echo "required $plugin $*" >"$dir/plugstack.conf"
export SLURM_CONF=$dir/slurm.conf

slurmctld -c -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 || {
  cat "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" 2>/dev/null; exit 1; }
slurmd -f "$dir/slurm.conf" >"$dir/log/slurmd.out" 2>&1 || {
  cat "$dir/log/slurmd.out" "$dir/log/slurmd.log" 2>/dev/null; exit 1; }

for _ in $(seq 150); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null)
  [[ "$state" == idle ]] && exit 0
  sleep 0.2
done
echo "slurm-cluster: the node did not become idle (state '$state')" >&2
tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
exit 1
