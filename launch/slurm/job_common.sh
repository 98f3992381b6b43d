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
#   --checkpoint-dir DIR      HALOGNN_CHECKPOINT_DIR    training checkpoints (default:
#                                                       RESULTS/JOBID/checkpoints); a requeued
#                                                       job resumes from the newest complete one
#   --checkpoint-every N      HALOGNN_CHECKPOINT_EVERY  a checkpoint every N epochs (default 10;
#                                                       0: after the last epoch only)
#   --keep-checkpoints K      HALOGNN_KEEP_CHECKPOINTS  keep the newest K (default 2; 0: all)
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
  hj_ckpt_dir=${HALOGNN_CHECKPOINT_DIR:-}
  hj_ckpt_every=${HALOGNN_CHECKPOINT_EVERY:-10}
  hj_ckpt_keep=${HALOGNN_KEEP_CHECKPOINTS:-2}
  # shellcheck disable=SC2206
  hj_train_args=(${HALOGNN_TRAIN_ARGS:-})
  while [[ $# -gt 0 ]]; do
    case $1 in
      --partition) hj_partition=${2:?--partition needs a directory}; shift 2 ;;
      --data) hj_data=${2:?--data needs a directory}; shift 2 ;;
      --results) hj_results=${2:?--results needs a directory}; shift 2 ;;
      --launcher) hj_launcher=${2:?--launcher needs srun or mpirun}; shift 2 ;;
      --bin) hj_bin=${2:?--bin needs a directory}; shift 2 ;;
      --checkpoint-dir) hj_ckpt_dir=${2:?--checkpoint-dir needs a directory}; shift 2 ;;
      --checkpoint-every) hj_ckpt_every=${2:?--checkpoint-every needs a number of epochs}; shift 2 ;;
      --keep-checkpoints) hj_ckpt_keep=${2:?--keep-checkpoints needs a count}; shift 2 ;;
      --) shift; hj_train_args+=("$@"); break ;;
      *) hj_die "unknown option '$1' (job options: --partition --data --results --launcher --bin --checkpoint-dir --checkpoint-every --keep-checkpoints; halognn-train options go after --)" ;;
    esac
  done
  # The job owns checkpointing (a requeued job must find them and resume), so halognn-train's own
  # checkpoint options are job options here: one way to set each.
  local w
  for w in "${hj_train_args[@]}"; do
    case $w in
      --checkpoint-dir|--checkpoint-dir=*|--checkpoint-every|--checkpoint-every=*|--keep-checkpoints|--keep-checkpoints=*|--resume|--resume=*)
        hj_die "halognn-train option '${w%%=*}': checkpoints are set by the job (job options --checkpoint-dir, --checkpoint-every, --keep-checkpoints; a requeued job resumes by itself)" ;;
    esac
  done
  [[ $hj_ckpt_every =~ ^[0-9]+$ ]] || hj_die "--checkpoint-every '$hj_ckpt_every': a number of epochs (0: after the last only)"
  [[ $hj_ckpt_keep =~ ^[0-9]+$ ]] || hj_die "--keep-checkpoints '$hj_ckpt_keep': a count (0: keep all)"
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

# hj_newest_checkpoint DIR: the newest complete checkpoint in DIR (one with a manifest), or
# nothing.
hj_newest_checkpoint() {
  local m
  m=$(find "$1" -mindepth 2 -maxdepth 2 -path '*/epoch-*/manifest.json' 2>/dev/null | sort | tail -n 1)
  [[ -n $m ]] && dirname "$m"
  return 0
}

# hj_job_dir: create RESULTS/JOBID and decide where training starts. A requeued job (same id,
# SLURM_RESTART_COUNT > 0) moves the files of its earlier attempt into attempt-N/ first, so no
# attempt's output is overwritten. When that attempt did not complete (killed, preempted, node
# lost) and left a complete checkpoint, this attempt resumes from it (hj_resume) and continues its
# metrics file (a copy of it stays in attempt-N/); after a completed attempt it trains anew, and
# the old checkpoints (of the job's default checkpoint folder) go to attempt-N/ too.
hj_job_dir() {
  hj_dir=$hj_results/$SLURM_JOB_ID
  hj_ckpt_dir=${hj_ckpt_dir:-$hj_dir/checkpoints}
  hj_resume=""
  mkdir -p "$hj_dir"
  local restarts=${SLURM_RESTART_COUNT:-0} f
  if (( restarts > 0 )) && [[ -e $hj_dir/job.json ]]; then
    local prev=$hj_dir/attempt-$((restarts - 1)) completed=""
    grep -q '"state": "completed"' "$hj_dir/job.json" && completed=1
    [[ -z $completed ]] && hj_resume=$(hj_newest_checkpoint "$hj_ckpt_dir")
    mkdir -p "$prev"
    for f in "$hj_dir"/*; do
      case $(basename "$f") in
        attempt-*) ;;
        checkpoints) [[ -n $completed ]] && mv -f "$f" "$prev/" ;;
        metrics.jsonl) if [[ -n $hj_resume ]]; then cp -f "$f" "$prev/"; else mv -f "$f" "$prev/"; fi ;;
        *) mv -f "$f" "$prev/" ;;
      esac
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
    printf ' "partition": %s, "checkpoints": %s, "resumed_from": %s, "started": %s, "finished": %s,\n' \
      "$(hj_json_str "$hj_partition")" "$(hj_json_str "$hj_ckpt_dir")" \
      "$(if [[ -n $hj_resume ]]; then hj_json_str "$hj_resume"; else echo null; fi)" \
      "$(hj_json_str "$hj_started")" \
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
               --metrics "$hj_dir/metrics.jsonl" --checkpoint-dir "$hj_ckpt_dir"
               --checkpoint-every "$hj_ckpt_every" --keep-checkpoints "$hj_ckpt_keep"
               ${hj_resume:+--resume "$hj_ckpt_dir"} "${hj_train_args[@]}")
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
  [[ -z $hj_resume ]] || echo "$hj_prog: attempt $((${SLURM_RESTART_COUNT:-0} + 1)) resumes from $hj_resume"
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
