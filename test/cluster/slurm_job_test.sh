#!/usr/bin/env bash
# usage: slurm_job_test.sh BIN_DIR SOURCE_DIR
# A real Slurm cluster (slurmctld + one slurmd per host, launch/cluster/netns_cluster.sh --slurm)
# on two network-namespace hosts. Submits the job scripts users submit:
#   1. launch/slurm/partition.sbatch, then train_cpu.sbatch with --dependency=afterok on it
#      (srun launch): the per-job folder holds job.json, train.log and metrics equal to the
#      shared-memory run of the same training;
#   2. the same training script with --launcher mpirun (mpirun inside the allocation), reusing the
#      partition: same metrics; then requeued (scontrol requeue): the rerun keeps the first
#      attempt's files in attempt-0/ and writes equal metrics again; a job requeued while it
#      trains resumes from its newest checkpoint and ends with the metrics of an uninterrupted
#      run; the same script inside salloc;
#   3. a training job whose partition step fails: the job fails, and the dependent job never runs;
#   4. train_gpu.sbatch, partitioning the dataset as a step of the job, on placeholder GPUs (netns_cluster.sh --gpus: a GRES without GPUs behind
#      it) with a stand-in for halognn-train that records what each rank was given: one rank per
#      GPU, under srun each rank sees only its own GPU, under mpirun each rank sees all of its
#      node's GPUs (and picks the one of its index on the node), and every rank gets --device cuda.
# Also: a bring-up whose slurmd fails removes the already running slurmctld with everything else.
# Skips (exit 77) where namespaces cannot be created or Slurm is not installed.
# shellcheck source=test/cluster/cluster_test_lib.sh disable=SC2154  # bin, src, work, name, cluster
source "$(dirname "${BASH_SOURCE[0]}")/cluster_test_lib.sh"
ct_init "$1" "$2"
ct_skip_unless_netns
for tool in slurmctld slurmd sbatch scontrol; do
  command -v "$tool" >/dev/null ||
    { echo "SKIP: Slurm is not installed (no $tool; Debian: slurmctld slurmd slurm-client)"; exit 77; }
done
ct_fixture
ct_reference_run "$work/shm.jsonl" "${ct_train_args[@]}"

# The failure path first, while nothing runs: slurmd fails after slurmctld started.
mkdir -p "$work/fakebin"
printf '#!/bin/sh\necho "slurmd: injected failure" >&2\nexit 1\n' >"$work/fakebin/slurmd"
chmod +x "$work/fakebin/slurmd"
if PATH="$work/fakebin:$PATH" timeout 60 "$cluster" up --name "$name" --hosts 2 --slurm >/dev/null 2>"$work/err"; then
  ct_fail "up --slurm succeeded although slurmd failed"
fi
if ip netns list | grep -q "^$name-"; then ct_fail "a failed Slurm bring-up left namespaces"; fi
if pgrep -f "slurmctld -f ${HALOGNN_CLUSTER_RUN:-/run/halognn-cluster}/$name/" >/dev/null; then
  ct_fail "a failed Slurm bring-up left slurmctld running"
fi

timeout 60 "$cluster" up --name "$name" --hosts 2 --rate 1 --slots 2 --slurm --gpus 2 >/dev/null ||
  { echo "FAIL: Slurm cluster bring-up"; exit 1; }
echo "ok: Slurm cluster $name up"
on_h0() { "$cluster" exec --name "$name" h0 "$@"; }

# What a user exports before sbatch (sbatch passes the environment on to the job).
export HALOGNN_HOME=$src HALOGNN_BIN=$bin
mkdir -p "$work/submit"
cd "$work/submit" || exit 1

# check_job JOBID WHAT: the per-job folder of a finished training job.
check_job() {
  local d=$work/results/$1 what=$2
  [[ -f $d/job.json ]] || { ct_fail "$what: no $d/job.json"; return; }
  grep -q '"state": "completed", "exit_status": 0' "$d/job.json" || ct_fail "$what: job.json: $(cat "$d/job.json")"
  grep -q '"ntasks": 2' "$d/job.json" || ct_fail "$what: job.json does not record 2 tasks"
  grep -q "best val" "$d/train.log" || ct_fail "$what: train.log has no final line: $(tail -n 3 "$d/train.log")"
  if ct_same_metrics "$work/shm.jsonl" "$d/metrics.jsonl"; then
    echo "ok: $what: metrics equal the shared-memory run"
  else
    ct_fail "$what: metrics differ from the shared-memory run"
  fi
}

