#!/usr/bin/env bash
# `tessera regress --slurm` on a real single-node Slurm cluster brought up on
# localhost (Debian's slurm-wlm and munge, no systemd): the smoke suite
# through a job array equals a local run (same jobs, same cycles), and so does
# a small what-if sweep (`tessera sweep --slurm`, its results.csv); a cancelled
# array task is reported and `--rerun-failed` completes the set; a refused
# submission and a job that never starts are clear errors. Tears down only
# what it started, by PID.
#
# Usage: slurm_cluster_test.sh TESSERA SOURCE_DIR WORK_DIR
# Exit 77 (CTest: skipped) with the reason when the cluster cannot be run here.
set -uo pipefail
TESSERA=$1
SRC=$2
WORK=$3
SKIP=77

skip() { echo "SKIPPED: $*"; exit $SKIP; }
[[ $(id -u) -eq 0 ]] || skip "bringing up slurmctld, slurmd and munged needs root"
for cmd in slurmctld slurmd munged sbatch squeue scancel scontrol sinfo python3; do
  command -v "$cmd" >/dev/null || skip "'$cmd' is not installed (./scripts/setup installs slurm-wlm and munge)"
done
id munge >/dev/null 2>&1 || skip "no 'munge' user (the munge package creates it)"

rm -rf "$WORK"
mkdir -p "$WORK"
chmod 755 "$WORK"
LOG=$WORK/test.log
started_pids=()
fail() {
  echo "FAILED: $*"
  for f in "$WORK"/slurmctld.log "$WORK"/slurmd.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done
  exit 1
}

