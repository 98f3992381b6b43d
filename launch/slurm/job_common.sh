# shellcheck shell=bash
# job_common.sh: what the halognn Slurm job scripts share (sourced by train_cpu.sbatch,
# train_gpu.sbatch and partition.sbatch; see docs/cluster.md). Nothing here depends on the site:
# the job scripts read SLURM_* variables only, so they run the same under sbatch, inside salloc,
# and with either launcher.
#
# Settings, each from an option or the environment (the option wins):
#   --partition DIR    HALOGNN_PARTITION   partition directory for the job's ranks (required)
#   --data DIR         HALOGNN_DATA        dataset to partition into --partition when it is missing
#   --results DIR      HALOGNN_RESULTS     per-job folders go here (default: SUBMIT_DIR/results)
#   --launcher NAME    HALOGNN_LAUNCHER    srun (direct launch, default) | mpirun (inside the allocation)
#   --bin DIR          HALOGNN_BIN         the tools (default: HALOGNN_HOME/build/bin)
#   -- ARGS...         HALOGNN_TRAIN_ARGS  halognn-train options (model, codec, exchange, ...);
#                                          the words after -- follow those of HALOGNN_TRAIN_ARGS
# HALOGNN_HOME is the checkout (default: the submit directory).

hj_prog=halognn-job
hj_partition_args=()   # extra halognn-partition options (partition.sbatch)
hj_die() { echo "$hj_prog: $*" >&2; exit 2; }

# hj_json_str S: S as a JSON string.
hj_json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  printf '"%s"' "$s"
}

# hj_json_words WORD...: the words as a JSON array of strings.
hj_json_words() {
  local out="" w
  for w in "$@"; do out+="${out:+, }$(hj_json_str "$w")"; done
  printf '[%s]' "$out"
}

# hj_write_atomic FILE: stdin into FILE, renamed into place once complete.
hj_write_atomic() {
  local tmp
  tmp=$(mktemp "$1.tmp.XXXXXX")
  cat >"$tmp" && mv -f "$tmp" "$1"
}

hj_parse_args() {
  hj_partition=${HALOGNN_PARTITION:-}
  hj_data=${HALOGNN_DATA:-}
  hj_results=${HALOGNN_RESULTS:-}
  hj_launcher=${HALOGNN_LAUNCHER:-srun}
  hj_bin=${HALOGNN_BIN:-}
  # shellcheck disable=SC2206
  hj_train_args=(${HALOGNN_TRAIN_ARGS:-})
  while [[ $# -gt 0 ]]; do
    case $1 in
      --partition) hj_partition=${2:?--partition needs a directory}; shift 2 ;;
      --data) hj_data=${2:?--data needs a directory}; shift 2 ;;
      --results) hj_results=${2:?--results needs a directory}; shift 2 ;;
      --launcher) hj_launcher=${2:?--launcher needs srun or mpirun}; shift 2 ;;
      --bin) hj_bin=${2:?--bin needs a directory}; shift 2 ;;
      --) shift; hj_train_args+=("$@"); break ;;
      *) hj_die "unknown option '$1' (job options: --partition --data --results --launcher --bin; halognn-train options go after --)" ;;
    esac
  done
  [[ -n ${SLURM_JOB_ID:-} ]] || hj_die "not inside a Slurm job (no SLURM_JOB_ID): submit with sbatch, or run inside salloc"
  hj_home=${HALOGNN_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}
  hj_bin=${hj_bin:-$hj_home/build/bin}
  [[ -x $hj_bin/halognn-train ]] ||
    hj_die "no halognn-train in $hj_bin (set HALOGNN_BIN or --bin, or HALOGNN_HOME to the checkout holding build/bin)"
  case $hj_launcher in srun|mpirun) ;; *) hj_die "--launcher '$hj_launcher': srun or mpirun" ;; esac
  [[ -n $hj_partition ]] || hj_die "no partition directory: pass --partition DIR or set HALOGNN_PARTITION"
  hj_results=${hj_results:-${SLURM_SUBMIT_DIR:-$PWD}/results}
}

# hj_partition_parts DIR: the part count in DIR/manifest.json (empty if there is none).
hj_partition_parts() {
  [[ -f $1/manifest.json ]] || return 0
  grep -o '"parts": *[0-9]*' "$1/manifest.json" | head -n 1 | grep -o '[0-9]*$'
}

# hj_ensure_partition PARTS [LOG]: partition HALOGNN_DATA into the partition directory unless it
# already holds PARTS parts (the tool's output goes to LOG, else to stdout). Idempotent and safe when several jobs ask for the same directory at
# once (one of them partitions under a lock, the others wait and then find it done);
# halognn-partition writes the directory atomically, so a killed job leaves none half-written.
hj_ensure_partition() {
  local parts=$1 log=${2:-} have
  have=$(hj_partition_parts "$hj_partition")
  [[ $have == "$parts" ]] && return 0
  [[ -n $hj_data ]] || {
    if [[ -n $have ]]; then
      hj_die "$hj_partition has $have parts but the job has $parts ranks (re-partition, or pass --data DIR to do it here)"
    fi
    hj_die "$hj_partition is not a partition directory (pass --data DIR to partition a dataset into it)"
  }
  mkdir -p "$(dirname "$hj_partition")"
  (
    flock 9
    have=$(hj_partition_parts "$hj_partition")
    if [[ $have != "$parts" ]]; then
      echo "$hj_prog: partitioning $hj_data into $parts parts -> $hj_partition"
      local cmd=("$hj_bin/halognn-partition" --data "$hj_data" --parts "$parts" --out "$hj_partition"
                 "${hj_partition_args[@]}")
      if [[ -z $log ]]; then
        "${cmd[@]}" || hj_die "partitioning failed"
      else
        "${cmd[@]}" >"$log" 2>&1 || { cat "$log" >&2; hj_die "partitioning failed (log: $log)"; }
      fi
    fi
  ) 9>"$hj_partition.lock"
}