# requeue_and_wait JOBID SECONDS: scontrol requeue, then wait until the rerun has ended; sets
# state and restarts.
requeue_and_wait() {
  on_h0 scontrol requeue "$1" || ct_fail "scontrol requeue $1"
  state=""
  local _
  for _ in $(seq $(($2 * 2))); do
    state=$(on_h0 scontrol show job "$1" | grep -o 'JobState=[A-Z]*' | cut -d= -f2)
    restarts=$(on_h0 scontrol show job "$1" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
    [[ $restarts == 1 && $state =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]] && break
    sleep 0.5
  done
}

# 1. partition job, then the training job after it (srun).
part_id=$(on_h0 sbatch --parsable "$src/launch/slurm/partition.sbatch" \
            --data "$work/ds" --parts 2 --out "$work/parts/p2") || { echo "FAIL: sbatch partition"; exit 1; }
if ! timeout 120 "$cluster" exec --name "$name" h0 sbatch --wait --dependency=afterok:"$part_id" \
       --nodes 2 --ntasks-per-node 1 "$src/launch/slurm/train_cpu.sbatch" \
       --partition "$work/parts/p2" --results "$work/results" -- "${ct_train_args[@]}" >"$work/sub1" 2>&1; then
  cat "$work/sub1" ./*.out
  ct_fail "the srun training job failed"
fi
train_id=$(grep -o '[0-9]*$' "$work/sub1" | head -n 1)
grep -q "holds 2 parts" "halognn-partition-$part_id.out" || ct_fail "partition job output: $(cat ./*partition*.out)"
check_job "$train_id" "srun job $train_id (after partition job $part_id)"
grep -q '"launcher": "srun"' "$work/results/$train_id/job.json" || ct_fail "job $train_id did not use srun"

# 2. mpirun inside the allocation, then a requeue of the finished job.
if ! timeout 120 "$cluster" exec --name "$name" h0 sbatch --wait --nodes 2 --ntasks-per-node 1 \
       "$src/launch/slurm/train_cpu.sbatch" --launcher mpirun \
       --partition "$work/parts/p2" --results "$work/results" -- "${ct_train_args[@]}" >"$work/sub2" 2>&1; then
  cat "$work/sub2" ./*.out
  ct_fail "the mpirun training job failed"
fi
mpi_id=$(grep -o '[0-9]*$' "$work/sub2" | head -n 1)
check_job "$mpi_id" "mpirun job $mpi_id"
grep -q '"launcher": "mpirun"' "$work/results/$mpi_id/job.json" || ct_fail "job $mpi_id did not use mpirun"

requeue_and_wait "$mpi_id" 120
if [[ $state != COMPLETED ]]; then
  ct_fail "requeued job $mpi_id ended $state (restarts ${restarts:-?})"
else
  [[ -f $work/results/$mpi_id/attempt-0/metrics.jsonl ]] ||
    ct_fail "the requeued job did not keep its first attempt in attempt-0/: $(ls "$work/results/$mpi_id")"
  grep -q '"restart_count": 1' "$work/results/$mpi_id/job.json" || ct_fail "job.json of the rerun: restart_count is not 1"
  check_job "$mpi_id" "requeued job $mpi_id"
fi

# 2b. A job requeued while it trains (node failure, preemption) resumes from its newest complete
#     checkpoint and ends with the metrics of a run that was never stopped. A 5 ms emulated link
#     latency keeps it training for several seconds, long enough to requeue it mid-run.
long_args=(--model sage --layers 2 --hidden 32 --epochs 300 --eval-every 1 --seed 7 --quiet
           --emulate-link "10,5000")
ct_reference_run "$work/shm-long.jsonl" "${long_args[@]}"
long_id=$(on_h0 sbatch --parsable --nodes 2 --ntasks-per-node 1 "$src/launch/slurm/train_cpu.sbatch" \
            --partition "$work/parts/p2" --results "$work/results" --checkpoint-every 20 \
            -- "${long_args[@]}") || ct_fail "sbatch of the long training job"
ckpts=$work/results/$long_id/checkpoints
for _ in $(seq 1200); do
  compgen -G "$ckpts/epoch-*/manifest.json" >/dev/null && break
  sleep 0.1
done
compgen -G "$ckpts/epoch-*/manifest.json" >/dev/null || ct_fail "job $long_id wrote no checkpoint in 120 s"
requeue_and_wait "$long_id" 240
d=$work/results/$long_id
if [[ $state != COMPLETED ]]; then
  ct_fail "job $long_id requeued while training ended $state (restarts ${restarts:-?}): $(tail -n 5 "$d/train.log" 2>/dev/null)"
elif ! grep -q '"resumed_from": "'"$ckpts"'/epoch-' "$d/job.json"; then
  ct_fail "job $long_id did not resume after the requeue: $(cat "$d/job.json")"
else
  grep -q '"state": "running"' "$d/attempt-0/job.json" ||
    ct_fail "job $long_id: the first attempt was not stopped while running: $(cat "$d/attempt-0/job.json")"
  if ct_same_metrics "$work/shm-long.jsonl" "$d/metrics.jsonl"; then
    echo "ok: job $long_id requeued, resumed from $(grep -o 'epoch-[0-9]*' "$d/job.json" | head -n 1), metrics equal an uninterrupted run"
  else
    ct_fail "job $long_id: the resumed run's metrics differ from an uninterrupted run"
  fi
fi

# The same script inside an interactive allocation (salloc runs it where salloc runs).
if ! timeout 120 "$cluster" exec --name "$name" h0 salloc --nodes 2 --ntasks-per-node 1 \
       bash "$src/launch/slurm/train_cpu.sbatch" --partition "$work/parts/p2" --results "$work/results" \
       -- "${ct_train_args[@]}" >"$work/salloc" 2>&1; then
  cat "$work/salloc"
  ct_fail "the training script failed inside salloc"
fi
salloc_id=$(grep -o 'Granted job allocation [0-9]*' "$work/salloc" | grep -o '[0-9]*$')
check_job "$salloc_id" "salloc allocation $salloc_id"

# 3. A job whose partition step fails (a dataset that does not exist) fails, and a job that
#    depends on it never starts.
bad_id=$(on_h0 sbatch --parsable --nodes 2 --ntasks-per-node 1 "$src/launch/slurm/train_cpu.sbatch" \
           --partition "$work/parts/none" --data "$work/no-such-dataset" --results "$work/results" \
           -- "${ct_train_args[@]}")
dep_id=$(on_h0 sbatch --parsable --dependency=afterok:"$bad_id" --kill-on-invalid-dep=yes \
           --nodes 2 --ntasks-per-node 1 "$src/launch/slurm/train_cpu.sbatch" \
           --partition "$work/parts/p2" --results "$work/results" -- "${ct_train_args[@]}")
for _ in $(seq 240); do
  s1=$(on_h0 scontrol show job "$bad_id" | grep -o 'JobState=[A-Z]*' | cut -d= -f2)
  s2=$(on_h0 scontrol show job "$dep_id" | grep -o 'JobState=[A-Z]*' | cut -d= -f2)
  [[ $s1 == FAILED && $s2 == CANCELLED ]] && break
  sleep 0.5
done
[[ $s1 == FAILED ]] || ct_fail "the job with a missing dataset ended $s1, not FAILED"
[[ $s2 == CANCELLED ]] || ct_fail "the job depending on a failed job ended $s2, not CANCELLED"
grep -q "no-such-dataset" "halognn-train-$bad_id.out" ||
  ct_fail "the failed job's output does not name the missing dataset: $(cat "halognn-train-$bad_id.out")"
[[ ! -e $work/results/$dep_id ]] || ct_fail "the cancelled job $dep_id ran"
[[ $ct_failures -gt 0 ]] || echo "ok: a failed partition step fails its job and cancels the dependent one"

# 4. The GPU job script: what each rank is given, with both launchers.
mkdir -p "$work/fakegpu"
cat >"$work/fakegpu/halognn-train" <<'EOF2'
#!/bin/sh
# Stand-in for halognn-train: records rank, host, visible GPUs and arguments, one file per rank.
r=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-x}}
echo "host=$(hostname) gpus=${CUDA_VISIBLE_DEVICES:-none} args=$*" >"$FAKE_GPU_OUT/rank-$r"
EOF2
chmod +x "$work/fakegpu/halognn-train"
ln -s "$bin/halognn-partition" "$work/fakegpu/halognn-partition"
for launcher in srun mpirun; do
  export FAKE_GPU_OUT=$work/gpu-$launcher
  mkdir -p "$FAKE_GPU_OUT"
  if ! HALOGNN_BIN=$work/fakegpu timeout 120 "$cluster" exec --name "$name" h0 sbatch --wait --nodes 2 \
         --ntasks-per-node 2 --cpus-per-task 1 "$src/launch/slurm/train_gpu.sbatch" --launcher "$launcher" \
         --partition "$work/parts/p4" --data "$work/ds" --results "$work/results" -- --epochs 1 >"$work/sub-gpu" 2>&1; then
    ct_fail "the GPU job script failed under $launcher: $(cat "$work/sub-gpu")"
    continue
  fi
  # The first of the two jobs partitioned the dataset for its 4 ranks as a step of its own.
  [[ $(grep -o '"parts": *[0-9]*' "$work/parts/p4/manifest.json" 2>/dev/null) =~ 4$ ]] ||
    ct_fail "GPU job ($launcher): no 4-part partition in $work/parts/p4"
  ranks=$(cat "$FAKE_GPU_OUT"/rank-* 2>/dev/null)
  [[ $(find "$FAKE_GPU_OUT" -name 'rank-*' | wc -l) -eq 4 ]] || ct_fail "GPU job ($launcher): expected 4 ranks, got: $ranks"
  [[ $(grep -c -- "--device cuda" <<<"$ranks") -eq 4 ]] || ct_fail "GPU job ($launcher): not every rank got --device cuda: $ranks"
  for h in h0 h1; do
    seen=$(grep "^host=$h " <<<"$ranks" | sed -E 's/.* gpus=([^ ]*) .*/\1/' | sort | tr '\n' ' ')
    if [[ $launcher == srun ]]; then
      [[ $seen == "0 1 " ]] || ct_fail "GPU job (srun): the ranks on $h should see one GPU each, 0 and 1; they see: $seen"
    else
      [[ $seen == "0,1 0,1 " ]] || ct_fail "GPU job (mpirun): the ranks on $h should see both of its GPUs; they see: $seen"
    fi
  done
done
[[ $ct_failures -gt 0 ]] || echo "ok: GPU job script: one rank per GPU under srun and mpirun"

echo "$ct_failures failed"
[[ $ct_failures -eq 0 ]]
