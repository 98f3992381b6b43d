#!/usr/bin/env bash
# usage: bad_input_test.sh BIN_DIR MPIEXEC
# Each case runs a tool on bad input under a 60 s limit and checks: exit status non-zero (mpirun
# returns non-zero when any rank does; each rank's own status is checked through the per-rank
# output files of --output-filename), exactly one error line on stderr naming the problem, and no
# temporary files left behind.
set -u
bin=$1
mpiexec=$2
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

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
  lines=$(grep -c "^halognn-[a-z-]*: " "$work/err")
  if [[ $lines -ne 1 ]]; then fail "$name: expected one error line, got $lines:"; cat "$work/err"; return; fi
  if ! grep -q -- "$pattern" "$work/err"; then fail "$name: error does not mention '$pattern':"; cat "$work/err"; return; fi
  echo "ok: $name (exit $rc, ${took} s): $(grep "^halognn-" "$work/err")"
}

# expect_ok NAME PATTERN COMMAND...: exit 0 within 60 s and stdout matches PATTERN.
expect_ok() {
  local name=$1 pattern=$2
  shift 2
  timeout 60 "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [[ $rc -ne 0 ]]; then fail "$name: exit status $rc:"; cat "$work/err"; return; fi
  if ! grep -q -- "$pattern" "$work/out"; then fail "$name: output does not mention '$pattern':"; cat "$work/out"; return; fi
  echo "ok: $name: $(grep -m1 -- "$pattern" "$work/out")"
}

# forge FILE OFFSET FORMAT VALUE: overwrites a field of a rank file (struct FORMAT at OFFSET),
# repairs its CRC32 trailer and the manifest's entry beside it: a forged or buggy file that passes
# every checksum.
forge() {
  /usr/bin/python3 - "$@" <<'PY'
import json, os, struct, sys, zlib
path, offset, fmt, value = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4], 0)
b = bytearray(open(path, "rb").read())
struct.pack_into(fmt, b, offset, value)
crc = zlib.crc32(bytes(b[:-4])) & 0xffffffff
struct.pack_into("<I", b, len(b) - 4, crc)
open(path, "wb").write(b)
mpath = os.path.join(os.path.dirname(path), "manifest.json")
m = json.load(open(mpath))
for f in m["files"]:
    if f["file"] == os.path.basename(path):
        f["crc32"], f["bytes"] = crc, len(b)
json.dump(m, open(mpath, "w"), indent=2)
PY
}
# set_manifest DIR KEY.PATH VALUE: sets one manifest value (JSON literal).
set_manifest() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, keys, value = sys.argv[1] + "/manifest.json", sys.argv[2].split("."), json.loads(sys.argv[3])
m = json.load(open(path))
o = m
for k in keys[:-1]:
    o = o[k]
o[keys[-1]] = value
json.dump(m, open(path, "w"), indent=2)
PY
}
# A pid no process has (for leftovers of "killed" runs).
dead_pid() { bash -c 'echo $$'; }

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

expect_error "train: semantic rows without groups" "no semantic groups" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --halo-rows semantic
"$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/p2g" --groups semantic >/dev/null ||
  fail "cannot partition the fixture with semantic groups"
cp -r "$work/p2g" "$work/p2g_trunc"
truncate -s 40 "$work/p2g_trunc/groups-00001.bin"
expect_error "train: truncated groups file" "groups-00001.bin" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2g_trunc" --epochs 1 --halo-rows semantic
expect_error "partition: --drop-o2o without groups" "--groups semantic" \
  "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/px" --drop-o2o
