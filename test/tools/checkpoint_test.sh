#!/usr/bin/env bash
# usage: checkpoint_test.sh BIN_DIR MPIEXEC NP
# Checkpoints and saved models end to end, through the tools, at NP ranks:
#  - a run stopped after epoch 4 whose last checkpoint was cut short (no manifest), resumed with
#    the same command plus --resume, equals an uninterrupted run: every epoch's loss and the
#    saved parameters, bit for bit;
#  - the metrics file continues where the checkpoint left off: each epoch once, one final line;
#  - --keep-checkpoints 2 leaves the two newest complete checkpoints (and no leftover);
#  - the saved model reads with numpy under the documented names, and halognn-predict gives the
#    trainer's final test accuracy (of the model it saves), for a residual model too; a model that
#    does not fit a partition is refused.
set -u
bin=$1
mpiexec=$2
np=${3:-2}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# run NAME COMMAND...: must exit 0 within 120 s.
run() {
  local name=$1
  shift
  if ! timeout 120 "$@" >"$work/out" 2>"$work/err"; then
    fail "$name: exit status non-zero"
    cat "$work/out" "$work/err"
    return 1
  fi
  echo "ok: $name"
}

"$bin/halognn-data" generate --out "$work/ds" --nodes 600 --edges 3000 --classes 4 --features 12 \
  --seed 5 >/dev/null || { echo "FAIL: cannot generate the fixture"; exit 1; }
"$bin/halognn-partition" --data "$work/ds" --parts "$np" --out "$work/p" >/dev/null ||
  { echo "FAIL: cannot partition the fixture"; exit 1; }
"$bin/halognn-partition" --data "$work/ds" --parts 1 --out "$work/p1" >/dev/null ||
  { echo "FAIL: cannot partition the fixture for 1 rank"; exit 1; }

# Pipelined, really stale (one synchronous epoch only), smoothed, dropout on, GraphSAGE, 3 layers.
loud=("$mpiexec" -n "$np" --oversubscribe "$bin/halognn-train" --partition "$work/p"
      --model sage --layers 3 --hidden 16 --exchange pipelined --sync-every 100 --smoothing 0.3
      --seed 3)
train=("${loud[@]}" --quiet)
ck=(--checkpoint-dir "$work/ck" --checkpoint-every 2 --keep-checkpoints 2)

run "uninterrupted 8 epochs" "${train[@]}" --epochs 8 --metrics "$work/full.jsonl" \
  --save-model "$work/full.npz"
run "first 5 epochs with checkpoints" "${train[@]}" --epochs 5 --metrics "$work/m.jsonl" "${ck[@]}"
ls "$work/ck" >"$work/ls1"
[[ "$(tr '\n' ' ' <"$work/ls1")" == "epoch-000003 epoch-000004 " ]] ||
  fail "after epochs 1, 3, 4 with --keep-checkpoints 2: expected epoch-000003 epoch-000004, got $(cat "$work/ls1")"
# As if the job was killed while writing the checkpoint after epoch 4: no manifest yet.
rm "$work/ck/epoch-000004/manifest.json"
run "resumed to 8 epochs" "${train[@]}" --epochs 8 --metrics "$work/m.jsonl" "${ck[@]}" \
  --resume "$work/ck" --save-model "$work/resumed.npz"
ls "$work/ck" >"$work/ls2"
[[ "$(tr '\n' ' ' <"$work/ls2")" == "epoch-000005 epoch-000007 " ]] ||
  fail "after resuming: expected epoch-000005 epoch-000007 (keep 2; the incomplete epoch-000004 removed), got $(cat "$work/ls2")"
left=$(find "$work/ck" -name '*.tmp.*' | head -3)
[[ -z $left ]] || fail "temporary files left in the checkpoint directory: $left"
# Quiet runs print nothing but the summary line; the resume is announced without --quiet.
"${loud[@]}" --epochs 9 --resume "$work/ck" --eval-every 3 >"$work/out" 2>&1 ||
  fail "resume without --quiet failed: $(tail -3 "$work/out")"
grep -q "resuming from $work/ck/epoch-000007 (after epoch 7; continuing with epoch 8)" "$work/out" ||
  fail "the resume is not announced: $(head -5 "$work/out")"

/usr/bin/python3 - "$work" <<'PY' || { fail "resumed run differs from the uninterrupted one (see above)"; false; }
import json, sys
import numpy as np
w = sys.argv[1]
def lines(p):
    return [json.loads(l) for l in open(p)]
full, resumed = lines(w + "/full.jsonl"), lines(w + "/m.jsonl")
epochs = [l["epoch"] for l in resumed if "epoch" in l and "event" not in l]
ok = True
if epochs != list(range(8)):
    print("metrics epochs after resuming:", epochs); ok = False
if [l.get("event") for l in resumed if "event" in l] != ["final"] or resumed[-1].get("event") != "final":
    print("expected exactly one final line, at the end"); ok = False
for a, b in zip([l for l in full if "event" not in l], [l for l in resumed if "event" not in l]):
    # JSON doubles round-trip: equal text is equal bits.
    if json.dumps(a["loss"]) != json.dumps(b["loss"]) or a["val_acc"] != b["val_acc"]:
        print("epoch", a["epoch"], "loss", a["loss"], "uninterrupted,", b["loss"], "resumed"); ok = False
