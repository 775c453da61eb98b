#!/usr/bin/env bats
#
# Dynamic hot replication, enforce mode, end to end (mc-peer(8) Dynamic
# copies, mc-wire(5) replica_copy): a key read past the threshold gets a
# dynamic replica on another peer, made by the source peer's copier
# (dynamic_copy_start, a granted write to the target, dynamic_copy_end),
# readable with the same bytes; a source or a target killed in the middle
# of a copy leaves no readable replica of it; a peer that evicts for
# itself drops a dynamic replica instead of demoting it to its SSD.
#
# The copy is held in the middle with MC_FAULT=copy:pause on the source
# (mc-fault(7)): the master has started it, no byte has gone yet.

load helpers

# Peer liveness runs on the monotonic clock: short, so a killed peer is
# dropped within seconds, long enough for a live one (heartbeats every
# second) never to be.
PEER_TTL_MS=3000

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-replicate
	mc_test_dir
	export MC_FAULT_DIR="$MC_DIR/faults"
	mkdir -p "$MC_FAULT_DIR"
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# enforce_master [ARGS...]: a master making dynamic replicas of a key read
# 5 times in 10 s (0.5 reads a second over the window).
enforce_master() {
	mc_start_master --http 127.0.0.1:0 --peer-ttl "${PEER_TTL_MS}ms" \
		--dynamic-replication enforce --dynamic-replication-window 10s \
		--dynamic-replication-qps 0.5 "$@"
}

# reads N KEY: N gets of KEY, each its own replica list.
reads() {
	local i
	for ((i = 0; i < $1; i++)); do
		mc-cli get "$2" >/dev/null || return 1
	done
}

# dynamic_on KEY PEER: KEY has a dynamic replica on PEER.
dynamic_on() {
	mc_stat_json "$1" |
		jq -e --arg a "$(mc_addr "$2")" '[.replicas[] | select(.addr == $a and .dynamic == true)] | length == 1'
}

# replicas_are KEY N: KEY has N replicas.
replicas_are() {
	[ "$(mc_stat_json "$1" | jq '.replicas | length')" -eq "$2" ]
}

# no_replica_on KEY PEER: none of KEY's replicas is on PEER.
no_replica_on() {
	! mc_replica_addrs "$1" | grep -qxF "$(mc_addr "$2")"
}

# holds PEER N: PEER's DRAM holds N copies, as its own peer_stats says.
holds() {
	[ "$(mc_tier_field "$1" dram objects)" -eq "$2" ]
}

# paused: the source's copy waits at its fault point, started.
paused() {
	[ -e "$MC_FAULT_DIR/copy.paused" ]
}

@test "replicate-copy: a hot key gets a dynamic replica on another peer, with the same bytes" {
	enforce_master
	mc_start_peer p1 --host-id host1 --http 127.0.0.1:0
	mc_random_file "$BATS_TEST_TMPDIR/hot" 300000
	mc-cli put hot "$BATS_TEST_TMPDIR/hot"
	mc_start_peer p2 --host-id host2 --http 127.0.0.1:0
	replicas_are hot 1
	reads 5 hot
	wait_until 10 dynamic_on hot p2
	[ "$(mc_series p1 mc_peer_copies_total 'outcome="done"')" -eq 1 ]
	[ "$(mc_metric p1 mc_peer_copy_bytes_total)" -eq 300000 ]
	[ "$(mc_metric p1 mc_peer_copies_running)" -eq 0 ]
	# the source goes: what is read now comes from the dynamic replica
	mc_stop p1
	wait_until 10 replicas_are hot 1
	dynamic_on hot p2
	mc-cli get hot >"$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/hot" "$BATS_TEST_TMPDIR/back"
}

@test "replicate-copy: a peer with --copy-workers 0 is never the source of a copy" {
	enforce_master
	mc_start_peer p1 --host-id host1 --http 127.0.0.1:0 --copy-workers 0
	echo x | mc-cli put k
	mc_start_peer p2 --host-id host2
	reads 10 k
	wait_until 10 mc_metric_at_least master mc_replication_judged_total 1
	replicas_are k 1
	[ -z "$(mc_metric p1 mc_peer_copies_running)" ]
}

