#!/usr/bin/env bash
# usage: sparsify_test.sh BIN_DIR
# Sparsify once, partition many times, through the tools: `halognn-data sparsify` then
# `halognn-partition` writes the rank files that `halognn-partition --sparsify-features` writes from
# the dense dataset (byte for byte but the run id, at 2 and 4 parts, a codebook sample of 100 of
# the 400 nodes); `generate --sparsify-features` writes the arrays `sparsify` writes; inspect
# prints the sparsified form; progress appears on a terminal only.
set -u
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

gen=(--nodes 400 --edges 2000 --classes 3 --features 300 --seed 3)
"$bin/halognn-data" generate --out "$work/ds" "${gen[@]}" >/dev/null || { echo "FAIL: generate"; exit 1; }
"$bin/halognn-data" sparsify --data "$work/ds" --out "$work/sp" --k 5 --sample 100 --seed 7 \
  >"$work/out" 2>"$work/err" || { echo "FAIL: sparsify"; cat "$work/err"; exit 1; }
grep -q "k = 5 (20 positions per row, ratio 60.0)" "$work/out" || fail "sparsify report: $(cat "$work/out")"
[[ ! -s $work/err ]] || fail "sparsify wrote to stderr off a terminal: $(cat "$work/err")"
[[ ! -e $work/sp/features.npy && -f $work/sp/feature_positions.npy && -f $work/sp/feature_codebook.npy ]] ||
  fail "the sparsified dataset's files: $(ls "$work/sp")"
rows=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/sp/manifest.json'))['sparsified_features']['codebook_rows'])")
[[ $rows -gt 0 && $rows -lt 400 ]] || fail "the codebook sample is not a real sample: $rows rows"

# Rank files: equal but for the run id (header bytes 88..95) and the CRC32 trailer it changes.
same_rank_files() {
  /usr/bin/python3 - "$@" <<'PY'
import os, sys
a, b = sys.argv[1], sys.argv[2]
files = sorted(f for f in os.listdir(a) if f.startswith("part-"))
assert files == sorted(f for f in os.listdir(b) if f.startswith("part-")), "different file lists"
body = lambda p: (lambda x: x[:88] + x[96:-4])(open(p, "rb").read())
bad = [f for f in files if body(os.path.join(a, f)) != body(os.path.join(b, f))]
sys.exit("differ: " + " ".join(bad) if bad else 0)
PY
}
for parts in 2 4; do
  "$bin/halognn-partition" --data "$work/ds" --parts $parts --seed 7 --out "$work/dense.p$parts" \
    --sparsify-features 5 --sparsify-sample 100 >/dev/null || fail "partition dense, $parts parts"
  "$bin/halognn-partition" --data "$work/sp" --parts $parts --seed 7 --out "$work/sp.p$parts" \
    >"$work/out" || fail "partition sparsified, $parts parts"
  grep -q "features sparsified (as stored in the dataset): k = 5" "$work/out" ||
    fail "partition report of a sparsified dataset: $(cat "$work/out")"
  same_rank_files "$work/dense.p$parts" "$work/sp.p$parts" || fail "$parts parts: rank files differ"
  # Naming the dataset's own k changes nothing.
  "$bin/halognn-partition" --data "$work/sp" --parts $parts --seed 7 --out "$work/spk.p$parts" \
    --sparsify-features 5 >/dev/null || fail "partition sparsified with its own k, $parts parts"
  same_rank_files "$work/dense.p$parts" "$work/spk.p$parts" || fail "$parts parts, same k: rank files differ"
  [[ $(ls "$work/sp.p$parts" | grep -c '^part-') -eq $parts ]] || fail "$parts parts: rank file count"
done
echo "ok: sparsify + partition = partition --sparsify-features at 2 and 4 parts"

# generate --sparsify-features: the arrays of generate + sparsify (the codebook keyed by --seed).
"$bin/halognn-data" generate --out "$work/gsp" "${gen[@]}" --sparsify-features 5 --sparsify-sample 100 \
  >"$work/out" || fail "generate --sparsify-features"
grep -q "features sparsified: k = 5" "$work/out" || fail "generate report: $(cat "$work/out")"
"$bin/halognn-data" sparsify --data "$work/ds" --out "$work/sp3" --k 5 --sample 100 --seed 3 >/dev/null ||
  fail "sparsify --seed 3"
for f in feature_positions.npy feature_codebook.npy edges.npy labels.npy train_idx.npy; do
  cmp -s "$work/gsp/$f" "$work/sp3/$f" || fail "generate --sparsify-features and sparsify differ in $f"
done
echo "ok: generate --sparsify-features = generate + sparsify"

"$bin/halognn-data" inspect "$work/sp" >"$work/out" || fail "inspect"
grep -q "^features: 300, sparsified: k = 5 (20 positions per row, ratio 60.0); .* MiB stored against .* MiB dense fp32" \
  "$work/out" || fail "inspect: $(grep features "$work/out")"
echo "ok: inspect: $(grep '^features' "$work/out")"

# Progress: on a terminal (script(1) gives the tool one) a line on stderr, erased at the end.
if command -v script >/dev/null; then
  script -qec "'$bin/halognn-data' sparsify --data '$work/ds' --out '$work/sp_tty' --k 5" /dev/null \
    >"$work/tty" 2>&1 || fail "sparsify on a terminal"
  grep -q "sparsifying $work/ds: 400 / 400 rows (100%)" "$work/tty" ||
    fail "no progress on a terminal: $(cat -v "$work/tty")"
  echo "ok: progress on a terminal"
fi

echo "$failures failed"
[[ $failures -eq 0 ]]