munge_pid=""
teardown() {
  # Slurm's daemons stop themselves (and their job steps) on 'scontrol
  # shutdown'; whichever of ours is still alive after 5 s is killed, then munged.
  if ((${#started_pids[@]})); then
    scontrol shutdown >/dev/null 2>&1
    for _ in $(seq 50); do
      alive=0
      for pid in "${started_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      ((alive)) || break
      sleep 0.1
    done
    for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null; done
  fi
  [[ -n $munge_pid ]] && kill "$munge_pid" 2>/dev/null
}
trap teardown EXIT

# A free TCP port: nothing answers on it.
free_port() {
  local p
  for p in "$@"; do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  skip "no free port among $*"
}

# --- munge: a private daemon with its own key and socket --------------------
# munged wants its key private and its socket's folder open to all.
MUNGE=$WORK/munge
mkdir -p "$MUNGE/key"
dd if=/dev/urandom of="$MUNGE/key/munge.key" bs=1 count=1024 status=none
chown -R munge:munge "$MUNGE"
chmod 755 "$MUNGE"
chmod 700 "$MUNGE/key"
chmod 600 "$MUNGE/key/munge.key"
runuser -u munge -- munged --key-file="$MUNGE/key/munge.key" --socket="$MUNGE/munge.socket" \
  --pid-file="$MUNGE/munged.pid" --log-file="$MUNGE/munged.log" --seed-file="$MUNGE/munged.seed" \
  || fail "munged did not start: $(tail -3 "$MUNGE/munged.log" 2>/dev/null)"
for _ in $(seq 50); do [[ -s $MUNGE/munged.pid ]] && break; sleep 0.1; done
munge_pid=$(cat "$MUNGE/munged.pid")

# --- slurm.conf for this node ------------------------------------------------
CTLD_PORT=$(free_port 16817 26817 36817)
SLURMD_PORT=$(free_port 16818 26818 36818)
node_line=$(slurmd -C | head -1)
node=$(sed -E 's/^NodeName=([^ ]+).*/\1/' <<<"$node_line")
mkdir -p "$WORK/state" "$WORK/spool"
cat >"$WORK/slurm.conf" <<EOF
ClusterName=tessera-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE/munge.socket
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
MinJobAge=600
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
PartitionName=held Nodes=$node MaxTime=INFINITE State=DOWN
EOF
export SLURM_CONF=$WORK/slurm.conf

slurmctld || fail "slurmctld did not start"
for _ in $(seq 50); do [[ -s $WORK/slurmctld.pid ]] && break; sleep 0.1; done
started_pids+=("$(cat "$WORK/slurmctld.pid")")
slurmd || fail "slurmd did not start"
for _ in $(seq 50); do [[ -s $WORK/slurmd.pid ]] && break; sleep 0.1; done
started_pids+=("$(cat "$WORK/slurmd.pid")")
for _ in $(seq 300); do
  [[ $(sinfo -h -p debug -o %T 2>/dev/null) == idle ]] && break
  sleep 0.1
done
[[ $(sinfo -h -p debug -o %T) == idle ]] || fail "the node did not become idle: $(sinfo -h -p debug -o '%T %E')"
echo "cluster up in ${SECONDS} s: node $node, slurmctld port $CTLD_PORT"

export TESSERA_CONFIG_DIR=$SRC/configs
SUITE=$SRC/regressions/smoke.yaml

# Same ids, statuses, cycles and simulated time in both result sets.
same_results() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
def load(p):
    return sorted((r["id"], r["status"], r["report"].get("cycles"), r["report"].get("time_ns"))
                  for r in json.load(open(p)))
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    print(f"{len(a)} vs {len(b)} jobs; first differences:", [x for x in zip(a, b) if x[0] != x[1]][:3])
    sys.exit(1)
print(f"{len(a)} jobs identical")
EOF
}

# --- 1. the smoke suite through Slurm equals a local run ----------------------
t=$SECONDS
"$TESSERA" regress "$SUITE" -j 2 --out "$WORK/local" >"$WORK/local.txt" 2>&1 || fail "local run: $(tail -5 "$WORK/local.txt")"
echo "local run: $((SECONDS - t)) s"
t=$SECONDS
"$TESSERA" regress "$SUITE" --slurm --shards 4 --wait --out "$WORK/slurm" >"$WORK/slurm.txt" 2>&1 \
  || { cat "$WORK/slurm.txt"; fail "the suite through Slurm did not pass"; }
grep -q "Slurm job array" "$WORK/slurm.txt" || fail "no submission reported"
same_results "$WORK/local/results.json" "$WORK/slurm/results.json" || fail "merged Slurm results differ from the local run"
[[ -f $WORK/slurm/junit.xml && -f $WORK/slurm/summary.md ]] || fail "junit.xml or summary.md missing"
echo "ok: smoke suite through Slurm (4 shards, --wait) in $((SECONDS - t)) s equals the local run"

# --- 1b. a what-if sweep through Slurm equals a local run ---------------------
cat >"$WORK/hbm-tiny.yaml" <<'EOF'
description: HBM bandwidth on tiny, through Slurm
base: tiny
no_data: true
parameters:
  - name: hbm_gbps
    key: hbm.bandwidth_gbps
    values: [4, 16]
kernels:
  - kernel: gemm
    variants: [naive, blocked_mnk]
    shapes: [{M: 16, N: 64, K: 16}]
EOF
t=$SECONDS
"$TESSERA" sweep "$WORK/hbm-tiny.yaml" -j 2 --no-plots --out "$WORK/sweep-local" >"$WORK/sweep-local.txt" 2>&1 \
  || fail "local sweep: $(tail -5 "$WORK/sweep-local.txt")"
"$TESSERA" sweep "$WORK/hbm-tiny.yaml" --slurm --shards 3 --wait --out "$WORK/sweep-slurm" >"$WORK/sweep-slurm.txt" 2>&1 \
  || { cat "$WORK/sweep-slurm.txt"; fail "the sweep through Slurm did not pass"; }
grep -q "Slurm job array .* (4 points in 3 shards)" "$WORK/sweep-slurm.txt" \
  || { cat "$WORK/sweep-slurm.txt"; fail "no sweep submission reported"; }
[[ $(grep -c '^\[[0-9]/4\] pass ' "$WORK/sweep-slurm.txt") -eq 4 ]] \
  || { cat "$WORK/sweep-slurm.txt"; fail "--wait did not follow the 4 points"; }
# results.csv holds every figure of every point (no wall-clock time): byte-identical.
cmp "$WORK/sweep-local/results.csv" "$WORK/sweep-slurm/results.csv" \
  || { diff "$WORK/sweep-local/results.csv" "$WORK/sweep-slurm/results.csv"; fail "merged sweep results.csv differs from the local run"; }
ls "$WORK"/sweep-slurm/plots/time_vs_hbm_gbps.{png,svg} >/dev/null 2>&1 \
  || { tail -20 "$WORK/sweep-slurm/slurm/merge.log"; fail "the merge job drew no plots"; }
"$TESSERA" sweep --rerun-failed "$WORK/sweep-slurm" --slurm >"$WORK/sweep-rerun.txt" 2>&1 \
  && grep -q "nothing to rerun" "$WORK/sweep-rerun.txt" || { cat "$WORK/sweep-rerun.txt"; fail "a complete sweep was rerun"; }
echo "ok: sweep of 4 points through Slurm (3 shards, --wait, plots by the merge job) in $((SECONDS - t)) s, results.csv equals the local run"

# --- 2. a killed and a cancelled array task, then --rerun-failed -------------
# One task at a time, so the last one is still queued when it is cancelled.
"$TESSERA" regress "$SUITE" --slurm --shards 4 --max-parallel 1 --wait --out "$WORK/killed" >"$WORK/killed.txt" 2>&1 &
follower=$!
array=""
for _ in $(seq 300); do
  array=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("array_id",""))' \
    "$WORK/killed/slurm/plan.json" 2>/dev/null)
  [[ -n $array ]] && break
  sleep 0.1
done
[[ -n $array ]] || fail "no job array submitted: $(cat "$WORK/killed.txt")"
scancel "${array}_4" || fail "scancel ${array}_4"
# Kill a running task as a crash would: its shard runner is frozen (so it
# cannot finish in between), then killed, by PID. A task that finished before
# it could be frozen passes the turn to the next one.
killed=""
for task in 1 2 3; do
  pid=""
  for _ in $(seq 200); do
    [[ -f $WORK/killed/shards/$task/results.json ]] && break
    pid=$(pgrep -f -- "--out $WORK/killed/shards/$task\$" | head -1)
    [[ -n $pid ]] && break
    sleep 0.05
  done
  [[ -n $pid ]] || continue
  kill -STOP "$pid" 2>/dev/null || continue
  if [[ -f $WORK/killed/shards/$task/results.json ]]; then
    kill -CONT "$pid"
    continue
  fi
  kill -KILL "$pid"
  killed=$task
  break
done
[[ -n $killed ]] || fail "no running task could be frozen and killed"
wait $follower
status=$?
cat "$WORK/killed.txt" >>"$LOG"
[[ $status -eq 1 ]] || { cat "$WORK/killed.txt"; fail "a suite with a cancelled task exited $status, not 1"; }
grep -q "shard 4/4 (Slurm task ${array}_4): removed from the queue before it started (cancelled), no results" \
  "$WORK/killed.txt" \
  || { cat "$WORK/killed.txt"; fail "the cancelled shard was not reported by shard and state"; }
grep -q "shard $killed/4 (Slurm task ${array}_$killed): FAILED, no results" "$WORK/killed.txt" \
  || { cat "$WORK/killed.txt"; fail "the killed running shard was not reported by shard and state"; }
missing=$(python3 -c 'import json,sys; print(sum(r["status"]=="missing" for r in json.load(open(sys.argv[1]))))' \
  "$WORK/killed/results.json")
[[ $missing -gt 0 ]] || fail "the merged results do not list shard 4's jobs as missing"
"$TESSERA" regress --rerun-failed "$WORK/killed" --slurm --wait >"$WORK/rerun.txt" 2>&1 \
  || { cat "$WORK/rerun.txt"; fail "--rerun-failed did not complete the set"; }
grep -q "shards $killed, 4 of 4 resubmitted" "$WORK/rerun.txt" \
  || { cat "$WORK/rerun.txt"; fail "rerun did not resubmit only shards $killed and 4"; }
same_results "$WORK/local/results.json" "$WORK/killed/results.json" || fail "after the rerun, results differ from the local run"
echo "ok: running task $killed killed and queued task 4 cancelled, both reported ($missing jobs missing); --rerun-failed completed the set"

# --- 3. clear errors ----------------------------------------------------------
"$TESSERA" regress "$SUITE" --slurm --partition nosuch --out "$WORK/refused" >"$WORK/refused.txt" 2>&1
status=$?
[[ $status -eq 2 ]] && grep -q "sbatch refused the submission" "$WORK/refused.txt" && grep -qi "partition" "$WORK/refused.txt" \
  || { cat "$WORK/refused.txt"; fail "a refused submission (exit $status) was not a clear error"; }
"$TESSERA" regress "$SUITE" --slurm --partition held --wait --start-timeout 2 --out "$WORK/held" >"$WORK/held.txt" 2>&1
status=$?
held=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["array_id"], p["merge_id"])' \
  "$WORK/held/slurm/plan.json" 2>/dev/null)
[[ -n $held ]] && scancel $held
[[ $status -eq 2 ]] && grep -q "has not started after" "$WORK/held.txt" && grep -q "PartitionDown" "$WORK/held.txt" \
  || { cat "$WORK/held.txt"; fail "a job that never starts (exit $status) was not a clear error"; }
echo "ok: refused submission and never-starting job reported"
# Passed: the three smoke-suite runs' job folders (about 400 MB, each job's
# report in several forms) are not needed; a failure above leaves them all.
rm -rf "$WORK/local" "$WORK/slurm" "$WORK/killed"
echo "PASSED in ${SECONDS} s"