# Forged rank files that pass their checksums, and manifests that disagree with them.
cp -r "$work/p2" "$work/p2_hugef"
forge "$work/p2_hugef/part-00000.bin" 48 "<q" $((1 << 60))
expect_error "train: rank file header claims F = 2^60" "part-00000.bin: header sizes overflow" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_hugef" --epochs 1
cp -r "$work/p2" "$work/p2_classes"
set_manifest "$work/p2_classes" dataset.num_classes 2000000000
expect_error "train: manifest claims num_classes = 2*10^9" "classes but the manifest says 2000000000" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_classes" --epochs 1
cp -r "$work/p2" "$work/p2_classes_all"
set_manifest "$work/p2_classes_all" dataset.num_classes 2000000000
forge "$work/p2_classes_all/part-00000.bin" 56 "<i" 2000000000
forge "$work/p2_classes_all/part-00001.bin" 56 "<i" 2000000000
expect_error "train: partition with num_classes = 2*10^9 throughout" "largest term is output (logits, labels).*num_classes = 2000000000" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_classes_all" --epochs 1
cp -r "$work/p2" "$work/p2_features"
set_manifest "$work/p2_features" dataset.num_features 9
expect_error "train: manifest feature count differs" "features per node but the manifest says 9" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_features" --epochs 1
cp -r "$work/p2" "$work/p2_v1"
set_manifest "$work/p2_v1" version 1
expect_error "train: partition of the older format" "version 1, this build reads versions 2 and 3; re-run halognn-partition" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_v1" --epochs 1
# Two random partitions of the same data (same part sizes), with part 1 of the second given the
# first's run id: every file is valid on its own; only the ranks together can see the mix-up.
"$bin/halognn-partition" --data "$work/ds" --parts 2 --method random --seed 1 --out "$work/pr1" >/dev/null
"$bin/halognn-partition" --data "$work/ds" --parts 2 --method random --seed 2 --out "$work/pr2" >/dev/null
cp "$work/pr2/part-00001.bin" "$work/pr1/part-00001.bin"
forge "$work/pr1/part-00001.bin" 88 "<Q" "0x$(/usr/bin/python3 -c "import json;print(json.load(open('$work/pr1/manifest.json'))['run_id'])")"
expect_error "train: send/receive counts of two runs mixed" "halo rows from rank [01] but .*part-0000[01].bin sends" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/pr1" --epochs 1
cp -r "$work/p2" "$work/p2_mixed"
cp "$work/pr2/part-00001.bin" "$work/p2_mixed/part-00001.bin"
set_manifest "$work/p2_mixed" files "$(/usr/bin/python3 -c "
import json; a=json.load(open('$work/p2/manifest.json'))['files']; b=json.load(open('$work/pr2/manifest.json'))['files']
print(json.dumps([a[0], b[1]]))")"
expect_error "train: rank file of another partition run" "part-00001.bin: written by partition run" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2_mixed" --epochs 1

# Absurd options: a bound, or the memory estimate, refuses each naming the option.
expect_error "train: --hidden 1e8" "--hidden" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --hidden 1e8
expect_error "train: --hidden 100000000" "--hidden 100000000 is outside" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --hidden 100000000
expect_error "train: --layers 100000" "--layers 100000 is outside" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --layers 100000
expect_error "train: --heads 10^6" "--heads 1000000 is outside" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --model gat --heads 1000000
expect_error "train: --emulate-link 1e-12" "--emulate-link: bandwidth" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --emulate-link 1e-12
expect_error "train: --lr inf" "--lr must be a finite number" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --lr inf
expect_error "train: --hidden within bounds, beyond the memory budget" "largest term is activations.*driven by --hidden, --layers" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --hidden 1000000 --memory-budget 1
expect_ok "train: --dry-run prints the estimate and does not train" "dry run: the estimate fits" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --dry-run
grep -q "exchange buffers" "$work/out" || fail "--dry-run printed no breakdown"
grep -q "^epoch" "$work/out" && fail "--dry-run trained"
expect_error "train: a diverging run (NaN loss) exits non-zero" "training diverged: the loss of epoch [0-9]* is" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --lr 1e30 --epochs 50 --quiet --metrics "$work/nan.jsonl"
/usr/bin/python3 -c "
import json,sys; l=[json.loads(x) for x in open('$work/nan.jsonl')]
sys.exit(0 if l[-1].get('event') == 'diverged' and all('epoch' in x for x in l[:-1]) else 1)" ||
  fail "diverged run: metrics file does not end with the diverged event"

# Checkpoints: --resume refuses another rank count, partition, model or option, and corrupt,
# truncated or incomplete checkpoints, each in one line naming what differs or the file.
"${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 2 --quiet --checkpoint-dir "$work/ck" \
  >/dev/null 2>&1 || fail "cannot write the checkpoint fixture"
[[ -f $work/ck/epoch-000001/manifest.json ]] || fail "no checkpoint after the last epoch"
"$bin/halognn-partition" --data "$work/ds" --parts 3 --out "$work/p3" >/dev/null
expect_error "train: resume at another rank count" "written by 2 rank(s), this job has 3" \
  "$mpiexec" -n 3 --oversubscribe "$bin/halognn-train" --partition "$work/p3" --epochs 4 --resume "$work/ck"
