#!/usr/bin/env bash
# A local mc cluster in the foreground: one mc-master and two mc-peer
# daemons of 256 MiB DRAM each, on loopback. This is what `make run` starts.
#
# Each daemon tells us it is serving by writing its address to a pipe
# (--ready-fd), so start-up never sleeps and never guesses. Ctrl-C or
# SIGTERM stops the peers (which unregister) and then the master, and the
# script exits 0; so does SIGHUP, when its terminal goes away.
#
# Its state lives in a directory that outlasts it (run/ at the top of the
# checkout, which git ignores): the master's snapshots in snapshots/, and
# while the daemons run, their pids in master.pid, peer1.pid, peer2.pid
# (the tour kills a peer by its pid file). The banner it prints once all
# three serve ends with the tour itself, read from examples/tour.sh, so
# what it suggests is what tests/cli/tour.bats runs.
#
# Environment:
#   MC_RUN_MASTER  master listen address (default 127.0.0.1:7300, the
#                  address mc-cli uses when MC_MASTER is unset)
#   MC_RUN_DIR     the state directory (default: run/ beside examples/)
#   MC_RUN_DRAM    DRAM of each peer (default 256MiB)
#   MC_RUN_HTTP    a base port: metrics on BASE (master), BASE+1, BASE+2
#                  (default: no metrics endpoints)
#   MC_RUN_POLICY  the master's eviction policy (default:
#                  policies/tenant-type.policy beside this script)
#   MC_BIN         where the programs are (default: ../bin)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$(cd "${MC_BIN:-$here/../bin}" 2>/dev/null && pwd) || {
	echo "local-cluster: ${MC_BIN:-$here/../bin} is missing (run make first)" >&2
	exit 69
}
master_listen=${MC_RUN_MASTER:-127.0.0.1:7300}
root=$(dirname "$here")
state=${MC_RUN_DIR:-$root/run}
dram=${MC_RUN_DRAM:-256MiB}
http=${MC_RUN_HTTP:-}
policy=${MC_RUN_POLICY:-$here/policies/tenant-type.policy}
if [ ! -r "$policy" ]; then
	echo "local-cluster: cannot read the eviction policy $policy" >&2
	exit 1
fi

for p in mc-master mc-peer mc-cli mc-evict-plan; do
	if [ ! -x "$bin/$p" ]; then
		echo "local-cluster: $bin/$p is missing (run make first)" >&2
		exit 69
	fi
done

if ! mkdir -p "$state/snapshots" || ! state=$(cd "$state" && pwd); then
	echo "local-cluster: cannot make the state directory $state" >&2
	exit 1
fi
# A live pid in it means another make run owns the directory.
if [ -r "$state/master.pid" ] && kill -0 "$(cat "$state/master.pid")" 2>/dev/null; then
	echo "local-cluster: $state is in use by the cluster of pid $(cat "$state/master.pid")" \
		"(stop it, or set MC_RUN_DIR)" >&2
	exit 69
fi
# The start-up's fifos and addresses only; the stop removes them.
dir=$(mktemp -d "${TMPDIR:-/tmp}/mc-run.XXXXXX")
pids=()
names=()
stopping=0

stop() {
	local rc=${1:-0} i
	stopping=1
	trap '' INT TERM
	# Peers first, so they can unregister while the master still listens.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
		rm -f "$state/${names[i]}.pid"
	done
	rm -rf "$dir"
	echo "local-cluster: stopped; the snapshots stay in $state/snapshots" >&2
	exit "$rc"
}
# A closed terminal (SIGHUP) stops it as Ctrl-C does: the daemons run in
# sessions of their own, so nothing else would.
trap 'stop 0' INT TERM HUP
# On any other way out (an error), leave no daemon behind.
abandon() {
	local n
	kill -TERM ${pids[@]+"${pids[@]}"} 2>/dev/null || true
	for n in ${names[@]+"${names[@]}"}; do
		rm -f "$state/$n.pid"
	done
	rm -rf "$dir"
}
trap abandon EXIT

# start NAME PROGRAM ARGS...: run it with --ready-fd 3 on a fifo and wait
# for the line with its address (empty if it died first).
start() {
	local name=$1 addr
	shift
	mkfifo "$dir/$name.ready"
	# Its own session: Ctrl-C reaches only this script, which then stops
	# the peers before the master so that they can unregister.
	setsid "$@" --ready-fd 3 3>"$dir/$name.ready" &
	pids+=($!)
	names+=("$name")
	# The fifo opens once the daemon has it open too; EOF without a line
	# means the daemon exited before it was serving.
	if ! read -r -t 30 addr <"$dir/$name.ready" || [ -z "$addr" ]; then
		echo "local-cluster: $name did not start (see its messages above)" >&2
		stop 69
	fi
	printf '%s' "$addr" >"$dir/$name.addr"
	echo "${pids[-1]}" >"$state/$name.pid"
}

http_flag() {
	[ -n "$http" ] && printf -- '--http\n127.0.0.1:%d\n' $((http + $1))
	return 0
}

mapfile -t h <<<"$(http_flag 0)"
start master "$bin/mc-master" --listen "$master_listen" --snapshot-dir "$state/snapshots" \
	--evict-policy "$policy" ${h[0]:+"${h[@]}"}
master=$(cat "$dir/master.addr")
mapfile -t h <<<"$(http_flag 1)"
start peer1 "$bin/mc-peer" --master "$master" --listen 127.0.0.1:0 --dram "$dram" \
	${h[0]:+"${h[@]}"}
mapfile -t h <<<"$(http_flag 2)"
start peer2 "$bin/mc-peer" --master "$master" --listen 127.0.0.1:0 --dram "$dram" \
	${h[0]:+"${h[@]}"}

cat <<EOF

mc is running:
  master  $master (pid ${pids[0]})
  peer 1  $(cat "$dir/peer1.addr") ($dram DRAM, pid ${pids[1]})
  peer 2  $(cat "$dir/peer2.addr") ($dram DRAM, pid ${pids[2]})
  state   $state (snapshots; kept after Ctrl-C)
EOF
if [ -n "$http" ]; then
	printf '  metrics http://127.0.0.1:%d/metrics (peers: %d, %d)\n' \
		"$http" $((http + 1)) $((http + 2))
fi
# The tour's commands run at the top of the checkout against the default
# master and state directory; the lines before it say how otherwise.
echo
echo "Take the tour (README.md, examples/tour.sh) in another terminal:"
echo "  cd $root"
[ "$master" = 127.0.0.1:7300 ] || echo "  export MC_MASTER=$master"
[ "$state" = "$root/run" ] || echo "  # (its run/ is $state)"
sed '/./s/^/  /' "$here/tour.sh"
echo
echo "Press Ctrl-C to stop all three."

# Stay in the foreground until a signal. A peer that dies (say, killed to
# watch the master drop its replicas) is reported and the rest keep
# running; without the master there is no cluster, so that stops it all.
while :; do
	wait -n || true
	[ "$stopping" = 1 ] && break
	for i in "${!pids[@]}"; do
		if ! kill -0 "${pids[i]}" 2>/dev/null; then
			if [ "${names[i]}" = master ]; then
				echo "local-cluster: the master exited; stopping the peers" >&2
				stop 1
			fi
			echo "local-cluster: ${names[i]} (pid ${pids[i]}) exited; the others keep running" >&2
			rm -f "$state/${names[i]}.pid"
			unset 'pids[i]' 'names[i]'
		fi
	done
	pids=(${pids[@]+"${pids[@]}"})
	names=(${names[@]+"${names[@]}"})
done
