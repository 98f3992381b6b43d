#!/usr/bin/env bash
# usage: bad_input_test.sh BIN_DIR MPIEXEC
# Each case runs a tool on bad input under a 60 s limit and checks: exit status non-zero (mpirun
# returns non-zero when any rank does; each rank's own status is checked through the per-rank
# output files of --output-filename), exactly one error line on stderr naming the problem, and no
# temporary files left behind.
set -u
bin=$1
mpiexec=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error NAME PATTERN COMMAND...: non-zero exit, stderr has exactly one line matching
# PATTERN among the tool's own lines, and finishes within 60 s.
expect_error() {
  local name=$1 pattern=$2
  shift 2
  local start=$SECONDS
  timeout 60 "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  local took=$((SECONDS - start))
  if [[ $rc -eq 0 ]]; then fail "$name: exit status 0"; return; fi
  if [[ $rc -eq 124 ]]; then fail "$name: hung (killed after 60 s)"; return; fi
  local lines
  lines=$(grep -c "^halognn-[a-z]*: " "$work/err")
  if [[ $lines -ne 1 ]]; then fail "$name: expected one error line, got $lines:"; cat "$work/err"; return; fi
  if ! grep -q -- "$pattern" "$work/err"; then fail "$name: error does not mention '$pattern':"; cat "$work/err"; return; fi
  echo "ok: $name (exit $rc, ${took} s): $(grep "^halognn-" "$work/err")"
}

# A small valid dataset and a 2-part partition to break in different ways.
"$bin/halognn-data" generate --out "$work/ds" --nodes 400 --edges 2000 --classes 3 --features 8 \
  --seed 5 >/dev/null || { echo "FAIL: cannot generate the fixture"; exit 1; }
"$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/p2" >/dev/null ||
  { echo "FAIL: cannot partition the fixture"; exit 1; }
mpi2=("$mpiexec" -n 2 --oversubscribe)

# halognn-train
expect_error "train: world size mismatch" "2 parts but the job has 3 ranks" \
  "$mpiexec" -n 3 --oversubscribe "$bin/halognn-train" --partition "$work/p2" --epochs 1
expect_error "train: missing partition directory" "$work/nope" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/nope" --epochs 1
cp -r "$work/p2" "$work/p2_missing"
rm "$work/p2_missing/part-00001.bin"
expect_error "train: missing rank file" "part-00001.bin" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_missing" --epochs 1
cp -r "$work/p2" "$work/p2_corrupt"
size=$(stat -c %s "$work/p2_corrupt/part-00001.bin")
printf '\xff' | dd of="$work/p2_corrupt/part-00001.bin" bs=1 seek=$((size / 2)) conv=notrunc status=none
expect_error "train: corrupted rank file" "part-00001.bin" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_corrupt" --epochs 1
cp -r "$work/p2" "$work/p2_trunc"
truncate -s 100 "$work/p2_trunc/part-00000.bin"
expect_error "train: truncated rank file" "part-00000.bin" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_trunc" --epochs 1
expect_error "train: unknown flag" "unrecognised\|unrecognized" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --bogus-flag 3
expect_error "train: bad flag value" "unknown model .gcnii." \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --model gcnii
expect_error "train: option the model would ignore" "--attention-dropout applies to --model gat" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --model gcn --attention-dropout 0.5
expect_error "train: ROC AUC of a 3-class task" "roc-auc needs a binary" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --metric roc-auc
expect_error "train: bad codec" "q3" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --codec q3
expect_error "train: missing config file" "$work/none.cfg" \
  "${mpi2[@]}" "$bin/halognn-train" --config "$work/none.cfg"
expect_error "train: metrics path not writable" "$work/no/such/dir/m.jsonl" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --quiet --metrics "$work/no/such/dir/m.jsonl"

# halognn-partition and halognn-data
expect_error "partition: missing dataset" "$work/none" \
  "$bin/halognn-partition" --data "$work/none" --parts 2 --out "$work/px"
cp -r "$work/ds" "$work/ds_bad"
head -c 100 "$work/ds/features.npy" >"$work/ds_bad/features.npy"
expect_error "partition: truncated features" "features.npy" \
  "$bin/halognn-partition" --data "$work/ds_bad" --parts 2 --out "$work/px"
expect_error "partition: bad parts" "--parts" \
  "$bin/halognn-partition" --data "$work/ds" --parts 0 --out "$work/px"
expect_error "data: inspect missing" "$work/none" "$bin/halognn-data" inspect "$work/none"
expect_error "data: unknown command" "frobnicate" "$bin/halognn-data" frobnicate
expect_error "data: absurd generator knob" "--class-overlap" \
  "$bin/halognn-data" generate --out "$work/gx" --nodes 100 --edges 300 --class-overlap 2
[[ ! -e $work/gx ]] || fail "a failed generate left $work/gx"

# Nothing half-written: no temporary names left anywhere, no output for the failed partitions.
left=$(find "$work" -name '*.tmp.*' | head -5)
[[ -z $left ]] || fail "temporary files left behind: $left"
[[ ! -e $work/px ]] || fail "a failed halognn-partition left $work/px"

echo "$failures failed"
[[ $failures -eq 0 ]]