# hj_job_dir: create RESULTS/JOBID. A requeued job (same id, SLURM_RESTART_COUNT > 0) moves the
# files of its earlier attempt into attempt-N/ first, so no attempt's output is overwritten.
hj_job_dir() {
  hj_dir=$hj_results/$SLURM_JOB_ID
  mkdir -p "$hj_dir"
  local restarts=${SLURM_RESTART_COUNT:-0} f
  if (( restarts > 0 )) && [[ -e $hj_dir/job.json ]]; then
    local prev=$hj_dir/attempt-$((restarts - 1))
    mkdir -p "$prev"
    for f in "$hj_dir"/*; do
      [[ $(basename "$f") == attempt-* ]] || mv -f "$f" "$prev/"
    done
  fi
}

# hj_write_job_json STATE [EXIT_STATUS]: what this job is and ran, in RESULTS/JOBID/job.json.
hj_write_job_json() {
  local state=$1 rc=${2:-null}
  {
    printf '{"job_id": %s, "job_name": %s, "restart_count": %s, "state": %s, "exit_status": %s,\n' \
      "$(hj_json_str "$SLURM_JOB_ID")" "$(hj_json_str "${SLURM_JOB_NAME:-}")" "${SLURM_RESTART_COUNT:-0}" \
      "$(hj_json_str "$state")" "$rc"
    printf ' "nodes": %s, "ntasks": %s, "omp_threads": %s, "launcher": %s, "kind": %s,\n' \
      "$(hj_json_str "${SLURM_JOB_NODELIST:-}")" "$hj_ntasks" "$hj_threads" "$(hj_json_str "$hj_launcher")" \
      "$(hj_json_str "$hj_kind")"
    printf ' "partition": %s, "started": %s, "finished": %s,\n' \
      "$(hj_json_str "$hj_partition")" "$(hj_json_str "$hj_started")" \
      "$(hj_json_str "$([[ $state == running ]] || date -Is)")"
    printf ' "command": %s}\n' "$(hj_json_words "${hj_cmd[@]}")"
  } | hj_write_atomic "$hj_dir/job.json"
}

# hj_run_training KIND: the training run of train_cpu.sbatch (KIND cpu) and train_gpu.sbatch
# (KIND cuda), one rank per task of the allocation.
hj_run_training() {
  hj_kind=$1
  hj_ntasks=${SLURM_NTASKS:?not inside a Slurm allocation with tasks (no SLURM_NTASKS)}
  # OpenMP threads per rank: the task's CPUs (--cpus-per-task), else the node's CPUs shared by its
  # tasks. Ranks are not bound by the launcher (see docs/training.md, "Ranks, threads and cores").
  if [[ -n ${SLURM_CPUS_PER_TASK:-} ]]; then
    hj_threads=$SLURM_CPUS_PER_TASK
  else
    local per_node=${SLURM_NTASKS_PER_NODE:-$(( (hj_ntasks + ${SLURM_JOB_NUM_NODES:-1} - 1) / ${SLURM_JOB_NUM_NODES:-1} ))}
    hj_threads=$(( ${SLURM_CPUS_ON_NODE:-1} / per_node ))
    (( hj_threads >= 1 )) || hj_threads=1
  fi
  export OMP_NUM_THREADS=$hj_threads
  hj_job_dir
  hj_started=$(date -Is)
  hj_ensure_partition "$hj_ntasks" "$hj_dir/partition.log"
  local train=("$hj_bin/halognn-train" --partition "$hj_partition" --device "$hj_kind"
               --metrics "$hj_dir/metrics.jsonl" "${hj_train_args[@]}")
  if [[ $hj_launcher == srun ]]; then
    # --kill-on-bad-exit: one failed rank ends the step instead of leaving the others waiting.
    hj_cmd=(srun --kill-on-bad-exit=1 --ntasks="$hj_ntasks" "${train[@]}")
  else
    # Open MPI's mpirun reads the allocation (nodes, tasks per node) from Slurm and starts one
    # daemon per remote node through srun; OMP_NUM_THREADS must be forwarded explicitly.
    hj_cmd=(mpirun -np "$hj_ntasks" --bind-to none -x OMP_NUM_THREADS "${train[@]}")
    if [[ -n ${SLURM_GPUS_PER_TASK:-} ]]; then
      # That one-task srun step would inherit --gpus-per-task and give the node's daemon, and so
      # all ranks on the node, a single GPU. It gets all of the node's GPUs instead, unbound,
      # and each rank takes the GPU of its index on the node.
      hj_cmd=(env -u SLURM_GPUS_PER_TASK SLURM_GPUS_PER_NODE="${SLURM_GPUS_ON_NODE:?}" SLURM_GPU_BIND=none
              "${hj_cmd[@]}")
    fi
  fi
  hj_write_job_json running
  echo "$hj_prog: job $SLURM_JOB_ID on ${SLURM_JOB_NODELIST:-?}: $hj_ntasks rank(s) x $hj_threads thread(s), $hj_launcher; results in $hj_dir"
  local rc=0
  "${hj_cmd[@]}" > >(tee "$hj_dir/train.log") 2>&1 || rc=$?
  wait  # for tee
  if (( rc == 0 )); then
    hj_write_job_json completed 0
  else
    hj_write_job_json failed "$rc"
    echo "$hj_prog: training failed with exit status $rc (log: $hj_dir/train.log)" >&2
  fi
  return "$rc"
}
