#!/usr/bin/env bats
#
# A write is not undone behind its writer's back (issue 24): a copy
# younger than --young since its commit is never taken by eviction that
# runs ahead of need (a tier over its high watermark, on the peer or in
# the master's rounds); only a write waiting for its room may take it,
# and then it is logged and counted (mc_evicted_young_total).

load helpers

MIB=1048576
# what a peer's own eviction did: plans made
ROUNDS='mc_peer_local_evictions_total{event="round"}'

setup() {
	mc_require_bins mc-master mc-peer mc-cli
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# cluster [PEER ARGS...]: a master and one peer of 64 MiB DRAM, both with metrics.
cluster() {
	mc_start_master --http 127.0.0.1:0 --put-wait 5s
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 "$@"
}

# rounds_past DAEMON SERIES N: SERIES on DAEMON went past N (for wait_until).
# Waiting for it past the value read plus one means a whole pass or check
# began after the read, so it saw the clock as the test last set it.
rounds_past() {
	local v
	v="$(mc_metric "$1" "$2")"
	[ -n "$v" ] && [ "${v%.*}" -gt "$3" ]
}

@test "young: a put of 94% of a peer's DRAM is still there 5 s later, with default flags" {
	cluster
	mc_random_file "$BATS_TEST_TMPDIR/big" $((60 * MIB))
	run -0 mc-cli put big "$BATS_TEST_TMPDIR/big"
	advance_clock 5000
	# a pass of the peer's own eviction ran after the clock moved
	local r
	r="$(mc_metric p1 "$ROUNDS")"
	wait_until 10 rounds_past p1 "$ROUNDS" "$((${r%.*} + 1))"
	run -0 mc-cli get big -o "$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/back"
	[ "$(mc_metric p1 mc_evicted_young_total)" = 0 ]
	[ "$(mc_metric master mc_evicted_young_total)" = 0 ]
}

# young_log_lines DAEMON: the info lines of evictions that took young copies.
young_log_lines() {
	grep -c 'took [0-9]* young cop' "$MC_DIR/$1.log" || true
}

@test "young: a second put that needs the room takes the young copy, counted and logged once" {
	cluster
	mc_random_file "$BATS_TEST_TMPDIR/a" $((60 * MIB))
	mc_random_file "$BATS_TEST_TMPDIR/b" $((30 * MIB))
	run -0 mc-cli put a "$BATS_TEST_TMPDIR/a"
	[ "$(mc_metric p1 mc_evicted_young_total)" = 0 ]
	# 60 + 30 MiB do not fit in 64: b waits for a's room, and gets it
	run -0 mc-cli put b "$BATS_TEST_TMPDIR/b"
	run -0 mc-cli get b -o "$BATS_TEST_TMPDIR/b.back"
	cmp "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/b.back"
	run -1 mc-cli exist a
	[ "$(mc_metric p1 mc_evicted_young_total)" = 1 ]
	[ "$(mc_metric p1 mc_evicted_young_bytes_total)" -ge $((60 * MIB)) ]
	[ "$(young_log_lines p1)" = 1 ]
	run -0 grep 'took 1 young copy, 60MiB (62914560 bytes)' "$MC_DIR/p1.log"
	assert_output --partial "eviction of dram"
}

@test "young: once --young has passed, the watermark pass takes the copy as before" {
	cluster --young 3s
	mc_random_file "$BATS_TEST_TMPDIR/big" $((60 * MIB))
	run -0 mc-cli put big "$BATS_TEST_TMPDIR/big"
	advance_clock 2000
	local r
	r="$(mc_metric p1 "$ROUNDS")"
	wait_until 10 rounds_past p1 "$ROUNDS" "$((${r%.*} + 1))"
	run -0 mc-cli exist big
	advance_clock 1500
	wait_until 10 mc_key_gone big
	[ "$(mc_series p1 mc_peer_local_evictions_total 'event="key"')" = 1 ]
	[ "$(mc_metric p1 mc_evicted_young_total)" = 0 ]
	[ "$(young_log_lines p1)" = 0 ]
}

@test "young: --young 0 gives the old behaviour: the pass takes the copy just written" {
	cluster --young 0
	mc_random_file "$BATS_TEST_TMPDIR/big" $((60 * MIB))
	run -0 mc-cli put big "$BATS_TEST_TMPDIR/big"
	wait_until 10 mc_key_gone big
	[ "$(mc_metric p1 mc_evicted_young_total)" = 0 ]
}

@test "young: master_ranked keeps a young copy too, though the master ranks it first" {
	cluster --eviction-mode master_ranked
	mc_random_file "$BATS_TEST_TMPDIR/big" $((60 * MIB))
	run -0 mc-cli put big "$BATS_TEST_TMPDIR/big"
	advance_clock 5000
	local r
	r="$(mc_metric p1 "$ROUNDS")"
	wait_until 10 rounds_past p1 "$ROUNDS" "$((${r%.*} + 1))"
	run -0 mc-cli get big -o "$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/back"
	[ "$(mc_series p1 mc_peer_local_evictions_total 'event="master_key"')" = 0 ]
	[ "$(mc_metric p1 mc_evicted_young_total)" = 0 ]
}

SKIPPED_YOUNG='mc_rounds_skipped_total{why="young"}'

@test "young: in master mode the master's watermark rounds keep a young copy until it ages" {
	cluster --eviction-mode master
	mc_random_file "$BATS_TEST_TMPDIR/big" $((60 * MIB))
	run -0 mc-cli put big "$BATS_TEST_TMPDIR/big"
	advance_clock 5000
	# a watermark check after the clock moved held its round back
	local s
	s="$(mc_metric master "$SKIPPED_YOUNG")"
	wait_until 10 rounds_past master "$SKIPPED_YOUNG" "$((${s%.*} + 1))"
	run -0 mc-cli get big -o "$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/back"
	[ "$(mc_metric master mc_evicted_young_total)" = 0 ]
	[ "$(mc_series p1 mc_peer_local_evictions_total 'event="round"')" = 0 ]
	# aged, the next watermark round takes it
	advance_clock 5001
	wait_until 10 mc_key_gone big
	[ "$(mc_metric master mc_evicted_young_total)" = 0 ]
	[ "$(young_log_lines master)" = 0 ]
}

@test "young: in master mode a put that needs the room gets it from the master's round, counted and logged" {
	cluster --eviction-mode master
	mc_random_file "$BATS_TEST_TMPDIR/a" $((60 * MIB))
	mc_random_file "$BATS_TEST_TMPDIR/b" $((30 * MIB))
	run -0 mc-cli put a "$BATS_TEST_TMPDIR/a"
	# a second later a is still young, and a watermark round has kept it
	# (a round that ran while a was written, freeing nothing, rests the
	# scope for 100 ms of the master's clock first)
	advance_clock 1000
	wait_until 10 rounds_past master "$SKIPPED_YOUNG" 0
	run -0 mc-cli put b "$BATS_TEST_TMPDIR/b"
	run -0 mc-cli get b -o "$BATS_TEST_TMPDIR/b.back"
	cmp "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/b.back"
	run -1 mc-cli exist a
	[ "$(mc_metric master mc_evicted_young_total)" = 1 ]
	[ "$(mc_metric master mc_evicted_young_bytes_total)" = $((60 * MIB)) ]
	[ "$(young_log_lines master)" = 1 ]
	run -0 grep 'took 1 young copy, 60MiB (62914560 bytes)' "$MC_DIR/master.log"
	assert_output --partial "eviction of peer"
}

@test "young: the master's rounds keep young copies for a peer stalled by its groups" {
	cluster
	mc_random_file "$BATS_TEST_TMPDIR/g" $((60 * MIB))
	run -0 mc-cli put g "$BATS_TEST_TMPDIR/g" --group grp
	advance_clock 5000
	local s
	s="$(mc_metric master "$SKIPPED_YOUNG")"
	wait_until 10 rounds_past master "$SKIPPED_YOUNG" "$((${s%.*} + 1))"
	run -0 mc-cli exist g
	advance_clock 5001
	wait_until 10 mc_key_gone g
	[ "$(mc_metric master mc_evicted_young_total)" = 0 ]
}

@test "young: a bad --young is refused, naming the flag" {
	mc_start_master
	run -64 mc-peer --master "$MC_MASTER" --dram 16MiB --young soon
	assert_output --partial "invalid --young 'soon'"
	run -64 mc-master --listen "unix:$MC_DIR/m2.sock" --young -1s
	assert_output --partial "invalid --young '-1s'"
}

@test "young: a round an operator asks for takes young copies too, and says so" {
	mc_start_master --http 127.0.0.1:0
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 --eviction-mode master
	mc_random_file "$BATS_TEST_TMPDIR/a" $((4 * MIB))
	run -0 mc-cli put a "$BATS_TEST_TMPDIR/a"
	run -0 mc-cli evict --target 1MiB
	run -1 mc-cli exist a
	[ "$(mc_metric master mc_evicted_young_total)" = 1 ]
	run -0 grep "took 1 young copy, 4MiB (4194304 bytes): an operator's round asked for them" \
		"$MC_DIR/master.log"
}

@test "young: put warns, on stderr, when its object takes more than half of every tier it could land on" {
	mc_start_master --http 127.0.0.1:0
	MC_PEER_DRAM=64MiB mc_start_peer p1
	mc_random_file "$BATS_TEST_TMPDIR/big" $((40 * MIB))
	mc_random_file "$BATS_TEST_TMPDIR/half" $((32 * MIB))
	run -0 --separate-stderr mc-cli put big "$BATS_TEST_TMPDIR/big"
	[ -z "$output" ]
	[ "$(wc -l <<<"$stderr")" = 1 ]
	[[ $stderr == "mc-cli: warning: 'big' (40MiB) takes more than half of every tier it could be stored on (the largest holds 64MiB): eviction may take it"*"keep objects under half a tier, or give the peers more room" ]]
	# exactly half is not more than half
	run -0 --separate-stderr mc-cli put half "$BATS_TEST_TMPDIR/half"
	[ -z "$stderr" ]
	# --json output stays clean on stdout
	run -0 --separate-stderr mc-cli --json put big1 "$BATS_TEST_TMPDIR/big"
	jq -e .version <<<"$output"
	[[ $stderr == *"warning: 'big1' (40MiB)"* ]]
	# a larger peer it could land on takes it without a warning
	MC_PEER_DRAM=128MiB mc_start_peer p2
	run -0 --separate-stderr mc-cli put big2 "$BATS_TEST_TMPDIR/big"
	[ -z "$stderr" ]
	# ... unless --tier rules it out: the peers have no ssd tier, so the put fails, unwarned
	run -64 --separate-stderr mc-cli put big3 "$BATS_TEST_TMPDIR/big" --tier ssd
	[[ $stderr != *warning* ]]
}

@test "young: a young copy in DRAM over an SSD tier moves down ahead of need, and nothing is lost" {
	mc_start_master --http 127.0.0.1:0 --put-wait 5s
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 --ssd "$BATS_TEST_TMPDIR/ssd" \
		--ssd-size 256MiB
	mc_random_file "$BATS_TEST_TMPDIR/big" $((60 * MIB))
	run -0 mc-cli put big "$BATS_TEST_TMPDIR/big"
	on_ssd() {
		mc-cli --json stat big | jq -e '.replicas[0].tier == "ssd"'
	}
	wait_until 10 on_ssd
	run -0 mc-cli get big -o "$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/back"
	[ "$(mc_metric p1 mc_evicted_young_total)" = 0 ]
}
