#!/usr/bin/env bash
# One-call GPU check for a machine with a GPU (docs/gpu.md): builds with -DGNN_CUDA=ON, runs the
# CUDA tests, the kernel benchmark on the GPU (when halognn-bench-kernels has --device), and
# halognn-train epoch timings on CPU and GPU, then prints a table.
#   launch/gpu_bench.sh [BUILD_DIR]      (default: build-gpu; uses all cores)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$src/build-gpu}"
jobs="$(nproc)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
out="$(mktemp -d)"

echo "== configure and build ($build)"
cmake -S "$src" -B "$build" -DGNN_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
cmake --build "$build" -j "$jobs" > "$out/build.log"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

echo "== ctest -L cuda"
ctest_rc=0
ctest --test-dir "$build" -L cuda --output-on-failure > "$out/ctest.log" 2>&1 || ctest_rc=$?
grep -E "tests passed|tests failed|Skipped|Failed" "$out/ctest.log" | tail -n 20 || true
if grep -q "Skipped" "$out/ctest.log"; then echo "WARNING: some CUDA tests skipped (no GPU visible?)"; fi

echo "== kernel benchmark"
bench="$build/bin/halognn-bench-kernels"
if "$bench" --help 2>&1 | grep -q -- "--device"; then
  "$bench" --device cuda --reps 20 | tee "$out/bench_gpu.txt"
else
  echo "halognn-bench-kernels has no --device option: CPU figures only"
  "$bench" --reps 5 | tee "$out/bench_cpu.txt"
fi

echo "== halognn-train epoch timings"
data="$out/data"; part="$out/part"
"$build/bin/halognn-data" generate --nodes 200000 --edges 2000000 --classes 16 --features 128 \
  --out "$data" > /dev/null 2>&1 || { echo "halognn-data generate failed (see --help)"; exit 1; }
printf "%-6s %-5s %-9s %-6s %12s %12s\n" device ranks transport model "s/epoch" "final loss"
for ranks in 1 2; do
  "$build/bin/halognn-partition" --data "$data" --parts "$ranks" --out "$part.$ranks" > /dev/null
  for model in gcn gat; do
    for cfg in "cpu mpi" "cuda mpi" "cuda nccl"; do
      set -- $cfg
      gpus="$(nvidia-smi -L 2>/dev/null | wc -l)"
      if [[ "$2" == nccl && "$ranks" -gt "$gpus" ]]; then continue; fi  # NCCL: one GPU per rank
      m="$out/m.$1.$2.$ranks.$model.jsonl"
      mpirun -np "$ranks" "$build/bin/halognn-train" --partition "$part.$ranks" --model "$model" \
        --device "$1" --transport "$2" --epochs 20 --quiet --metrics "$m" > /dev/null
      python3 - "$m" "$1" "$ranks" "$2" "$model" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
epochs = [l for l in lines if "epoch" in l and "epoch_s" in l]
t = sorted(e["epoch_s"] for e in epochs[1:] or epochs)
print("%-6s %-5s %-9s %-6s %12.4f %12.4f" % (sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5],
                                               t[len(t) // 2], epochs[-1]["loss"]))
PY
    done
  done
done
echo "logs in $out"
exit "$ctest_rc"
