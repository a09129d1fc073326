# SPDX-License-Identifier: GPL-3.0-or-later
# A Slurm cluster on this machine, for the tests of sweeps on a scheduler (sourced; as root):
# munged on a socket of its own, slurmctld in a network namespace with a bridge, and NODES slurmd
# "nodes", each in a network and UTS namespace of its own (its hostname nodeN, its address
# 100.72.0.1N on the bridge), one slurm.conf (SLURM_CONF) listing them. Debian's slurm-wlm 22.05
# and munge. Nothing of the machine's own Slurm or munge (if any) is used or touched.
#   slurm_cluster_create DIR [NODES]   sets SLURM_DIR, SLURM_CONF, SLURM_CTL (the controller's netns)
#   slurm_as USER COMMAND...           a client command (sbatch, squeue) as USER, in the controller's netns
#   slurm_node_kill N                  every process of node N (slurmd, its jobs' and theirs), SIGKILL
#   slurm_cluster_destroy
# Learnt on this machine: slurmd needs a cgroup.conf naming cgroup/v1 (the hybrid hierarchy's
# tmpfs on /sys/fs/cgroup is not recognised); proctrack/linuxproc and task/none need no cgroup
# of the jobs; munged needs every directory of its socket's path searchable by all.

slurm_cluster_create() {  # DIR [NODES]
  SLURM_DIR=$1
  SLURM_NODES=${2:-3}
  SLURM_CTL=mmt-slc$$
  SLURM_CONF=$SLURM_DIR/slurm.conf
  export SLURM_CONF
  mkdir -p "$SLURM_DIR"/{state,spool,munge,run}
  chmod 755 "$SLURM_DIR"
  chown munge:munge "$SLURM_DIR/munge" "$SLURM_DIR/run"
  chmod 700 "$SLURM_DIR/munge"
  chmod 755 "$SLURM_DIR/run"
  head -c 1024 /dev/urandom > "$SLURM_DIR/munge/key"
  chown munge:munge "$SLURM_DIR/munge/key"
  chmod 400 "$SLURM_DIR/munge/key"
  su -s /bin/sh munge -c "munged --socket=$SLURM_DIR/run/sock --key-file=$SLURM_DIR/munge/key \
    --pid-file=$SLURM_DIR/run/munged.pid --log-file=$SLURM_DIR/munge/log --seed-file=$SLURM_DIR/munge/seed" ||
    return 1
  ip netns add "$SLURM_CTL" && ip -n "$SLURM_CTL" link set lo up &&
    ip -n "$SLURM_CTL" link add br0 type bridge && ip -n "$SLURM_CTL" addr add 100.72.0.1/24 dev br0 &&
    ip -n "$SLURM_CTL" link set br0 up || return 1
  local n nodes=""
  for n in $(seq 1 "$SLURM_NODES"); do
    ip netns add "$SLURM_CTL-n$n" && ip -n "$SLURM_CTL-n$n" link set lo up &&
      ip link add "v$n" netns "$SLURM_CTL" type veth peer name eth0 netns "$SLURM_CTL-n$n" &&
      ip -n "$SLURM_CTL" link set "v$n" master br0 && ip -n "$SLURM_CTL" link set "v$n" up &&
      ip -n "$SLURM_CTL-n$n" addr add "100.72.0.1$n/24" dev eth0 && ip -n "$SLURM_CTL-n$n" link set eth0 up &&
      ip -n "$SLURM_CTL-n$n" route add default via 100.72.0.1 || return 1
    mkdir -p "$SLURM_DIR/spool/node$n"
    nodes="${nodes}NodeName=node$n NodeAddr=100.72.0.1$n CPUs=$(nproc) State=UNKNOWN
"
  done
  cat > "$SLURM_CONF" <<CONF
ClusterName=mmtest
SlurmctldHost=ctl(100.72.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/run/sock
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd-%n.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=10
JobRequeue=1
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
${nodes}PartitionName=test Nodes=node[1-$SLURM_NODES] Default=YES MaxTime=INFINITE State=UP
CONF
  printf 'CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n' > "$SLURM_DIR/cgroup.conf"
  ip netns exec "$SLURM_CTL" unshare --uts sh -c "hostname ctl; exec slurmctld -f $SLURM_CONF" || return 1
  for n in $(seq 1 "$SLURM_NODES"); do
    ip netns exec "$SLURM_CTL-n$n" unshare --uts sh -c "hostname node$n; exec slurmd -f $SLURM_CONF -N node$n" || return 1
  done
  slurm_idle() { [ "$(ip netns exec "$SLURM_CTL" sinfo -h -o '%T %D' | awk '$1 == "idle" { n += $2 } END { print n + 0 }')" = "$SLURM_NODES" ]; }
  wait_until 30 slurm_idle || { echo "slurm: the nodes did not come up: $(tail -3 "$SLURM_DIR"/slurmd-*.log)" >&2; return 1; }
}

slurm_as() {  # USER COMMAND...
  local user=$1
  shift
  ip netns exec "$SLURM_CTL" setpriv --reuid="$user" --regid="$user" --init-groups env SLURM_CONF="$SLURM_CONF" "$@"
}

slurm_node_kill() {  # N: node N fails as a machine does: its every process ends at once
  # Its slurmd and what it started, down to the processes of the shells' own namespaces (not in
  # the node's): stopped, and looked for again until no new one appears, then killed.
  local roots stopped="" tree
  roots=$(ip netns pids "$SLURM_CTL-n$1")
  [ -n "$roots" ] || return 0
  while :; do
    tree=$(ps -e -o pid=,ppid= | awk -v roots="$roots" '
      BEGIN { n = split(roots, r, /[ \n]+/); for (i = 1; i <= n; i++) if (r[i] != "") keep[r[i]] = 1 }
      { parent[$1] = $2 }
      END { do { grew = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 } } while (grew)
            for (p in keep) print p }' | sort -n)
    [ "$tree" = "$stopped" ] && break
    kill -STOP $tree 2>/dev/null
    stopped=$tree
  done
  kill -KILL $tree 2>/dev/null
  true
}

slurm_cluster_destroy() {
  local n pidfile
  for pidfile in "$SLURM_DIR"/run/slurmd-*.pid "$SLURM_DIR/run/slurmctld.pid" "$SLURM_DIR/run/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  for n in $(seq 1 "${SLURM_NODES:-0}"); do
    local pids; pids=$(ip netns pids "$SLURM_CTL-n$n" 2>/dev/null)
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null
    ip netns del "$SLURM_CTL-n$n" 2>/dev/null
  done
  ip netns del "$SLURM_CTL" 2>/dev/null
  true
}
