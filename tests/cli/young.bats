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
	wait_until 10 rounds_past p1 "$ROUNDS" "${r%.*}"
	run -0 mc-cli get big -o "$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/back"
	[ "$(mc_series p1 mc_evicted_young_total '')" = 0 ] || [ "$(mc_metric p1 mc_evicted_young_total)" = 0 ]
}
