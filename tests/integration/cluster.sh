# SPDX-License-Identifier: GPL-3.0-or-later
# Integration test of sweeps on a real scheduler: a Slurm cluster on this machine
# (tests/tools/slurm-cluster.sh: slurmctld and three slurmd "nodes", each in a network and UTS
# namespace of its own, sharing the results directory), a congestion-control sweep and a page-load
# sweep submitted to it by the ordinary test user with mm-sweep --submit slurm, one node failing
# in the middle (all its processes killed, as a machine that dies), and the merged results
# checked against the same sweeps run on one machine. The nodes share this machine's two cores,
# so the sweeps run one task at a time (--task-limit 1), as they would on machines of their own.

. "$top/tests/tools/slurm-cluster.sh"

# mm-sweep ... --submit slurm as the test user, from the controller's namespace (Slurm's client).
cluster_submit() {  # ARG...
  local home; home=$(sweep_home)
  slurm_as "$TEST_USER" env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" PATH="$BIN:$PATH" "$BIN/mm-sweep" "$@" \
    --submit slurm --task-limit 1
}

# The test user's jobs still in the queue (pending or running), one id per line.
cluster_queue() { slurm_as "$TEST_USER" squeue -h -u "$TEST_USER" -o %i 2>/dev/null; }
cluster_queue_empty() { [ -z "$(cluster_queue)" ]; }

