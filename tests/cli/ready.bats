#!/usr/bin/env bats
#
# --ready-fd means ready to serve the cluster: a script that waits for the
# line can use the daemon at once, with no polling.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli
	mc_test_dir
}

teardown() {
	mc_stop_everything
}

@test "ready: a peer started before its master announces only once the master lists it" {
	local fifo="$MC_DIR/early.ready" line
	mkfifo "$fifo"
	MC_MASTER="unix:$MC_DIR/master.sock"
	timeout 300 sh -c 'f="$1"; shift; exec "$@" 5>"$f"' sh "$fifo" \
		mc-peer --master "$MC_MASTER" --listen "unix:$MC_DIR/early.sock" --dram 8MiB \
		--ready-fd 5 >"$MC_DIR/early.log" 2>&1 3>&- &
	local tpid=$!
	exec 7<"$fifo"
	echo "$tpid $(pgrep -P "$tpid" | head -n 1)" >>"$BATS_FILE_TMPDIR/all.pids"
	# The peer is retrying a master that is not there: no line may come yet.
	if read -t 0.3 -r -u 7 line; then
		fail "the peer announced '$line' before any master registered it"
	fi
	mc_start_master --peer-ttl 1h
	read -t 10 -r -u 7 line
	exec 7<&-
	[ "$line" = "unix:$MC_DIR/early.sock" ]
	# No waiting here: the line promised that the master knows the peer.
	run -0 mc-cli peers
	assert_output --partial "unix:$MC_DIR/early.sock"
	echo late | mc-cli put late-master
	run -0 mc-cli get late-master
	assert_output late
}

@test "ready: a put right after both daemons announced succeeds" {
	mc_start_master --peer-ttl 1h
	mc_start_daemon p1 mc-peer --master "$MC_MASTER" --listen "unix:$MC_DIR/p1.sock" --dram 8MiB
	echo now | mc-cli put first
	run -0 mc-cli get first
	assert_output now
}