fa, fb = full[-1], resumed[-1]
for k in ("best_epoch", "best_val_acc", "test_acc_at_best_val"):
    if fa[k] != fb[k]:
        print(k, fa[k], "uninterrupted,", fb[k], "resumed"); ok = False
za, zb = np.load(w + "/full.npz"), np.load(w + "/resumed.npz")
if sorted(za.files) != sorted(zb.files):
    print("model arrays differ:", za.files, zb.files); ok = False
for k in za.files:
    # "config" records each run's own --epochs, --metrics, --resume: the parameters must agree.
    if k != "config" and za[k].tobytes() != zb[k].tobytes():
        print("model array", k, "differs after resuming"); ok = False
# The documented names and shapes (SAGE): layer<l>.weight_self, .weight_neigh (in x out),
# layer<l>.bias (1 x out), halognn_model, config.
cfg = json.loads(str(za["config"]))
if int(za["halognn_model"]) != 1 or cfg["model"] != "sage" or cfg["layers"] != 3:
    print("model metadata:", int(za["halognn_model"]), cfg.get("model"), cfg.get("layers")); ok = False
if za["layer0.bias"].shape != (1, 16) or za["layer2.bias"].shape != (1, 4) or za["layer0.weight_self"].shape != (12, 16) or za["layer1.weight_neigh"].dtype != np.float32:
    print("model shapes:", {k: za[k].shape for k in za.files}); ok = False
sys.exit(0 if ok else 1)
PY
[[ $? -eq 0 ]] && echo "ok: resumed run equals the uninterrupted one (losses, metrics lines, best record, model bytes)"

# halognn-predict: the trainer's final scores of the model it ends with and saves (the restored
# best model by default; exact exchanges: fp32 codecs).
want=$(/usr/bin/python3 -c "
import json; l=[json.loads(x) for x in open('$work/full.jsonl') if '\"event\"' in x]
print('%.4f' % l[-1]['final_test_acc'])")
run "predict at $np ranks" "$mpiexec" -n "$np" --oversubscribe "$bin/halognn-predict" \
  --partition "$work/p" --model "$work/full.npz"
got=$(sed -n 's/.* test \([0-9.]*\) .*/\1/p' "$work/out")
[[ $got == "$want" ]] || fail "halognn-predict test accuracy $got, the trainer's final $want: $(cat "$work/out")"
echo "ok: predict test accuracy $got = the trainer's $want"
run "predict at 1 rank" "$mpiexec" -n 1 "$bin/halognn-predict" --partition "$work/p1" \
  --model "$work/full.npz"
got1=$(sed -n 's/.* test \([0-9.]*\) .*/\1/p' "$work/out")
# One rank sums in another order; the accuracy may move by a tie at most.
/usr/bin/python3 -c "import sys; sys.exit(0 if abs($got1 - $want) <= 0.01 else 1)" ||
  fail "halognn-predict at 1 rank: test accuracy $got1, the trainer's $want"

# A residual model (its architecture is part of the saved configuration): predict rebuilds the
# residual blocks, and gives the trainer's final test accuracy.
run "train residual" "$mpiexec" -n "$np" --oversubscribe "$bin/halognn-train" --partition "$work/p" \
  --model gcn --architecture residual --layers 2 --hidden 16 --dropout 0.2 --epochs 8 --seed 4 \
  --quiet --metrics "$work/res.jsonl" --save-model "$work/res.npz"
want=$(/usr/bin/python3 -c "
import json; l=[json.loads(x) for x in open('$work/res.jsonl') if '\"event\"' in x]
print('%.4f' % l[-1]['final_test_acc'])")
run "predict residual at $np ranks" "$mpiexec" -n "$np" --oversubscribe "$bin/halognn-predict" \
  --partition "$work/p" --model "$work/res.npz"
got=$(sed -n 's/.* test \([0-9.]*\) .*/\1/p' "$work/out")
if [[ -n $got && $got == "$want" ]]; then
  echo "ok: predict of a residual model: test accuracy $got = the trainer's $want"
else
  fail "halognn-predict of a residual model: test accuracy $got, the trainer's final $want: $(cat "$work/out")"
fi

# A model that does not fit: other feature count.
"$bin/halognn-data" generate --out "$work/ds9" --nodes 600 --edges 3000 --classes 4 --features 9 \
  --seed 5 >/dev/null
"$bin/halognn-partition" --data "$work/ds9" --parts 1 --out "$work/p9" >/dev/null
timeout 60 "$mpiexec" -n 1 "$bin/halognn-predict" --partition "$work/p9" --model "$work/full.npz" \
  >"$work/out" 2>"$work/err"
rc=$?
[[ $rc -ne 0 && $(grep -c "^halognn-predict: " "$work/err") -eq 1 ]] &&
  grep -q "full.npz: array 'layer0.weight_self' has shape (12, 16), this run needs (9, 16)" "$work/err" ||
  fail "a model of another feature count: exit $rc, $(cat "$work/err")"
echo "ok: a model that does not fit the partition is refused: $(cat "$work/err")"
timeout 60 "$mpiexec" -n 1 "$bin/halognn-predict" --partition "$work/p1" --model "$work/p1/manifest.json" \
  >"$work/out" 2>"$work/err"
[[ $? -ne 0 ]] && grep -q "manifest.json: not a ZIP archive" "$work/err" ||
  fail "a file that is no model: $(cat "$work/err")"

echo "$failures failed"
[[ $failures -eq 0 ]]
