#!/usr/bin/env bash
# halognn quickstart: installs what is missing (Debian 12, as root), configures, builds, then
#   main (default): generates the default graph, partitions it for 4 ranks, trains on 4 MPI ranks
#                   with exact (fp32) exchanges, then with 1-bit (q1) and pipelined 1-bit exchanges
#                   (COMPARE=0: fp32 only), and prints the final test accuracy of each
#   test:           runs the whole test suite (ctest)
# Environment: BUILD_DIR (default: build), GNN_CUDA (AUTO|ON|OFF, default AUTO), JOBS (default: nproc),
#              RANKS (main job, default 4), EPOCHS (main job, default 20), MODEL (main job, default sage),
#              COMPARE (main job, default 1: also train with q1 and pipelined q1).
set -euo pipefail
mode=${1:-main}
case "$mode" in main|test) ;; *) echo "usage: $0 [main|test]" >&2; exit 2 ;; esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

packages=(build-essential cmake openmpi-bin libopenmpi-dev libmetis-dev metis libeigen3-dev
          libboost-program-options-dev libgtest-dev libgmock-dev zlib1g-dev nlohmann-json3-dev
          libptscotch-dev            # PT-Scotch (64-bit build): halognn-partition --method parmetis
          clang libclang-rt-14-dev libomp-14-dev  # clang + libFuzzer + its OpenMP: the fuzz harnesses (test/fuzz)
          python3-numpy)             # the tool tests read saved models (.npz) with numpy
# The cluster tests (test/cluster) build hosts from network namespaces and run a Slurm cluster on
# them; Debian does not start the Slurm daemons it installs without a configuration.
[[ $mode == test ]] && packages+=(iproute2 util-linux slurmctld slurmd slurm-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "quickstart: missing packages: ${missing[*]} (run as root, or install them with apt-get)" >&2
    exit 1
  fi
  echo "quickstart: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}"
fi

if [[ $(id -u) -eq 0 ]]; then
  # Open MPI refuses to run as root unless told; CI and containers run as root.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 GTEST_COLOR=no

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGNN_CUDA="${GNN_CUDA:-AUTO}"
cmake --build "$build" -j "$jobs"

if [[ $mode == test ]]; then
  cd "$build"
  exec ctest --output-on-failure -j "$jobs" --timeout 900
fi

bin=$build/bin
data=$build/data
ranks=${RANKS:-4}
# Made again when the tool that made them was rebuilt since (its defaults or format may differ).
if [[ ! -f $data/default/manifest.json || $bin/halognn-data -nt $data/default/manifest.json ]]; then
  "$bin/halognn-data" generate --out "$data/default"
fi
"$bin/halognn-data" inspect "$data/default"
part_manifest=$data/default.p$ranks/manifest.json
if [[ ! -f $part_manifest || $bin/halognn-partition -nt $part_manifest ||
      $data/default/manifest.json -nt $part_manifest ]]; then
  "$bin/halognn-partition" --data "$data/default" --parts "$ranks" --out "$data/default.p$ranks"
fi
# One OpenMP thread per core share, ranks unbound (Open MPI would pin each rank, and with it all of
# its threads, to one core).
threads=$(( $(nproc) / ranks )); (( threads >= 1 )) || threads=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$threads}
train() {  # NAME [options]: one 4-rank run on the default graph, metrics in $build/default-NAME.jsonl
  local name=$1
  shift
  mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS \
    "$bin/halognn-train" --partition "$data/default.p$ranks" \
    --model "${MODEL:-sage}" --layers 3 --hidden 256 --epochs "${EPOCHS:-20}" --eval-every 5 \
    --metrics "$build/default-$name.jsonl" "$@"
}
final_test() {  # the restored best model's test accuracy from a metrics file's final line
  tail -n 1 "$build/default-$1.jsonl" | grep -o '"final_test_acc":[-0-9.e]*' | cut -d: -f2
}
echo "== sync, fp32 (exact) exchanges"
train fp32
configs=(fp32)
if [[ ${COMPARE:-1} != 0 ]]; then
  echo "== sync, 1-bit (q1) exchanges"
  train q1 --codec q1 --quiet
  echo "== pipelined, 1-bit (q1) exchanges"
  train pipelined-q1 --codec q1 --exchange pipelined --quiet
  configs+=(q1 pipelined-q1)
fi
echo "== final test accuracy (${MODEL:-sage} 3 x 256, $ranks ranks, ${EPOCHS:-20} epochs, best validation epoch restored)"
for c in "${configs[@]}"; do
  case $c in
    fp32) label="sync fp32" ;;
    q1) label="sync q1" ;;
    pipelined-q1) label="pipelined q1" ;;
  esac
  printf '  %-14s %s\n' "$label" "$(final_test "$c")"
done
