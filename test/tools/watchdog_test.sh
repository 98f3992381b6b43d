#!/usr/bin/env bash
# usage: watchdog_test.sh BIN_DIR MPIEXEC RANKS
# A training run whose rank RANKS-1 is stopped (SIGSTOP) after it finished an epoch must end on
# every rank within --comm-timeout + 10 s: mpirun exits non-zero, each rank that reports says in
# one line which rank it is and which operation timed out, no rank process is left (the stopped
# one included), and the metrics file holds the epochs that finished, each a complete JSON line.
set -u
bin=$1
mpiexec=$2
np=${3:-2}
timeout_s=3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
mpipid=
cleanup() {
  # Whatever is left of the run (only on failure): resume and kill our own processes by pid.
  for f in "$work"/pid.*; do
    [[ -f $f ]] || continue
    kill -CONT "$(cat "$f")" 2>/dev/null
    kill -KILL "$(cat "$f")" 2>/dev/null
  done
  [[ -n $mpipid ]] && kill -KILL "$mpipid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin/halognn-data" generate --out "$work/ds" --nodes 400 --edges 2000 --classes 3 --features 8 \
  --seed 5 >/dev/null || fail "cannot generate the fixture"
"$bin/halognn-partition" --data "$work/ds" --parts "$np" --out "$work/p" >/dev/null ||
  fail "cannot partition the fixture"

# Each rank records its pid and then becomes halognn-train (exec keeps the pid).
cat >"$work/rank.sh" <<'SH'
#!/usr/bin/env bash
echo $$ >"$PIDDIR/pid.$OMPI_COMM_WORLD_RANK"
exec "$@"
SH
chmod +x "$work/rank.sh"
PIDDIR=$work "$mpiexec" -n "$np" --oversubscribe -x PIDDIR "$work/rank.sh" "$bin/halognn-train" \
  --partition "$work/p" --epochs 100000000 --quiet --metrics "$work/m.jsonl" \
  --comm-timeout "$timeout_s" >"$work/out" 2>"$work/err" &
mpipid=$!

# Stop the last rank once an epoch has finished (its line is in the metrics file).
for _ in $(seq 1200); do
  [[ -s $work/m.jsonl && $(ls "$work"/pid.* 2>/dev/null | wc -l) -eq $np ]] && break
  kill -0 "$mpipid" 2>/dev/null || { cat "$work/err"; fail "the run ended before it was stopped"; }
  sleep 0.1
done
[[ -s $work/m.jsonl ]] || fail "no epoch finished within 120 s"
victim=$((np - 1))
kill -STOP "$(cat "$work/pid.$victim")"
start=$(date +%s%N)

# Wait for mpirun, at most timeout + 10 s (then it counts as a hang).
limit=$((timeout_s + 10))
while kill -0 "$mpipid" 2>/dev/null; do
  (( ($(date +%s%N) - start) / 1000000000 > limit + 5 )) && { cat "$work/err"; fail "hang: mpirun still running after $((limit + 5)) s"; }
  sleep 0.1
done
wait "$mpipid"
rc=$?
mpipid=
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "mpirun exit $rc after ${took_ms} ms (rank $victim stopped, --comm-timeout $timeout_s)"
[[ $rc -ne 0 ]] || fail "exit status 0"
(( took_ms <= limit * 1000 )) || fail "took ${took_ms} ms, more than ${limit} s"
lines=$(grep -c "^halognn-train: " "$work/err")
grep "^halognn-train: " "$work/err"
grep -Eq "^halognn-train: rank [0-9]+: .+ has been blocked for [0-9.]+ s \(communication timeout $timeout_s s, --comm-timeout\)" "$work/err" ||
  { cat "$work/err"; fail "no watchdog line naming the rank and the operation"; }
# One line per rank that saw its own wait time out (mpirun resumes the stopped rank with SIGCONT
# before killing it, so it may report too), and nothing else from halognn-train.
(( lines >= 1 && lines <= np )) || { cat "$work/err"; fail "expected 1..$np halognn-train lines, got $lines"; }
grep "^halognn-train: " "$work/err" | grep -vq "has been blocked for" && fail "other halognn-train lines"
# Every rank process is gone (a zombie has exited; it only waits to be reaped).
for r in $(seq 0 $((np - 1))); do
  pid=$(cat "$work/pid.$r")
  state=$(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' ')
  [[ -z $state || $state == Z* ]] || fail "rank $r (pid $pid) is still there (state $state)"
done
# The metrics file keeps every finished epoch, each line complete.
/usr/bin/python3 - "$work/m.jsonl" <<'PY' || fail "metrics file is not complete JSON lines"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
epochs = [json.loads(l)["epoch"] for l in lines]
assert epochs == list(range(len(epochs))) and epochs, epochs[:5]
print(f"metrics file: {len(epochs)} complete epoch lines")
PY
echo "ok"
