#!/usr/bin/env bash
# netns_cluster.sh: a cluster of N "hosts" on one Linux machine, for tests and scaling studies.
#
# Every host is a network namespace plus a UTS namespace (its own hostname, h0 .. hN-1) with one
# interface, `hnet`, plugged by a veth pair into a bridge in a switch namespace: a star network,
# one NIC per host, as in a rack. Each link is shaped in both directions with tc: a token bucket
# (tbf) of the given rate on the host's egress and on the switch port's egress (the host's
# ingress), and a netem delay where the kernel has sch_netem. The namespaces have no route to
# anything else: traffic flows only between the hosts' own addresses (10.77.0.0/24 inside the
# cluster; two clusters never share a network, so they may use the same addresses).
#
# usage: netns_cluster.sh COMMAND [--name NAME] [options]
#   up --hosts N [--rate GBIT|none] [--delay-us US] [--slots S] [--slurm [--gpus G]]
#                        create the cluster (refuses when NAME is already up); with --slurm also
#                        start slurmctld on h0 and one slurmd per host (Slurm 22.05, auth/none),
#                        each with S CPUs and, with --gpus, G placeholder GPUs (a gpu GRES on
#                        device nodes that alias /dev/null: GPU job scripts are scheduled and get
#                        CUDA_VISIBLE_DEVICES, but there is no GPU behind it)
#   shape --rate GBIT|none [--delay-us US]
#                        re-shape every link of a running cluster
#   down                 stop everything started in the cluster, delete its namespaces and state;
#                        idempotent, and safe on a half-built cluster
#   exec HOST CMD...     run CMD on HOST (h0 ..) with the cluster's MPI and Slurm settings
#   mpirun ARGS...       Open MPI's mpirun on h0 across all hosts over TCP (btl tcp on hnet,
#                        ranks started through an rsh agent that enters the target namespaces)
#   counters             bytes sent and received by each host's NIC: "HOST TX_BYTES RX_BYTES"
#   status               the cluster's settings, shaping and Slurm nodes
#
# NAME (default hgc) names the namespaces NAME-sw, NAME-h0 ..; state (hostfile, rsh agent, Slurm
# configuration, logs) lives in $HALOGNN_CLUSTER_RUN/NAME (default /run/halognn-cluster/NAME).
# Needs root, iproute2 (ip, tc) and util-linux (nsenter, unshare); --slurm needs slurmctld, slurmd
# and slurm-client. Exit status 3: namespaces cannot be created here (not root, no netns support).
set -euo pipefail

prog=netns_cluster.sh
die() { echo "$prog: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

iface=hnet                 # the host NIC's name, the same on every host
subnet=10.77.0             # host i is $subnet.(i+1)/24
mtu=9000                   # jumbo frames, as on cluster networks: 99.3% of a frame is payload

name=hgc
[[ $# -ge 1 ]] || usage
cmd=$1
shift
hosts="" rate=none delay_us=0 slots=1 want_slurm=0 gpus=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --name) name=${2:?}; shift 2 ;;
    --hosts) hosts=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --delay-us) delay_us=${2:?}; shift 2 ;;
    --slots) slots=${2:?}; shift 2 ;;
    --slurm) want_slurm=1; shift ;;
    --gpus) gpus=${2:?}; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[[ $name =~ ^[a-z][a-z0-9]{0,7}$ ]] || die "--name '$name': 1 to 8 lower-case letters and digits, starting with a letter"
run_root=${HALOGNN_CLUSTER_RUN:-/run/halognn-cluster}
state=$run_root/$name

ns() { echo "$name-$1"; }                       # ns h0 -> hgc-h0
on() { local h=$1; shift; nsenter --net="/run/netns/$(ns "$h")" --uts="$state/uts/$h" -- "$@"; }

load_state() {
  [[ -f $state/cluster.env ]] || die "cluster '$name' is not up (no $state/cluster.env; run: $prog up --name $name --hosts N)"
  # Sets hosts, slots, link_rate, link_delay_us, slurm.
  # shellcheck source=/dev/null
  source "$state/cluster.env"
}

check_number() {  # check_number OPTION VALUE REGEX WHAT
  [[ $2 =~ $3 ]] || die "$1 '$2': $4"
}