# A process of node N's tree named NAME (the node's slurmd started it), e.g. a task's mm-sweep.
node_runs() {  # N NAME
  local pid
  for pid in $(ip netns pids "$SLURM_CTL-n$1"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && return 0
  done
  return 1
}

test_cluster_sweeps_survive_a_failed_node() {
  sweep_recording || return 1
  local status
  cluster_sweeps
  status=$?
  slurm_cluster_destroy
  # A failed node's shells could not remove their namespace's lock (the node's namespace is gone
  # with it, and a machine that fails starts again with an empty /run).
  [ -z "${CLUSTER_DEAD_LOCK:-}" ] || rm -f "$CLUSTER_DEAD_LOCK"
  return $status
}

cluster_sweeps() {
  local home; home=$(sweep_home)
  local cc_args=(--server 'iperf3 -s -1 -p $MM_SWEEP_PORT'
    --command 'iperf3 -c $MAHIMAHI_BASE -p $MM_SWEEP_PORT -t 3'
    --link "$top/traces/constant-24Mbps" --rates 12 --rtts 40 --cc reno,bbr --runs 2)
  local pl_args=(--recording "$home/rec" --rates 14 --rtts 20,100 --runs 3 --timeout 30)
  slurm_cluster_create "$WORLD_TMP/slurm" 3 || fail "the Slurm cluster did not start" || return 1

  # The congestion-control sweep (4 configurations of 2 runs): node 1 fails while running one.
  cluster_submit "${cc_args[@]}" --out "$home/cl-cc" 2>"$home/cl-cc.err" ||
    fail "mm-sweep --submit: $(cat "$home/cl-cc.err")" || return 1
  grep -q "^mm-sweep: 4 configurations submitted to Slurm as job array [0-9]* (4 tasks)" "$home/cl-cc.err" ||
    fail "submission: $(cat "$home/cl-cc.err")" || return 1
  local array; array=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["array_job"])' \
    "$home/cl-cc/slurm/submitted.json") || return 1
  local victim=""
  find_victim() {  # the task node 1 runs, once its mm-sweep runs the shells (the outermost in its namespace)
    victim=$(slurm_as "$TEST_USER" squeue -h -w node1 -t R -o %i 2>/dev/null | head -1)
    [ -n "$victim" ] && node_runs 1 mm-delay
  }
  wait_until 120 find_victim || fail "no task ran on node1: $(slurm_as "$TEST_USER" squeue 2>&1)" || return 1
  CLUSTER_DEAD_LOCK="/run/mahimahi/netns-$(ip netns exec "$SLURM_CTL-n1" stat -L -c %i /proc/self/ns/net).lock"
  slurm_node_kill 1
  local killed=$SECONDS
  # Slurm finds the node dead (SlurmdTimeout, 10 s here) and requeues its task, then holds the
  # task for a while (its BeginTime, about 2.5 minutes here): started at once instead, as an
  # administrator could, to keep the test short.
  held() { slurm_as "$TEST_USER" squeue -h -j "$victim" -o %r 2>/dev/null | grep -q BeginTime; }
  wait_until 120 held || fail "node1's task was not requeued: $(slurm_as "$TEST_USER" squeue 2>&1)" || return 1
  ip netns exec "$SLURM_CTL" scontrol update JobId="$victim" StartTime=now || return 1
  wait_until 600 cluster_queue_empty || fail "jobs left: $(slurm_as "$TEST_USER" squeue 2>&1)" || return 1
  echo "  node1 failed while running task $victim; the sweep was merged $((SECONDS - killed)) s later"
  # The failed task was requeued: it ran again, on another node.
  local job; job=$(ip netns exec "$SLURM_CTL" scontrol show job "$victim" 2>&1)
  echo "$job" | grep -q "Restarts=1" && ! echo "$job" | grep -q "NodeList=node1$" ||
    fail "the failed node's task: $job" || return 1
  [ -f "$home/cl-cc/summary.csv" ] || fail "no merge: $(cat "$home"/cl-cc/slurm/merge-*.out)" || return 1

  # The page-load sweep (the baseline and 2 configurations of 3 loads, packed into 2 tasks) on the
  # nodes left.
  cluster_submit "${pl_args[@]}" --tasks 2 --out "$home/cl-pl" 2>"$home/cl-pl.err" ||
    fail "mm-sweep --submit: $(cat "$home/cl-pl.err")" || return 1
  local started=$SECONDS
  wait_until 600 cluster_queue_empty || fail "jobs left: $(slurm_as "$TEST_USER" squeue 2>&1)" || return 1
  echo "  the page-load sweep took $((SECONDS - started)) s on the cluster"
  [ -f "$home/cl-pl/summary.csv" ] || fail "no merge: $(cat "$home"/cl-pl/slurm/merge-*.out)" || return 1

  # The same sweeps on one machine (the test world), to compare.
  started=$SECONDS
  sweep_run "${cc_args[@]}" --out "$home/one-cc" 2>"$home/one-cc.err" || fail "$(tail "$home/one-cc.err")" || return 1
  sweep_run "${pl_args[@]}" --jobs 1 --out "$home/one-pl" 2>"$home/one-pl.err" ||
    fail "$(tail "$home/one-pl.err")" || return 1
  echo "  both on one machine: $((SECONDS - started)) s"
  sweep_left_nothing || return 1
  python3 - "$home" "${victim#*_}" <<'PY' || return 1
import csv, statistics, sys
home = sys.argv[1]
def rows(path): return list(csv.DictReader(open(home + "/" + path)))
nodes = {"node1", "node2", "node3"}
# Command sweep: every configuration present, every run stored and ok, where it ran recorded.
cl, one = rows("cl-cc/summary.csv"), rows("one-cc/summary.csv")
assert len(cl) == 4 and all(r["runs"] == "2" and r["stored"] == "2" and r["ok"] == "2" and r["not_ok"] == "" for r in cl), cl
runs = rows("cl-cc/runs.csv")
assert len(runs) == 8 and {r["host"] for r in runs} <= nodes, [r["host"] for r in runs]
# The failed node's configuration (task T runs line T of jobs.txt) finished on another node.
line = open(home + "/cl-cc/slurm/jobs.txt").read().splitlines()[int(sys.argv[2]) - 1]
victim = line.split(" --only ")[1].split()[0]
assert [r["host"] for r in runs if r["configuration"] == victim][-1] != "node1", (victim, runs)
assert all(r["kernel"] and r["cpu"] and r["cpus"] and r["mahimahi"] for r in runs), runs
# The same medians as on one machine, within its runs' spread: throughput within 10 % (the link
# caps it), the cluster's median p95 one-way delay within the one machine's runs' range widened
# by 10 %.
one_runs = rows("one-cc/runs.csv")
for c in cl:
    o = [r for r in one if r["configuration"] == c["configuration"]][0]
    a, b = float(c["throughput_mbps"]), float(o["throughput_mbps"])
    assert abs(a - b) <= 0.1 * b, (c["configuration"], a, b)
    p95 = [float(r["delay_p95_ms"]) for r in one_runs if r["configuration"] == c["configuration"]]
    assert min(p95) * 0.9 <= float(c["delay_p95_ms"]) <= max(p95) * 1.1, (c["configuration"], c["delay_p95_ms"], p95)
    print("  %s: cluster %.2f Mbit/s, p95 %.0f ms (%s); one machine %.2f Mbit/s, p95 %.0f ms" % (
        c["configuration"], a, float(c["delay_p95_ms"]), c["hosts"] + " hosts", b, float(o["delay_p95_ms"])))
# Page-load sweep: every configuration, every load ok, the hosts, the same medians.
cl, one = rows("cl-pl/summary.csv"), rows("one-pl/summary.csv")
assert len(cl) == 3, cl
for c in cl:
    assert c["loads_ok"] == c["loads_total"] == c["loads_asked"] == "3", c
loads = rows("cl-pl/loads.csv")
assert len(loads) == 9 and {r["host"] for r in loads} <= nodes - {"node1"}, [r["host"] for r in loads]
# The cluster's median page-load time as the one machine's: apart by at most the spread of the
# one machine's loads, or 15 % (the browser's own part of a load follows the machine's load at
# that moment: a compile beside one sweep and not the other moves it that much), where the
# network sets it; the unemulated baseline's is the browser's time alone (both are shown).
plts = {}
for r in rows("one-pl/loads.csv"): plts.setdefault(r["configuration"], []).append(float(r["plt_ms"]))
for c in cl:
    o = [r for r in one if r["configuration"] == c["configuration"]][0]
    a, b, spread = float(c["plt_median_ms"]), float(o["plt_median_ms"]), plts[c["configuration"]]
    if c["rate_mbps"]:
        assert abs(a - b) <= max(max(spread) - min(spread), 0.15 * b), (c["configuration"], a, b, spread)
    print("  %s: cluster median PLT %.0f ms, one machine %.0f ms (its loads %.0f-%.0f)" % (
        c["configuration"], a, b, min(spread), max(spread)))
PY
}
