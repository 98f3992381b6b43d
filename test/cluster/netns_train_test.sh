#!/usr/bin/env bash
# usage: netns_train_test.sh BIN_DIR SOURCE_DIR
# Two hosts (network namespaces joined by a shaped 1 Gbit/s link, launch/cluster/netns_cluster.sh),
# one rank on each, Open MPI over TCP: the training must equal the same training over shared
# memory, epoch by epoch, and its halo traffic must really have crossed the hosts' NICs. Also
# checks the cluster script's own contract: refusing a second bring-up, idempotent teardown, and
# nothing left behind by a bring-up that fails half-way. Skips (exit 77) where namespaces cannot
# be created.
# shellcheck source=test/cluster/cluster_test_lib.sh disable=SC2154  # bin, src, work, name, cluster
source "$(dirname "${BASH_SOURCE[0]}")/cluster_test_lib.sh"
ct_init "$1" "$2"
ct_skip_unless_netns
ct_fixture

ct_reference_run "$work/shm.jsonl" "${ct_train_args[@]}"

timeout 60 "$cluster" up --name "$name" --hosts 2 --rate 1 >/dev/null || { echo "FAIL: cluster bring-up"; exit 1; }
echo "ok: cluster $name up"

# A second bring-up of the same name is refused and leaves the running cluster alone.
if "$cluster" up --name "$name" --hosts 2 >/dev/null 2>"$work/err"; then
  ct_fail "a second 'up' of cluster $name succeeded"
elif ! grep -q "already up" "$work/err"; then
  ct_fail "second 'up': unexpected message: $(cat "$work/err")"
fi
[[ $("$cluster" exec --name "$name" h1 hostname) == h1 ]] || ct_fail "host h1 does not call itself h1"

tx0=$(ct_tx_total)
if ! timeout 120 "$cluster" mpirun --name "$name" -np 2 --map-by ppr:1:node --bind-to none \
     -x OMP_NUM_THREADS "$bin/halognn-train" --partition "$work/p2" --metrics "$work/tcp.jsonl" \
     "${ct_train_args[@]}" >"$work/tcp.log" 2>&1; then
  cat "$work/tcp.log"
  echo "FAIL: the 2-host training run failed"
  exit 1
fi
tx1=$(ct_tx_total)

if ct_same_metrics "$work/shm.jsonl" "$work/tcp.jsonl"; then
  echo "ok: 2 hosts over TCP equal shared memory ($(grep -c '"epoch"' "$work/tcp.jsonl") epochs)"
else
  ct_fail "the 2-host run differs from the shared-memory run"
fi

# Every counted byte (halo rows, gradients, all-reduce, evaluation, features) went from one rank to
# the other, so across hosts: the NICs must have carried at least that much.
counted=$(ct_final_field "$work/tcp.jsonl" total_bytes_sent)
wire=$((tx1 - tx0))
if [[ -z $counted ]] || (( counted < 1000000 )); then
  ct_fail "implausible total_bytes_sent '$counted' in the metrics"
elif (( wire < counted )); then
  ct_fail "only $wire bytes crossed the hosts' NICs, but the trainer sent $counted: the ranks did not talk over the link"
else
  echo "ok: $wire bytes on the wire >= $counted bytes counted by the trainer"
fi

# Both ends of every link carry the token bucket, and re-shaping a running cluster replaces it.
rates() { for n in "$name-h0" "$name-h1"; do tc -n "$n" qdisc show dev hnet; done
          for p in p0 p1; do tc -n "$name-sw" qdisc show dev "$p"; done; }
[[ $(rates | grep -c "tbf .*rate 1Gbit") -eq 4 ]] || ct_fail "links not shaped to 1 Gbit/s at bring-up: $(rates)"
"$cluster" shape --name "$name" --rate 0.25 || ct_fail "shape --rate 0.25 failed"
[[ $(rates | grep -c "tbf .*rate 250Mbit") -eq 4 ]] || ct_fail "shape --rate 0.25 did not re-shape every link: $(rates)"
"$cluster" shape --name "$name" --rate none || ct_fail "shape --rate none failed"
[[ $(rates | grep -c "tbf") -eq 0 ]] || ct_fail "shape --rate none left a token bucket: $(rates)"
"$cluster" status --name "$name" | grep -q "link none Gbit/s" || ct_fail "status does not show the new rate"

# Teardown is complete and idempotent.
"$cluster" down --name "$name" || ct_fail "down failed"
"$cluster" down --name "$name" || ct_fail "a second down failed"
if ip netns list | grep -q "^$name-"; then ct_fail "namespaces left after down: $(ip netns list | grep "^$name-")"; fi

# A bring-up that fails half-way (here: tc fails once every namespace, veth and hostname exists)
# removes everything it made.
mkdir -p "$work/fakebin"
printf '#!/bin/sh\necho "tc: injected failure" >&2\nexit 1\n' >"$work/fakebin/tc"
chmod +x "$work/fakebin/tc"
if PATH="$work/fakebin:$PATH" timeout 60 "$cluster" up --name "$name" --hosts 3 --rate 1 >/dev/null 2>"$work/err"; then
  ct_fail "up succeeded although tc failed"
elif ! grep -q "injected failure" "$work/err"; then
  ct_fail "up failed, but not at the injected tc failure: $(cat "$work/err")"
fi
if ip netns list | grep -q "^$name-"; then ct_fail "a failed bring-up left namespaces: $(ip netns list | grep "^$name-")"; fi
if grep -q "halognn-cluster/$name/" /proc/mounts; then ct_fail "a failed bring-up left mounts"; fi
[[ ! -e ${HALOGNN_CLUSTER_RUN:-/run/halognn-cluster}/$name ]] || ct_fail "a failed bring-up left its state directory"
[[ $ct_failures -gt 0 ]] || echo "ok: teardown is idempotent, and a failed bring-up leaves nothing behind"

echo "$ct_failures failed"
[[ $ct_failures -eq 0 ]]
