#!/usr/bin/env bats
#
# examples/local-cluster.sh, what `make run` starts: a master (with the
# example eviction policy) and two peers in the foreground, the commands
# it suggests working against it, and a clean stop on SIGTERM.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-evict-plan
	mc_test_dir
	RUN_OUT="$MC_DIR/run.out"
	# its state directory, never the checkout's run/
	export MC_RUN_DIR="$BATS_TEST_TMPDIR/run"
}

teardown() {
	if [ -n "${RUN_PID:-}" ] && kill -0 "$RUN_PID" 2>/dev/null; then
		kill -TERM "$RUN_PID"
		wait "$RUN_PID" || true
	fi
}

# start_cluster [ENV=VALUE...]: the script in the background, its output in RUN_OUT.
start_cluster() {
	env MC_RUN_MASTER="unix:$MC_DIR/run-master.sock" MC_RUN_DRAM=16MiB "$@" \
		"$MC_ROOT/examples/local-cluster.sh" >"$RUN_OUT" 2>&1 &
	RUN_PID=$!
	wait_until 30 grep -q "Press Ctrl-C" "$RUN_OUT"
	export MC_MASTER="unix:$MC_DIR/run-master.sock"
}

@test "local cluster: serves, plans eviction with the example policy, stops cleanly" {
	start_cluster
	mc_peer_count_is 2
	echo hello | mc-cli put greeting
	echo cold | mc-cli put cold
	run mc-cli get greeting
	assert_output hello
	# a reader that keeps its lease on greeting
	mc-rpc "$MC_MASTER" get_replica_list key=greeting >/dev/null
	# the suggested eviction commands work against it
	run bash -c "mc-cli candidates | mc-evict-plan -p '$MC_ROOT/examples/policies/tenant-type.policy' --target 10% --explain"
	assert_success
	assert_output --partial "tenant=default"
	# a dry run plans the unread object (the read one is leased) and evicts nothing
	run mc-cli --json evict --target 1KiB --dry-run
	assert_success
	[ "$(jq -r 'select(.t == "stage") | .victims[].key' <<<"$output" | paste -sd' ')" = cold ]
	mc-cli exist cold
	# the banner ends with the tour (tests/cli/tour.bats runs it)
	grep -q "Take the tour (README.md, examples/tour.sh)" "$RUN_OUT"
	kill -TERM "$RUN_PID"
	local rc=0
	wait "$RUN_PID" || rc=$?
	RUN_PID=
	[ "$rc" -eq 0 ]
	grep -q "local-cluster: stopped; the snapshots stay in $MC_RUN_DIR/snapshots" "$RUN_OUT"
}

@test "local cluster: an unreadable policy stops it before any daemon starts" {
	run env MC_RUN_MASTER="unix:$MC_DIR/run-master.sock" MC_RUN_POLICY=/nonexistent.policy \
		"$MC_ROOT/examples/local-cluster.sh"
	assert_failure 1
	assert_output --partial "cannot read the eviction policy /nonexistent.policy"
}
