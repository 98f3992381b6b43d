# shellcheck shell=bash disable=SC2034  # variables for the sourcing test
# Shared by the cluster tests (sourced). Each test brings up its own namespace cluster under a
# name unique to its process, and tears it down on every exit path.
#   ct_init BIN_DIR SOURCE_DIR  sets bin, src, cluster (the netns_cluster.sh path), work (a fresh
#                               directory), name (the cluster's), and the EXIT trap
#   ct_skip_unless_netns        exit 77 (CTest: skipped) with a clear line where namespaces cannot
#                               be created
#   ct_fixture                  a small dataset and its 2-part partition in $work/ds, $work/p2
#   ct_reference_run OUT ARGS   the same training on shared memory (Open MPI's vader), 2 ranks
#   ct_same_metrics A B         metrics files equal up to timings and paths (exit status)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1

ct_failures=0
ct_fail() { echo "FAIL: $*"; ct_failures=$((ct_failures + 1)); }

ct_init() {
  bin=$(cd "$1" && pwd) || exit 1
  src=$(cd "$2" && pwd) || exit 1
  cluster=$src/launch/cluster/netns_cluster.sh
  work=$(mktemp -d)
  name=ct$(( $$ % 1000000 ))
  trap ct_cleanup EXIT
  trap 'exit 130' INT TERM
}

ct_cleanup() {
  local rc=$?
  timeout 60 "$cluster" down --name "$name" >/dev/null 2>&1 || echo "WARNING: teardown of cluster $name failed"
  rm -rf "$work"
  exit "$rc"
}

ct_skip_unless_netns() {
  local probe=ctprobe$$ err
  if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: network namespaces need root (this test builds hosts from them)"
    exit 77
  fi
  if ! err=$(ip netns add "$probe" 2>&1); then
    echo "SKIP: cannot create network namespaces here: $err"
    exit 77
  fi
  ip netns del "$probe"
}

ct_fixture() {
  "$bin/halognn-data" generate --out "$work/ds" --nodes 2000 --edges 20000 --classes 4 \
    --features 16 --seed 3 >/dev/null || { echo "FAIL: cannot generate the fixture"; exit 1; }
  "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/p2" >/dev/null ||
    { echo "FAIL: cannot partition the fixture"; exit 1; }
}

# The training every test runs: SAGE, 2 layers, dropout on, a few epochs, evaluated every epoch.
ct_train_args=(--model sage --layers 2 --hidden 32 --epochs 5 --eval-every 1 --seed 7 --quiet)

ct_reference_run() {
  local out=$1
  shift
  timeout 120 mpirun -np 2 --bind-to none --mca btl self,vader -x OMP_NUM_THREADS \
    "$bin/halognn-train" --partition "$work/p2" --metrics "$out" "$@" >/dev/null ||
    { echo "FAIL: the shared-memory reference run failed"; exit 1; }
}

# Everything but wall-clock times, measured memory, file paths, the device string and where
# checkpoints go must agree: losses and accuracies of every epoch, bytes per layer and direction,
# the final summary (less its memory estimate, which counts the checkpoint buffers of a run that
# writes them and the process's own memory as measured at start-up).
ct_strip() {
  sed -E 's/"(epoch_s|compute_s|comm_s|codec_s|overlap_s|total_s)":[^,]*,//g;
          s/"peak_rss_bytes":\[[^]]*\],"peak_rss_over_estimate":[^,]*,//g;
          s/"(metrics|partition|device|checkpoint_dir|resume)":"[^"]*",?//g;
          s/"(checkpoint_every|keep_checkpoints)":[0-9]+,?//g;
          s/,"memory_estimate":\{.*\}\}$/}/' "$1"
}

ct_same_metrics() {
  local a=$1 b=$2
  [[ -s $a && -s $b ]] || { echo "missing or empty metrics: $a $b"; return 1; }
  if ! diff <(ct_strip "$a") <(ct_strip "$b") >"$work/diff"; then
    head -c 2000 "$work/diff"
    return 1
  fi
}

# ct_tx_total: bytes sent by all hosts' NICs so far.
ct_tx_total() {
  "$cluster" counters --name "$name" | awk '{ s += $2 } END { print s + 0 }'
}

# ct_final_field FILE KEY: a number from the metrics file's final line.
ct_final_field() {
  tail -n 1 "$1" | grep -o "\"$2\":[0-9.e+-]*" | head -n 1 | cut -d: -f2
}