# source_paused: the one of p1 and p3 whose copy waits at its fault point, started.
source_paused() {
	local p
	for p in p1 p3; do
		if [ -e "$MC_DIR/f-$p/copy.paused" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

@test "replicate-copy: the source killed with -9 in the middle of a copy leaves no readable replica of it" {
	enforce_master
	# either holder of the key may be picked as the source: both stop there
	mkdir -p "$MC_DIR/f-p1" "$MC_DIR/f-p3"
	MC_FAULT=copy:pause MC_FAULT_DIR="$MC_DIR/f-p1" mc_start_peer p1 --host-id host1
	MC_FAULT=copy:pause MC_FAULT_DIR="$MC_DIR/f-p3" mc_start_peer p3 --host-id host3
	mc_random_file "$BATS_TEST_TMPDIR/hot" 100000
	mc-cli put --replicas 2 hot "$BATS_TEST_TMPDIR/hot"
	mc_start_peer p2 --host-id host2
	reads 5 hot
	wait_until 10 source_paused
	mc_kill9 "$(source_paused)"
	# the lease the source held expires; the dead source's replica goes at --peer-ttl
	advance_clock 600000
	wait_until 15 replicas_are hot 1
	no_replica_on hot p2
	holds p2 0
	mc-cli get hot >"$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/hot" "$BATS_TEST_TMPDIR/back"
}

@test "replicate-copy: the target killed with -9 in the middle of a copy leaves no readable replica, and the source revokes" {
	enforce_master
	MC_FAULT=copy:pause mc_start_peer p1 --host-id host1 --http 127.0.0.1:0
	echo hot | mc-cli put hot
	mc_start_peer p2 --host-id host2
	reads 5 hot
	wait_until 10 paused
	mc_kill9 p2
	# the copy goes on, to a target that is gone: its write fails
	touch "$MC_FAULT_DIR/copy"
	wait_until 10 mc_metric_at_least p1 'mc_peer_copies_total{outcome="failed"}' 1
	[ "$(mc_series p1 mc_peer_copies_total 'outcome="done"')" -eq 0 ]
	wait_until 10 replicas_are hot 1
	no_replica_on hot p2
	run -0 mc-cli get hot
	assert_output hot
}

@test "replicate-copy: a peer evicting for itself drops a dynamic replica instead of moving it to its SSD" {
	export MC_YOUNG=0
	enforce_master --put-wait 5s
	mc_start_peer p1 --host-id host1
	mc_random_file "$BATS_TEST_TMPDIR/hot" 1048576
	mc-cli put hot "$BATS_TEST_TMPDIR/hot"
	MC_PEER_DRAM=8MiB mc_start_peer p2 --host-id host2 --http 127.0.0.1:0 \
		--eviction-mode local --dram-watermarks 0.6:0.3 \
		--ssd "$BATS_TEST_TMPDIR/ssd" --ssd-size 32MiB
	reads 5 hot
	wait_until 10 dynamic_on hot p2
	# p1 goes: whatever lands on p2 from now on is p2's
	mc_stop p1
	wait_until 10 replicas_are hot 1
	# more than the high watermark of p2's DRAM: it evicts for itself
	local i
	for ((i = 0; i < 6; i++)); do
		head -c 1048576 /dev/urandom | mc-cli put "fill/$i" - || return 1
	done
	wait_until 10 mc_metric_at_least p2 'mc_peer_moves_total{kind="demote",outcome="done"}' 1
	# the dynamic replica was dropped for room, never moved: the master heard of it
	wait_until 10 mc_metric_at_least p2 'mc_peer_capacity_drops_total{tier="dram",reason="reclaim"}' 1
	run mc_stat_json hot
	[ "$status" -ne 0 ] || [ "$(jq '[.replicas[] | select(.tier == "ssd")] | length' <<<"$output")" -eq 0 ]
	run mc-cli get hot
	[ "$status" -eq 1 ]
}
