#!/usr/bin/env bats
#
# The README's five-minute tour is examples/tour.sh, and this suite runs
# it: against a cluster that examples/local-cluster.sh (what make run
# starts) brings up, each step checked against its comment by
# tests/tools/tour; the README's block and make run's banner are the
# same file, line for line; the snapshots outlast the stop. Planted
# tours (tests/cli/fixtures/tour/) and a planted README show that each
# kind of break fails, naming its step or line.

load helpers

TOUR="$MC_ROOT/tests/tools/tour"
PLANTED="$MC_ROOT/tests/cli/fixtures/tour"

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-snapshot mc-evict-plan mc-bench
	mc_test_dir
	# make run runs on the real clock, like a user's
	unset MC_FAKE_CLOCK
	# What the tour takes for the checkout: the programs under test as
	# bin/, the cluster's state directory as run/.
	VIEW="$BATS_TEST_TMPDIR/checkout"
	mkdir -p "$VIEW"
	ln -s "$MC_ROOT/${MC_TEST_BIN:-bin}" "$VIEW/bin"
	ln -s "$MC_ROOT/examples" "$VIEW/examples"
	ln -s "$MC_ROOT/tests" "$VIEW/tests"
	RUN_DIR="$VIEW/run"
	RUN_OUT="$MC_DIR/run.out"
	# the tour's mktemp -d
	export TMPDIR="$BATS_TEST_TMPDIR"
}

teardown() {
	stop_cluster
}

teardown_file() {
	mc_stop_everything
}

cluster_up_or_gone() {
	grep -q "Press Ctrl-C" "$RUN_OUT" || ! kill -0 "$RUN_PID" 2>/dev/null
}

# start_cluster: examples/local-cluster.sh in the background, on a unix
# socket and with its state in the view's run/; returns once its banner
# is out (all three daemons serve).
start_cluster() {
	MC_MASTER="unix:$MC_DIR/run-master.sock"
	export MC_MASTER
	timeout 300 env MC_RUN_MASTER="$MC_MASTER" MC_RUN_DIR="$RUN_DIR" \
		MC_BIN="$MC_ROOT/${MC_TEST_BIN:-bin}" \
		"$MC_ROOT/examples/local-cluster.sh" >"$RUN_OUT" 2>&1 3>&- &
	RUN_PID=$!
	wait_until 60 cluster_up_or_gone
	grep -q "Press Ctrl-C" "$RUN_OUT" || {
		sed 's/^/# /' "$RUN_OUT" >&2
		return 1
	}
}

# stop_cluster: SIGTERM, as Ctrl-C; then any daemon whose pid file the
# script left (it was killed itself) is killed too.
stop_cluster() {
	local f pid
	RUN_STATUS=
	if [ -n "${RUN_PID:-}" ]; then
		kill -TERM "$RUN_PID" 2>/dev/null || true
		RUN_STATUS=0
		wait "$RUN_PID" || RUN_STATUS=$?
		RUN_PID=
	fi
	for f in "${RUN_DIR:-/nonexistent}"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		kill -KILL "$pid" 2>/dev/null || true
		wait_until 5 mc_gone "$pid"
	done
}

@test "tour: README.md shows examples/tour.sh line for line" {
	run -0 "$TOUR" readme "$MC_ROOT/README.md" "$MC_ROOT/examples/tour.sh"
	assert_output ""
}

@test "tour: every step does what its comment says on make run's cluster, which shows it and keeps its snapshots" {
	start_cluster
	run -0 "$TOUR" banner "$RUN_OUT" "$MC_ROOT/examples/tour.sh"
	assert_output ""
	grep -q "state   $RUN_DIR " "$RUN_OUT"
	cd "$VIEW"
	run -0 "$TOUR" run examples/tour.sh
	# every step passed, down to the last
	[ -z "$(grep -v '^ok ' <<<"$output")" ]
	assert_line --index -1 --partial "'rm -r \"\$tour\"'"
	stop_cluster
	[ "$RUN_STATUS" -eq 0 ]
	grep -q "local-cluster: stopped; the snapshots stay in $RUN_DIR/snapshots" "$RUN_OUT"
	[ -n "$(mc_snap_files "$RUN_DIR/snapshots")" ]
	run -0 mc-snapshot verify "$(mc_snap_files "$RUN_DIR/snapshots" | head -n 1)"
	assert_output --partial ": ok,"
	# no pid outlives its daemon
	[ -z "$(find "$RUN_DIR" -maxdepth 1 -name '*.pid')" ]
}

