#!/usr/bin/env bats
#
# A granted write that finds its tier full waits for room (mc-peer(8)
# --room-wait). The master places a put where it counts room, and the
# copies it evicted to make that room are freed when their tasks reach
# the peer on the control link, while the write comes on a connection
# of its own: either may arrive first. Here the evict tasks of the
# master's round are lost (MC_FAULT evict:always), so the write arrives
# at a full tier and nothing frees room until the test does: the write
# waits, held with its bytes unread, and goes through the moment a drop
# frees room; with none it is refused once its wait ends. Before writes
# waited, the put failed with no_space at once.

load helpers

KIB=1024
COPY=$((64 * KIB))

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-fill
	mc_test_dir
}

teardown() {
	mc_stop_everything
}

# full_peer [PEER ARGS...]: a master (MASTER_ARGS too) that evicts only
# for a put it cannot place, and a peer of four copies, full, that loses
# every evict from the master.
full_peer() {
	# shellcheck disable=SC2086 # MASTER_ARGS are words
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 1 --evict-low-watermark 0.99 \
		${MASTER_ARGS:-}
	MC_EVICTION_MODE=master MC_FAULT=evict:always MC_PEER_DRAM=$((4 * COPY)) \
		mc_start_peer p1 --http 127.0.0.1:0 "$@"
	run -0 mc-fill --prefix k/ -n 4 --batch 1 --min-size 64KiB --max-size 64KiB put
	[ "$(mc_tier_field p1 dram used)" -eq $((4 * COPY)) ]
	mc_random_file "$BATS_TEST_TMPDIR/new" "$COPY"
}

@test "room-wait: a write that finds its tier full waits, and goes through once a drop frees room" {
	full_peer
	mc-cli put new <"$BATS_TEST_TMPDIR/new" 2>"$BATS_TEST_TMPDIR/put.err" &
	local put=$!
	wait_until 10 mc_metric_at_least p1 mc_peer_room_waiting 1
	# the master evicted copies for it, and the peer never heard
	[ "$(mc_tier_field p1 dram objects)" -eq 4 ]
	mc-cli rm "$(mc-cli ls k/ | tail -n 1)"
	wait "$put" || { cat "$BATS_TEST_TMPDIR/put.err"; return 1; }
	mc-cli get new | cmp - "$BATS_TEST_TMPDIR/new"
	[ "$(mc_series p1 mc_peer_room_waits_total 'outcome="placed"')" -eq 1 ]
	[ "$(mc_metric p1 mc_peer_room_waiting)" -eq 0 ]
}

@test "room-wait: with no room freed the write is refused when its wait ends, and the peer serves on" {
	full_peer --room-wait 300ms
	mc-cli put new <"$BATS_TEST_TMPDIR/new" 2>"$BATS_TEST_TMPDIR/put.err" &
	local put=$! rc=0
	wait "$put" || rc=$?
	[ "$rc" -eq 1 ]
	run cat "$BATS_TEST_TMPDIR/put.err"
	assert_output --partial "no space for 65536 bytes in dram"
	assert_output --partial "after waiting for room"
	[ "$(mc_series p1 mc_peer_room_waits_total 'outcome="timeout"')" -eq 1 ]
	[ "$(mc_metric p1 mc_peer_room_waiting)" -eq 0 ]
	# the peer serves on: every copy the master still lists reads
	local keys
	keys="$(mc-cli ls k/)"
	[ -n "$keys" ]
	for k in $keys; do
		mc-cli get "$k" >/dev/null
	done
}

@test "room-wait: --room-wait 0 refuses such a write at once" {
	full_peer --room-wait 0
	run -1 mc-cli put new <"$BATS_TEST_TMPDIR/new"
	assert_output --partial "no space for 65536 bytes in dram"
	refute_output --partial "after waiting"
	[ "$(mc_series p1 mc_peer_room_waits_total 'outcome="placed"')" -eq 0 ]
	[ "$(mc_series p1 mc_peer_room_waits_total 'outcome="timeout"')" -eq 0 ]
}

@test "room-wait: a put the master drops while its write waits ends that wait, and leaves no copy" {
	MASTER_ARGS="--put-timeout 2s" full_peer --room-wait 1m
	mc-cli put new <"$BATS_TEST_TMPDIR/new" 2>"$BATS_TEST_TMPDIR/put.err" &
	local put=$! rc=0
	wait_until 10 mc_metric_at_least p1 mc_peer_room_waiting 1
	# past the master's put timeout, not past the wait: the master drops the put
	advance_clock 3000
	wait "$put" || rc=$?
	[ "$rc" -ne 0 ]
	run cat "$BATS_TEST_TMPDIR/put.err"
	assert_output --partial "the master dropped this put while its write waited for room"
	[ "$(mc_series p1 mc_peer_room_waits_total 'outcome="cancelled"')" -eq 1 ]
	[ "$(mc_metric p1 mc_peer_room_waiting)" -eq 0 ]
	# room freed now lets no late copy of it in
	mc-cli rm "$(mc-cli ls k/ | tail -n 1)"
	[ "$(mc_tier_field p1 dram objects)" -eq 3 ]
	run -1 mc-cli get new
}