# shape_link NS DEV: tbf at $rate (Gbit/s) behind an optional netem delay of $delay_us.
shape_link() {
  local n=$1 dev=$2
  tc -n "$n" qdisc del dev "$dev" root 2>/dev/null || true
  local parent="root"
  if [[ $delay_us != 0 ]]; then
    tc -n "$n" qdisc add dev "$dev" root handle 1: netem delay "${delay_us}us" limit 100000
    parent="parent 1:"
  fi
  [[ $rate == none ]] && return 0
  # Bucket: 4 ms of traffic (at least 256 KiB, so a 64 KiB GSO segment passes whole); queue limit:
  # 200 ms of traffic (at least 4 MiB), so TCP meets no tail drop at the bottleneck.
  local bps burst limit
  bps=$(awk -v r="$rate" 'BEGIN { printf "%.0f", r * 1e9 / 8 }')
  burst=$(( bps / 250 )); (( burst >= 262144 )) || burst=262144
  limit=$(( bps / 5 )); (( limit >= 4194304 )) || limit=4194304
  # shellcheck disable=SC2086
  tc -n "$n" qdisc add dev "$dev" $parent handle 2: tbf rate "${rate}gbit" burst "$burst" limit "$limit"
}

shape_all() {
  local i
  for ((i = 0; i < hosts; i++)); do
    shape_link "$(ns h$i)" "$iface"      # host -> switch
    shape_link "$(ns sw)" "p$i"          # switch -> host
  done
}

check_shaping_args() {
  [[ $rate == none ]] || check_number --rate "$rate" '^[0-9]+(\.[0-9]+)?$' "a bandwidth in Gbit/s (e.g. 10, 0.1) or 'none'"
  [[ $rate == none ]] || awk -v r="$rate" 'BEGIN { exit !(r >= 0.001 && r <= 400) }' ||
    die "--rate '$rate': between 0.001 and 400 Gbit/s"
  check_number --delay-us "$delay_us" '^[0-9]+$' "a one-way delay in whole microseconds"
  if [[ $delay_us != 0 ]] && ! netem_available; then
    die "--delay-us $delay_us: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), so links keep the veth's own latency; use --delay-us 0"
  fi
}

netem_available() {
  local probe=halognn-netem-probe-$$ ok=1
  ip netns add "$probe" 2>/dev/null || return 1
  ip -n "$probe" link add p0 type veth peer name p1 2>/dev/null &&
    tc -n "$probe" qdisc add dev p0 root netem delay 1us 2>/dev/null && ok=0
  ip netns del "$probe" 2>/dev/null || true
  return $ok
}