expect_error "train: resume on another partition" "trained on partition run [0-9a-f]*, but $work/pr2 is partition run" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/pr2" --epochs 4 --resume "$work/ck"
expect_error "train: resume with another model" "--model differs: the checkpoint was written with \"gcn\", this run has \"sage\"" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 4 --resume "$work/ck" --model sage
expect_error "train: resume with another --hidden" "--hidden differs: the checkpoint was written with 16, this run has 32 (only --partition, .*--epochs" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 4 --resume "$work/ck" --hidden 32
expect_error "train: resume with nothing left to train" "after epoch 1, so --epochs 2 leaves nothing to train" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 2 --resume "$work/ck"
cp -r "$work/ck" "$work/ck_corrupt"
size=$(stat -c %s "$work/ck_corrupt/epoch-000001/rank-00001.npz")
printf '\xff' | dd of="$work/ck_corrupt/epoch-000001/rank-00001.npz" bs=1 seek=$((size / 2)) conv=notrunc status=none
expect_error "train: resume from a corrupt rank file" "rank 1 failed: $work/ck_corrupt/epoch-000001/rank-00001.npz: checksum mismatch" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 4 --resume "$work/ck_corrupt"
cp -r "$work/ck" "$work/ck_trunc"
truncate -s 200 "$work/ck_trunc/epoch-000001/rank-00000.npz"
expect_error "train: resume from a truncated rank file" "$work/ck_trunc/epoch-000001/rank-00000.npz: truncated: 200 bytes" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 4 --resume "$work/ck_trunc"
cp -r "$work/ck" "$work/ck_nomanifest"
rm "$work/ck_nomanifest/epoch-000001/manifest.json"
expect_error "train: resume without a manifest" "$work/ck_nomanifest: --resume: no complete checkpoint here" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 4 --resume "$work/ck_nomanifest"
expect_error "train: a fresh run into a directory with checkpoints" "--checkpoint-dir $work/ck already holds checkpoint .* of another run" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 4 --checkpoint-dir "$work/ck"
expect_error "train: --checkpoint-every without --checkpoint-dir" "--checkpoint-every and --keep-checkpoints need --checkpoint-dir" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 4 --checkpoint-every 2
expect_error "train: --save-model is a directory" "is a directory; --save-model needs a file name" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --save-model "$work"

# --metrics: checked at start-up, inputs never overwritten, the OS's reason reported.
cp "$work/p2/manifest.json" "$work/manifest.copy"
expect_error "train: --metrics is a directory" "is a directory; --metrics needs a file name" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --quiet --metrics "$work"
expect_error "train: --metrics is an input" "lies inside .*an input of this run" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --quiet --metrics "$work/p2/manifest.json"
cmp -s "$work/p2/manifest.json" "$work/manifest.copy" || fail "--metrics overwrote the partition manifest"
echo '{"partition": "'"$work/p2"'", "epochs": 1}' >"$work/run.json"
expect_error "train: --metrics is the config file" "run.json, an input of this run" \
  "${mpi2[@]}" "$bin/halognn-train" --config "$work/run.json" --quiet --metrics "$work/run.json"
echo "my notes" >"$work/notes.txt"
expect_error "train: --metrics is someone's file" "not a halognn metrics file" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --quiet --metrics "$work/notes.txt"
expect_error "train: --metrics on a full disk" "write failed: No space left on device" \
  "${mpi2[@]}" "$bin/halognn-train" --partition "$work/p2" --epochs 1 --quiet --metrics /dev/full

# Leftovers of killed runs ("<out>.tmp.<pid>" of a pid that is gone) are removed and reported.
stale=$(dead_pid)
mkdir -p "$work/p2.tmp.$stale" && echo junk >"$work/p2.tmp.$stale/part-00000.bin"
expect_ok "partition: a killed run's leftover is removed and reported" "removed $work/p2.tmp.$stale, left behind by a run that was killed" \
  "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/p2"
[[ ! -e $work/p2.tmp.$stale ]] || fail "the partition leftover is still there"
mkdir -p "$work/ds.tmp.$stale"
expect_ok "data: a killed run's leftover is removed and reported" "removed $work/ds.tmp.$stale, left behind" \
  "$bin/halognn-data" generate --out "$work/ds" --nodes 400 --edges 2000 --classes 3 --features 8 --seed 5
[[ ! -e $work/ds.tmp.$stale ]] || fail "the dataset leftover is still there"

