#!/usr/bin/env bash
# The GPU check (docs/gpu.md), in two steps so that the GPU machine needs neither a compiler
# toolchain with halognn's dependencies nor a network:
#
#   launch/gpu_bench.sh pack [--build BUILD] [DIR]   on a Debian 12 build machine (the README's
#       packages, CUDA toolkit and NCCL): builds BUILD (default build-gpu, configured with
#       -DGNN_CUDA=ON if new) and fills DIR (default .gpu) with what the run needs: the tools and
#       the CUDA test binaries with their CTest files, and the Debian packages of every shared
#       library they and Open MPI (mpirun and its plugins) load, downloaded with apt-get.
#   launch/gpu_bench.sh run [DIR] [--steps tests,kernels,pyg] [--sizes N:E,...] [--work W]
#                            [-- more options of bench_pyg.py]
#       on the GPU machine, from the source tree: installs the packed Debian packages where mpirun
#       or a library is missing (unpacked, never overwriting a file the machine has), runs the
#       steps: `ctest -L cuda` (tests), the kernel table (kernels: halognn-bench-kernels
#       --device cuda) and launch/bench_pyg.py (pyg: halognn against PyTorch Geometric at the
#       graph sizes --sizes, default 200000:6000000,2000000:60000000, datasets and partitions kept
#       in W), and prints each table. The step `prepare` generates and partitions the graphs of
#       --sizes into W in a detached background process and returns at once, so that a later
#       `run --steps pyg --work W` (which waits for it) finds them: a run split over two sessions
#       of a time-limited machine. Logs and JSON go to $OUT when it is set, else to a temporary
#       folder.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:-}"; shift || true

