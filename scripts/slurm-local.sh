#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for the tests (make test-slurm):
# Debian's slurm-wlm (Slurm 22.05) and munge, every file, socket and pid file in
# one state directory, nothing under /etc touched and no system service used.
#
#   scripts/slurm-local.sh run -- CMD...   start, run CMD with SLURM_CONF set, stop
#                                          (also when CMD fails or the script is
#                                          interrupted); exits with CMD's status
#   scripts/slurm-local.sh start DIR       start in DIR, print the SLURM_CONF to use
#   scripts/slurm-local.sh stop DIR        stop what start started in DIR
#
# Needs root (the daemons run as root: SlurmUser=root) and apt-get on first use.
# Every wait has a timeout (SLURM_LOCAL_TIMEOUT seconds, default 60).
set -euo pipefail

timeout_s=${SLURM_LOCAL_TIMEOUT:-60}

die() { echo "slurm-local: $*" >&2; exit 1; }

install() {
	if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; then
		return
	fi
	[ "$(id -u)" = 0 ] || die "installing slurm-wlm and munge needs root"
	# Another apt-get may hold the dpkg lock: wait for it (bounded).
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		if DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 install -y -q slurm-wlm munge >/dev/null; then
			return
		fi
		[ "$attempt" = 1 ] && apt-get update -q >/dev/null || true
		sleep 5
	done
	die "apt-get install slurm-wlm munge failed"
}

# wait_for DESCRIPTION COMMAND...: run COMMAND every half second until it
# succeeds, at most timeout_s seconds.
wait_for() {
	local what=$1; shift
	local deadline=$((SECONDS + timeout_s))
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] || { echo "slurm-local: timed out after ${timeout_s}s waiting for $what" >&2; return 1; }
		sleep 0.5
	done
}

start() {
	local dir=$1
	install
	[ "$(id -u)" = 0 ] || die "the daemons run as root (SlurmUser=root): run as root"
	mkdir -p "$dir/spool" "$dir/state" "$dir/munge"
	dir=$(cd "$dir" && pwd)
	local host
	host=$(hostname -s)
	# munge: its own key, socket and pid file. munged runs as root here
	# (--force); Slurm finds the socket through AuthInfo.
	dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
	chmod 0400 "$dir/munge/munge.key"
	chmod 0700 "$dir/munge"
	munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
		--pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
		</dev/null >>"$dir/munge/munged.out" 2>&1
	wait_for "munged's socket" test -S "$dir/munge/munge.socket"
	cat >"$dir/slurm.conf" <<EOF
ClusterName=bicyc-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmctldPort=$((6817 + RANDOM % 1000 * 2))
SlurmdPort=$((7817 + RANDOM % 1000 * 2))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=3600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
	export SLURM_CONF=$dir/slurm.conf
	# Daemons keep no descriptor of this script's output (start runs
	# inside $(...), which waits for every writer to close).
	slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/slurmctld.out" 2>&1
	slurmd -f "$SLURM_CONF" </dev/null >>"$dir/slurmd.out" 2>&1
	wait_for "slurmctld" scontrol ping
	wait_for "the node to be idle" bash -c "sinfo -h -N -o %t | grep -qx idle"
	echo "$SLURM_CONF"
}

# stop_pid FILE: end the daemon whose pid FILE holds, SIGKILL after timeout.
stop_pid() {
	local file=$1 pid
	[ -f "$file" ] || return 0
	pid=$(cat "$file")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { rm -f "$file"; return 0; }
	kill "$pid" 2>/dev/null || true
	if ! wait_for "pid $pid ($file) to exit" bash -c "! kill -0 $pid"; then
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$file"
}

stop() {
	local dir=$1
	# Jobs first: their step daemons outlive slurmd.
	if [ -f "$dir/slurmctld.pid" ] && SLURM_CONF=$dir/slurm.conf timeout 10 scancel --user="$(id -un)" 2>/dev/null; then
		SLURM_CONF=$dir/slurm.conf wait_for "the jobs to end" bash -c '[ -z "$(squeue -h 2>/dev/null)" ]' || true
	fi
	stop_pid "$dir/slurmd.pid"
	stop_pid "$dir/slurmctld.pid"
	stop_pid "$dir/munge/munged.pid"
}

case "${1:-}" in
start)
	[ $# = 2 ] || die "usage: $0 start DIR"
	start "$2"
	;;
stop)
	[ $# = 2 ] || die "usage: $0 stop DIR"
	stop "$2"
	;;
run)
	shift
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || die "usage: $0 run -- CMD..."
	dir=$(mktemp -d /tmp/slurm-local.XXXXXX)
	trap 'stop "$dir"; rm -rf "$dir"' EXIT
	trap 'exit 130' INT TERM
	if ! conf=$(start "$dir"); then
		for f in "$dir"/*.log "$dir"/munge/*.log; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done >&2
		die "could not start the cluster"
	fi
	# CMD runs in the background so that a signal to this script is handled
	# at once (bash runs traps only between commands): it ends CMD, and the
	# EXIT trap stops the cluster.
	SLURM_CONF=$conf "$@" &
	child=$!
	trap 'kill -TERM "$child" 2>/dev/null; exit 130' INT TERM
	status=0
	wait "$child" || status=$?
	exit "$status"
	;;
*)
	die "usage: $0 run -- CMD... | start DIR | stop DIR"
	;;
esac