# halognn-partition and halognn-data
expect_error "partition: missing dataset" "$work/none" \
  "$bin/halognn-partition" --data "$work/none" --parts 2 --out "$work/px"
cp -r "$work/ds" "$work/ds_bad"
head -c 100 "$work/ds/features.npy" >"$work/ds_bad/features.npy"
expect_error "partition: truncated features" "features.npy" \
  "$bin/halognn-partition" --data "$work/ds_bad" --parts 2 --out "$work/px"
expect_error "partition: bad parts" "--parts" \
  "$bin/halognn-partition" --data "$work/ds" --parts 0 --out "$work/px"
expect_error "partition: sparsify k out of range" "--sparsify-features must be in \\[1, 128\\]" \
  "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/px" --sparsify-features 129
expect_error "data: inspect missing" "$work/none" "$bin/halognn-data" inspect "$work/none"
cp -r "$work/ds" "$work/ds_dir"
rm "$work/ds_dir/features.npy" && mkdir "$work/ds_dir/features.npy"
expect_error "partition: a .npy path that is a directory" "features.npy: is a directory, not a file" \
  "$bin/halognn-partition" --data "$work/ds_dir" --parts 2 --out "$work/px"
# --method parmetis under mpirun: every rank exits non-zero, rank 0 alone prints the line.
expect_error "partition parmetis: truncated features (2 ranks)" "features.npy" \
  "${mpi2[@]}" "$bin/halognn-partition" --data "$work/ds_bad" --parts 3 --out "$work/px" --method parmetis
expect_error "partition parmetis: a .npy path that is a directory (2 ranks)" "features.npy: is a directory" \
  "${mpi2[@]}" "$bin/halognn-partition" --data "$work/ds_dir" --parts 2 --out "$work/px" --method parmetis
expect_error "partition parmetis: semantic groups refused (2 ranks)" "--groups semantic is not supported" \
  "${mpi2[@]}" "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/px" --method parmetis --groups semantic
expect_error "partition parmetis: an unknown option (2 ranks)" "unrecognised option\\|unrecognized option" \
  "${mpi2[@]}" "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/px" --method parmetis --frobnicate
expect_error "partition: metis under mpirun refused (2 ranks)" "use --method parmetis" \
  "${mpi2[@]}" "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/px"
expect_error "partition: --sample-degree without parmetis" "--sample-degree needs --method parmetis" \
  "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/px" --sample-degree 8
expect_error "partition parmetis: a negative --sample-degree (2 ranks)" "--sample-degree must be non-negative" \
  "${mpi2[@]}" "$bin/halognn-partition" --data "$work/ds" --parts 2 --out "$work/px" --method parmetis --sample-degree -1
expect_ok "partition parmetis: 2 ranks, 3 parts" "edge cut" \
  "${mpi2[@]}" "$bin/halognn-partition" --data "$work/ds" --parts 3 --out "$work/pp3" --method parmetis
expect_error "data: unknown command" "frobnicate" "$bin/halognn-data" frobnicate
expect_error "data: absurd generator knob" "--class-overlap" \
  "$bin/halognn-data" generate --out "$work/gx" --nodes 100 --edges 300 --class-overlap 2
[[ ! -e $work/gx ]] || fail "a failed generate left $work/gx"
expect_error "data: unknown preset" "--preset must be one of default, products, reddit (got 'arxiv')" \
  "$bin/halognn-data" generate --out "$work/gx" --preset arxiv
[[ ! -e $work/gx ]] || fail "a failed generate left $work/gx"
# A preset sets the shape; options on the command line override it (here: a small products).
expect_ok "data: products preset, scaled down" "3000 nodes, .* 100 features, 47 classes" \
  "$bin/halognn-data" generate --out "$work/gp" --preset products --nodes 3000 --edges 30000

# Sparsified datasets (halognn-data sparsify): options that contradict the stored form, and
# malformed sparsified files, each refused in one line naming the option or the file.
"$bin/halognn-data" sparsify --data "$work/ds" --out "$work/ds_k2" --k 2 >/dev/null ||
  fail "cannot sparsify the fixture"
expect_error "partition: another k than the sparsified dataset's" "--sparsify-features 3: $work/ds_k2 holds features sparsified with k = 2 already" \
  "$bin/halognn-partition" --data "$work/ds_k2" --parts 2 --out "$work/px" --sparsify-features 3