# --- teardown: every step tolerates what is already gone --------------------------------------
down() {
  local n pids p i
  # Processes started inside the cluster (slurm daemons, orted, ranks), found by namespace.
  for n in $(ip netns list 2>/dev/null | awk -v pre="$name-" 'index($1, pre) == 1 { print $1 }'); do
    pids=$(ip netns pids "$n" 2>/dev/null || true)
    [[ -z $pids ]] && continue
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for i in $(seq 50); do
      p=$(ip netns pids "$n" 2>/dev/null || true)
      [[ -z $p ]] && break
      sleep 0.1
    done
    # shellcheck disable=SC2086
    [[ -z $p ]] || kill -KILL $p 2>/dev/null || true
  done
  for n in $(ip netns list 2>/dev/null | awk -v pre="$name-" 'index($1, pre) == 1 { print $1 }'); do
    ip netns del "$n" 2>/dev/null || true
  done
  if [[ -d $state/uts ]]; then
    for p in "$state"/uts/*; do
      [[ -e $p ]] || continue
      umount "$p" 2>/dev/null || true
    done
  fi
  rm -rf "$state"
  return 0
}

# --- bring-up ---------------------------------------------------------------------------------
up() {
  [[ -n $hosts ]] || die "up: --hosts N is required"
  check_number --hosts "$hosts" '^[0-9]+$' "a number of hosts"
  (( hosts >= 1 && hosts <= 64 )) || die "--hosts $hosts: between 1 and 64"
  check_number --slots "$slots" '^[1-9][0-9]*$' "MPI slots per host (>= 1)"
  check_number --gpus "$gpus" '^[0-9]+$' "placeholder GPUs per host"
  (( gpus == 0 || want_slurm )) || die "--gpus needs --slurm (it is a Slurm GRES)"
  check_shaping_args
  [[ $(id -u) -eq 0 ]] || { echo "$prog: needs root to create network namespaces" >&2; exit 3; }
  local tool
  for tool in ip tc nsenter unshare; do
    command -v "$tool" >/dev/null || die "'$tool' is not installed (Debian: iproute2, util-linux)"
  done
  if ((want_slurm)); then
    for tool in slurmctld slurmd sinfo sbatch; do
      command -v "$tool" >/dev/null || die "--slurm: '$tool' is not installed (Debian: slurmctld slurmd slurm-client)"
    done
  fi
  if [[ -e $state ]] || ip netns list 2>/dev/null | grep -q "^$name-"; then
    die "cluster '$name' is already up (or half torn down): run '$prog down --name $name' first"
  fi
  mkdir -p "$run_root"
  # From here on, any failure (or Ctrl-C) removes whatever was made.
  # shellcheck disable=SC2154  # rc is assigned inside the trap
  trap 'rc=$?; trap - EXIT INT TERM; down; exit $rc' EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$state/uts"
  if ! ip netns add "$(ns sw)" 2>"$state/err"; then
    echo "$prog: cannot create network namespaces here: $(cat "$state/err")" >&2
    exit 3
  fi
  ip -n "$(ns sw)" link add br0 type bridge
  ip -n "$(ns sw)" link set br0 mtu "$mtu" up
  local i h
  for ((i = 0; i < hosts; i++)); do
    h=h$i
    ip netns add "$(ns $h)"
    # A persistent UTS namespace, bind-mounted on a file, gives the host its own hostname.
    touch "$state/uts/$h"
    unshare --uts="$state/uts/$h" hostname "$h"
    ip link add "$iface" netns "$(ns $h)" mtu "$mtu" type veth peer name "p$i" netns "$(ns sw)" mtu "$mtu"
    ip -n "$(ns sw)" link set "p$i" master br0 up
    ip -n "$(ns $h)" addr add "$subnet.$((i + 1))/24" dev "$iface"
    ip -n "$(ns $h)" link set "$iface" up
    ip -n "$(ns $h)" link set lo up
  done
  shape_all
  {
    echo "hosts=$hosts"
    echo "slots=$slots"
    echo "link_rate=$rate"
    echo "link_delay_us=$delay_us"
    echo "slurm=$want_slurm"
  } >"$state/cluster.env"
  for ((i = 0; i < hosts; i++)); do echo "h$i slots=$slots"; done >"$state/hostfile"
  # Open MPI's rsh launcher calls "AGENT HOST COMMAND..." and expects a remote shell to run the
  # command line; this agent "logs in" to HOST by entering its namespaces.
  cat >"$state/rsh-agent" <<EOF
#!/bin/sh
host=\$1
shift
case \$host in h[0-9]*) ;; *) echo "rsh-agent: unknown host '\$host' in cluster $name" >&2; exit 255 ;; esac
exec nsenter --net=/run/netns/$name-\$host --uts=$state/uts/\$host -- /bin/sh -c "\$*"
EOF
  chmod +x "$state/rsh-agent"
  ((want_slurm)) && slurm_up
  trap - EXIT INT TERM
  echo "$prog: cluster '$name' up: $hosts host(s) h0..h$((hosts - 1)) on $subnet.0/24 ($iface), link ${rate} Gbit/s, delay ${delay_us} us$( ((want_slurm)) && echo ", Slurm")$( ((gpus)) && echo " ($gpus placeholder GPUs per host)")"
}

slurm_up() {
  local d=$state/slurm i nodes
  mkdir -p "$d/state" "$d/log"
  for ((i = 0; i < hosts; i++)); do mkdir -p "$d/spool-h$i" "$d/tmp-h$i"; done
  nodes="h[0-$((hosts - 1))]"
  {
    cat <<EOF
# Written by $prog for cluster '$name'.
ClusterName=halognn$name
SlurmctldHost=h0($subnet.1)
SlurmUser=root
AuthType=auth/none
CredType=cred/none
# A requeued job waits cred_expire seconds before it may start again (default 120).
AuthInfo=cred_expire=10
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerParameters=sched_interval=1
MinJobAge=600
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool-%n
TmpFS=$d/tmp-%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
EOF
    local gres=""
    if (( gpus > 0 )); then
      echo "GresTypes=gpu"
      gres=" Gres=gpu:$gpus"
      # Slurm wants a device file per GPU: nodes that alias /dev/null stand in for them.
      mkdir -p "$d/dev"
      for ((i = 0; i < gpus; i++)); do mknod "$d/dev/gpu$i" c 1 3; done
      printf 'AutoDetect=off\nName=gpu File=%s\n' "$d/dev/gpu[0-$((gpus - 1))]" >"$d/gres.conf"
    fi
    for ((i = 0; i < hosts; i++)); do
      echo "NodeName=h$i NodeAddr=$subnet.$((i + 1)) NodeHostname=h$i CPUs=$slots RealMemory=1000$gres State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$d/slurm.conf"
  on h0 slurmctld -f "$d/slurm.conf"
  for ((i = 0; i < hosts; i++)); do
    on "h$i" slurmd -f "$d/slurm.conf" -N "h$i"
  done
  for _ in $(seq 100); do
    if [[ $(on h0 env SLURM_CONF="$d/slurm.conf" sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle') -eq $hosts ]]; then
      return 0
    fi
    sleep 0.3
  done
  echo "$prog: Slurm did not bring all $hosts nodes to idle in 30 s:" >&2
  on h0 env SLURM_CONF="$d/slurm.conf" sinfo -N >&2 || true
  tail -n 20 "$d"/log/*.log >&2 || true
  exit 1
}

# The environment every command on the cluster gets: Open MPI uses TCP on hnet between hosts (and
# shared memory within one), as a site's openmpi-mca-params.conf would say. The hosts share this
# machine's cores, and a rank that spins while it waits for a message starves the kernel's packet
# processing on the veth links (measured: 0.5 s instead of 0.05 s of waiting per epoch, 4 ranks
# on 4 hosts, 2 cores): waiting ranks yield the core instead.
cluster_env() {
  export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=$iface OMPI_MCA_oob_tcp_if_include=$iface
  export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  [[ ${slurm:-0} == 1 ]] && export SLURM_CONF=$state/slurm/slurm.conf
  return 0
}

host_index() {  # host_index HOST -> i, or die
  if ! [[ $1 =~ ^h([0-9]+)$ ]] || (( 10#${BASH_REMATCH[1]} >= hosts )); then
    die "no host '$1' in cluster '$name' (hosts: h0..h$((hosts - 1)))"
  fi
  echo "${BASH_REMATCH[1]}"
}

# The dispatch is one function, parsed whole before it runs: a running command is not disturbed
# when the script is replaced on disk meanwhile (bash reads scripts as it goes).
main() {
  case $cmd in
    up) up ;;
    down) down ;;
    shape)
      load_state
      check_shaping_args
      shape_all
      sed -i "s/^link_rate=.*/link_rate=$rate/; s/^link_delay_us=.*/link_delay_us=$delay_us/" "$state/cluster.env"
      ;;
    exec)
      load_state
      [[ $# -ge 2 ]] || die "usage: $prog exec [--name NAME] HOST CMD..."
      host_index "$1" >/dev/null
      cluster_env
      on "$@"
      ;;
    mpirun)
      load_state
      cluster_env
      on h0 mpirun --hostfile "$state/hostfile" --mca plm_rsh_agent "$state/rsh-agent" "$@"
      ;;
    counters)
      load_state
      for ((i = 0; i < hosts; i++)); do
        # "ip -s link" prints the RX line's numbers then the TX line's; bytes come first in each.
        ip -n "$(ns h$i)" -s link show dev "$iface" |
          awk -v h="h$i" '/RX:/ { getline; rx = $1 } /TX:/ { getline; tx = $1 } END { print h, tx, rx }'
      done
      ;;
    status)
      load_state
      # shellcheck disable=SC2154  # link_rate, link_delay_us come from cluster.env
      echo "cluster $name: $hosts host(s), $slots slot(s) each, link ${link_rate} Gbit/s, delay ${link_delay_us} us, state $state"
      for ((i = 0; i < hosts; i++)); do
        echo "h$i $subnet.$((i + 1)) $(tc -n "$(ns h$i)" qdisc show dev "$iface" | tr '\n' ' ')"
      done
      if [[ $slurm == 1 ]]; then
        on h0 env SLURM_CONF="$state/slurm/slurm.conf" sinfo -N
      fi
      ;;
    *) usage ;;
  esac
}
main "$@"; exit