@test "tour: a README whose tour drifted from examples/tour.sh fails, naming the line" {
	sed 's/^\(mc-cli get greeting  *\)# hello, cache$/\1# hello/' "$MC_ROOT/README.md" >"$BATS_TEST_TMPDIR/README.md"
	local n
	n=$(grep -n '^mc-cli get greeting  *# hello$' "$BATS_TEST_TMPDIR/README.md" | cut -d: -f1)
	[ -n "$n" ]
	run -1 "$TOUR" readme "$BATS_TEST_TMPDIR/README.md" "$MC_ROOT/examples/tour.sh"
	assert_output --regexp "^$BATS_TEST_TMPDIR/README.md:$n: 'mc-cli get greeting +# hello' is not $MC_ROOT/examples/tour.sh:[0-9]+: 'mc-cli get greeting +# hello, cache'\$"
	head -n "$((n + 2))" "$MC_ROOT/README.md" >"$BATS_TEST_TMPDIR/short.md"
	echo '```' >>"$BATS_TEST_TMPDIR/short.md"
	run -1 "$TOUR" readme "$BATS_TEST_TMPDIR/short.md" "$MC_ROOT/examples/tour.sh"
	assert_output --partial "the tour block ends before $MC_ROOT/examples/tour.sh:"
}

@test "tour: a banner missing a line of the tour fails" {
	sed '/\S/s/^/  /' "$MC_ROOT/examples/tour.sh" | grep -v 'mc-cli get greeting  *# hello' >"$BATS_TEST_TMPDIR/banner"
	run -1 "$TOUR" banner "$BATS_TEST_TMPDIR/banner" "$MC_ROOT/examples/tour.sh"
	assert_output "$BATS_TEST_TMPDIR/banner: the banner does not show $MC_ROOT/examples/tour.sh whole"
}

@test "tour: a claim that nothing checks fails before any step runs, naming it" {
	cd "$VIEW"
	run -1 "$TOUR" run "$PLANTED/unchecked-claim.sh"
	assert_output "$PLANTED/unchecked-claim.sh:3: 'mc-cli peers': no check for the claim 'three peers' (tests/tools/tour)"
}

@test "tour: removing services before the kill (the old tour's order) fails at the kill, naming it" {
	start_cluster
	cd "$VIEW"
	run -1 "$TOUR" run "$PLANTED/rm-before-kill.sh"
	assert_line --partial "ok $PLANTED/rm-before-kill.sh:5: 'mc-cli rm services'"
	assert_line --partial "$PLANTED/rm-before-kill.sh:8: 'kill -9 \"\$(cat run/peer2.pid)\"': expected a replica of services on peer 2"
	refute_line --partial "rm-before-kill.sh:9"
}

@test "tour: a step that prints other than its comment fails, naming it and both texts" {
	start_cluster
	cd "$VIEW"
	run -1 "$TOUR" run "$PLANTED/wrong-output.sh"
	assert_line "$PLANTED/wrong-output.sh:4: 'mc-cli get greeting': expected 'hello, cache'; it printed:"
	assert_line "  | hello, world"
}

@test "tour: the old eviction step (tenant-type.policy, LRU inside kv) takes the chain's head and fails" {
	start_cluster
	cd "$VIEW"
	run -1 "$TOUR" run "$PLANTED/evicts-head.sh"
	assert_line --partial "$PLANTED/evicts-head.sh:7: 'mc-cli candidates --tenant chat | mc-evict-plan -p examples/policies/tenant-type.policy \\': expected chat7#1 gone (exist: 0)"
}

@test "tour: a step that fails fails the tour, with its status and message" {
	start_cluster
	cd "$VIEW"
	run -1 "$TOUR" run "$PLANTED/failing-step.sh"
	assert_line --regexp "^$PLANTED/failing-step.sh:3: 'mc-cli put services /etc/services --replicas 3': exited [0-9]+: mc-cli: "
}

@test "tour: usage errors and unreadable files exit 64" {
	run -64 "$TOUR" run
	assert_output --partial "usage: tests/tools/tour"
	run -64 "$TOUR" readme "$BATS_TEST_TMPDIR/none.md" "$MC_ROOT/examples/tour.sh"
	assert_output "tests/tools/tour: cannot read '$BATS_TEST_TMPDIR/none.md'"
}

@test "make run: a hangup (its terminal closed) stops all three daemons, as Ctrl-C does" {
	start_cluster
	local pids
	pids=$(cat "$RUN_DIR"/*.pid)
	[ "$(wc -w <<<"$pids")" -eq 3 ]
	# the script itself, not the timeout around it
	kill -HUP "$(pgrep -P "$RUN_PID" -f local-cluster.sh)"
	local st=0
	wait "$RUN_PID" || st=$?
	RUN_PID=
	[ "$st" -eq 0 ]
	# shellcheck disable=SC2086
	mc_gone $pids
	[ -z "$(find "$RUN_DIR" -maxdepth 1 -name '*.pid')" ]
}

@test "make run: a second cluster on the same state directory is refused while the first runs" {
	start_cluster
	run -69 env MC_RUN_MASTER="unix:$MC_DIR/second.sock" MC_RUN_DIR="$RUN_DIR" \
		MC_BIN="$MC_ROOT/${MC_TEST_BIN:-bin}" "$MC_ROOT/examples/local-cluster.sh"
	assert_output "local-cluster: $RUN_DIR is in use by the cluster of pid $(cat "$RUN_DIR/master.pid") (stop it, or set MC_RUN_DIR)"
	# the first one is untouched
	mc_peer_count_is 2
}