expect_error "partition: a codebook sample for a sparsified dataset" "--sparsify-sample: $work/ds_k2 holds features sparsified already (k = 2, codebook from about 100000 nodes, seed 1); its codebook is fixed" \
  "$bin/halognn-partition" --data "$work/ds_k2" --parts 2 --out "$work/px" --sparsify-features 2 --sparsify-sample 50
expect_error "data: sparsify a sparsified dataset" "--data $work/ds_k2 holds features sparsified already (k = 2)" \
  "$bin/halognn-data" sparsify --data "$work/ds_k2" --out "$work/sx" --k 2
expect_error "data: sparsify into the input dataset" "--out $work/ds is or contains the input dataset" \
  "$bin/halognn-data" sparsify --data "$work/ds" --out "$work/ds" --k 2
expect_error "data: sparsify into the input's parent" "--out $work is or contains the input dataset" \
  "$bin/halognn-data" sparsify --data "$work/ds" --out "$work" --k 2
expect_error "data: sparsify k out of range" "--k must be in \\[1, 128\\], got 200" \
  "$bin/halognn-data" sparsify --data "$work/ds" --out "$work/sx" --k 200
expect_error "data: sparsify without --k" "'--k' is required" \
  "$bin/halognn-data" sparsify --data "$work/ds" --out "$work/sx"
expect_error "data: sparsify a truncated features.npy" "$work/ds_bad/features.npy: truncated .npy header" \
  "$bin/halognn-data" sparsify --data "$work/ds_bad" --out "$work/sx" --k 2
expect_error "data: --sparsify-sample without --sparsify-features" "--sparsify-sample needs --sparsify-features" \
  "$bin/halognn-data" generate --out "$work/sx" --nodes 100 --edges 300 --sparsify-sample 10
[[ ! -e $work/sx ]] || fail "a failed halognn-data sparsify left $work/sx"
cp -r "$work/ds_k2" "$work/ds_k2_pos"
/usr/bin/python3 -c "
import numpy as np; p='$work/ds_k2_pos/feature_positions.npy'; a=np.load(p); a[17, 1] = 8; np.save(p, a)"
expect_error "partition: a sparsified position outside its chunk" "ds_k2_pos/feature_positions.npy: sparsified features: row 17 has a position outside its chunk" \
  "$bin/halognn-partition" --data "$work/ds_k2_pos" --parts 2 --out "$work/px"
cp -r "$work/ds_k2" "$work/ds_k2_mixed"
cp "$work/ds/features.npy" "$work/ds_k2_mixed/"
expect_error "data: inspect a dataset with both feature forms" "ds_k2_mixed/features.npy: dense features beside sparsified ones" \
  "$bin/halognn-data" inspect "$work/ds_k2_mixed"
cp -r "$work/ds_k2" "$work/ds_k2_nocb"
rm "$work/ds_k2_nocb/feature_codebook.npy"
expect_error "partition: a sparsified dataset without its codebook" "ds_k2_nocb/feature_codebook.npy: missing" \
  "$bin/halognn-partition" --data "$work/ds_k2_nocb" --parts 2 --out "$work/px"
expect_error "bench: the cosine benchmark needs dense features" "$work/ds_k2 holds sparsified features" \
  "$bin/halognn-bench-sparsify-cosine" --data "$work/ds_k2"
expect_error "bench: unknown kernel-bench device" "--device must be cpu or cuda" \
  "$bin/halognn-bench-kernels" --device tpu --nodes 1000 --edges 5000
expect_error "bench: unknown codec-bench instruction set" "unknown instruction set 'avx3'" \
  "$bin/halognn-bench-codecs" --isa avx3 --rows 10 --triad-mib 1
if [[ $("$bin/halognn-bench-kernels" --help) == *"--device"* ]] && ! command -v nvidia-smi > /dev/null; then
  expect_error "bench: the GPU kernel table without a GPU" "--device cuda: no CUDA device visible" \
    "$bin/halognn-bench-kernels" --device cuda --nodes 1000 --edges 5000
fi

# Nothing half-written: no temporary names left anywhere, no output for the failed partitions.
left=$(find "$work" -name '*.tmp.*' | head -5)
[[ -z $left ]] || fail "temporary files left behind: $left"
[[ ! -e $work/px ]] || fail "a failed halognn-partition left $work/px"

echo "$failures failed"
[[ $failures -eq 0 ]]