pack() {
  local build="$src/build-gpu" dir="$src/.gpu"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build) build="$(realpath -m "$2")"; shift 2 ;;
      -*) echo "gpu_bench.sh pack: unknown option $1" >&2; exit 2 ;;
      *) dir="$(realpath -m "$1")"; shift ;;
    esac
  done
  [[ -f "$build/CMakeCache.txt" ]] ||
    cmake -S "$src" -B "$build" -DGNN_CUDA=ON -DCMAKE_BUILD_TYPE=Release > /dev/null
  grep -qs test_cuda "$build/test/cuda/CTestTestfile.cmake" ||
    { echo "gpu_bench.sh pack: $build is configured without the CUDA backend" >&2; exit 1; }
  cmake --build "$build" -j "$(nproc)" --target halognn-train halognn-data halognn-partition \
    halognn-bench-kernels test_cuda test_cuda_mpi > /dev/null
  rm -rf "$dir/build" "$dir/debs"
  mkdir -p "$dir/build" "$dir/debs"
  # The CTest files of the whole tree (ctest walks them all; the GoogleTest include files of
  # binaries not packed register those as NOT_BUILT, outside the cuda label), the tools, and the
  # CUDA tests' binaries and discovered-test lists; ORIGIN lets `run` rewrite the absolute paths
  # CMake wrote.
  (cd "$build" && find . -path ./CMakeFiles -prune -o -path "*/CMakeFiles" -prune \
     -o -name CTestTestfile.cmake -print -o -name "*_include.cmake" -print \
     -o -path "./bin/*" -type f -print -o -path "./test/cuda/test_cuda*" -type f -print) |
    (cd "$build" && xargs cp -p --parents -t "$dir/build")
  printf '%s\n%s\n' "$build" "$src" > "$dir/build/ORIGIN"
  # Debian packages of every library the binaries and Open MPI load, except the C and C++
  # runtimes (any machine that runs the CUDA driver has newer ones) and the CUDA libraries.
  local libs
  libs=$( { for f in "$dir"/build/bin/* "$dir"/build/test/cuda/test_cuda "$dir"/build/test/cuda/test_cuda_mpi \
              "$(command -v orterun)" /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
              /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do ldd "$f" 2>/dev/null; done; } |
          awk '/=> \// {print $3}' | grep -v -e /cuda -e libnccl | sort -u)
  local pkgs="openmpi-bin openmpi-common"
  for l in $libs; do
    local p; p="$(readlink -f "$l")"
    pkgs+=" $( (dpkg -S "$p" 2>/dev/null || dpkg -S "/usr$p" 2>/dev/null || dpkg -S "${p#/usr}" 2>/dev/null) |
               head -1 | cut -d: -f1)"
  done
  pkgs=$(echo $pkgs | tr ' ' '\n' | grep -v -x -e libc6 -e libgcc-s1 -e libstdc++6 | sort -u)
  (cd "$dir/debs" && apt-get download $pkgs > /dev/null 2> >(grep -v "unsandboxed" >&2))
  echo "packed $dir: $(du -sh "$dir" | cut -f1) ($(ls "$dir/debs" | wc -l) Debian packages)"
}

install_runtime() {  # $1: the pack (its debs/ and build/)
  local missing=0 debs="$1/debs"
  command -v mpirun > /dev/null || missing=1
  for f in "$1"/build/bin/* "$1"/build/test/cuda/test_cuda*; do
    [[ -x "$f" && ! "$f" == *.cmake ]] || continue
    ldd "$f" | grep -v -e libcu -e libnccl -e libnvJitLink | grep -q "not found" && missing=1
  done
  [[ $missing == 1 ]] || return 0
  echo "== installing the packed Debian packages (mpirun or a library is missing)"
  local stage; stage="$(mktemp -d)"
  for d in "$debs"/*.deb; do dpkg -x "$d" "$stage"; done
  # Merged /usr: the packages' /lib, /bin and /sbin belong under /usr on current systems.
  for top in lib lib64 bin sbin; do
    [[ -d "$stage/$top" ]] || continue
    mkdir -p "$stage/usr/$top"; cp -a -n "$stage/$top/." "$stage/usr/$top/"; rm -rf "${stage:?}/$top"
  done
  # cp -n reports each file it skips as a failure (coreutils 9.2 to 9.4): check the result instead.
  cp -a -n "$stage/." / 2> /dev/null || true
  rm -rf "$stage"
  ldconfig
  command -v mpirun > /dev/null || { echo "gpu_bench.sh: mpirun still missing after installing $debs" >&2; exit 1; }
}

run() {
  local dir="$src/.gpu" steps="tests,kernels,pyg" sizes="200000:6000000,2000000:60000000" work=""
  local pyg_extra=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --steps) steps="$2"; shift 2 ;;
      --sizes) sizes="$2"; shift 2 ;;
      --work) work="$2"; shift 2 ;;
      --) shift; pyg_extra=("$@"); break ;;
      -*) echo "gpu_bench.sh run: unknown option $1" >&2; exit 2 ;;
      *) dir="$(realpath -m "$1")"; shift ;;
    esac
  done
  [[ -f "$dir/build/ORIGIN" ]] || { echo "gpu_bench.sh run: $dir holds no pack (run: $0 pack)" >&2; exit 1; }
  local out="${OUT:-$(mktemp -d)}"
  install_runtime "$dir"
  # CUDA libraries from the toolkit, NCCL from the loader's path or PyTorch's wheel.
  local cudalib="${CUDA_HOME:-/usr/local/cuda}/lib64"
  command -v nvcc > /dev/null && cudalib="$(dirname "$(command -v nvcc)")/../lib64"
  export LD_LIBRARY_PATH="$cudalib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if ! ldconfig -p | grep -q "libnccl.so.2 "; then
    local ncclib
    ncclib="$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"lib"))' 2>/dev/null || true)"
    [[ -n "$ncclib" ]] && export LD_LIBRARY_PATH="$ncclib:$LD_LIBRARY_PATH"
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Relocate the packed build: CMake wrote the build and source folders of the pack machine.
  local origin_build origin_src
  { read -r origin_build; read -r origin_src; } < "$dir/build/ORIGIN"
  find "$dir/build" -name "*.cmake" -exec sed -i -e "s#$origin_build#$dir/build#g" \
    -e "s#$origin_src#$src#g" {} +
  local bin="$dir/build/bin"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt" || true

  local rc=0
  if [[ ",$steps," == *",prepare,"* ]]; then
    [[ -n "$work" ]] || { echo "gpu_bench.sh run: the step prepare needs --work" >&2; exit 2; }
    mkdir -p "$work"
    setsid nohup python3 "$src/launch/bench_pyg.py" --prepare --bin "$bin" --work "$work" \
      --sizes "$sizes" > "$work/prepare.log" 2>&1 < /dev/null &
    echo "== preparing $sizes in $work in the background (log: $work/prepare.log)"
  fi
  if [[ ",$steps," == *",tests,"* ]]; then
  echo "== ctest -L cuda"
  ctest --test-dir "$dir/build" -L cuda --output-on-failure --timeout 900 > "$out/ctest.log" 2>&1 || rc=$?
  grep -E "tests passed|tests failed|\(Failed\)|Not Run|\*\*\*" "$out/ctest.log" || true
  if grep -q "Skipped" "$out/ctest.log"; then echo "WARNING: CUDA tests skipped (no GPU visible?)"; rc=1; fi
  grep -h "\[ deviation \]" "$dir/build/Testing/Temporary/LastTest.log" | sort -u > "$out/deviation.txt" || true
  cat "$out/deviation.txt"
  fi

  if [[ ",$steps," == *",kernels,"* ]]; then
  echo "== kernel table (halognn-bench-kernels --device cuda)"
  "$bin/halognn-bench-kernels" --device cuda --nodes 1000000 --edges 15000000 --widths 64,128,256 \
    --reps 10 --json "$out/kernels_gpu.json" > "$out/kernels_gpu.txt" 2>&1 || rc=$?
  cat "$out/kernels_gpu.txt"
  fi

  if [[ ",$steps," == *",pyg,"* ]]; then
  echo "== halognn against PyTorch Geometric (launch/bench_pyg.py)"
  PYTHONUNBUFFERED=1 python3 "$src/launch/bench_pyg.py" --bin "$bin" --work "${work:-$(mktemp -d)}" \
    --sizes "$sizes" --json "$out/pyg.jsonl" "${pyg_extra[@]}" > "$out/pyg.txt" 2>&1 || rc=$?
  sed -n '/^nodes/,$p' "$out/pyg.txt"
  [[ $rc == 0 ]] || tail -n 20 "$out/pyg.txt"
  fi
  echo "logs in $out"
  return "$rc"
}

case "$cmd" in
  pack) pack "$@" ;;
  run) run "$@" ;;
  *) echo "usage: $0 pack [--build BUILD] [DIR] | run [DIR] [--steps S] [--sizes L] [--work W] [-- ...]" >&2; exit 2 ;;
esac
