#!/usr/bin/env bats
#
# mc-peer --egress-limit (mc-peer(8)): one token bucket for everything
# the data plane sends, so a peer can be made the bottleneck of a hot
# object (issue 28's benchmark) or share a NIC. Each test times real
# transfers, asserting only a floor the limit makes certain (a 16 MiB
# read at 4 MiB/s cannot take under 4 s less one 10 ms burst) with a
# wide margin, and a ceiling for the unlimited read that any loaded
# machine beats by far: neither can flake on a slow or busy host.
# About 10 s alone on two cores.

load helpers

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

# now_us: the wall clock in microseconds.
now_us() {
	echo "${EPOCHREALTIME/[.,]/}"
}

# put_random KEY BYTES: KEY holds BYTES random bytes, kept in $BATS_TEST_TMPDIR/KEY.
put_random() {
	mc_random_file "$BATS_TEST_TMPDIR/$1" "$2"
	mc-cli put "$1" "$BATS_TEST_TMPDIR/$1"
}

# timed_get KEY: read KEY into $BATS_TEST_TMPDIR/KEY.got, then write the
# milliseconds it took to $BATS_TEST_TMPDIR/KEY.ms; fails when the read does.
timed_get() {
	local t0
	t0="$(now_us)"
	mc-cli get "$1" >"$BATS_TEST_TMPDIR/$1.got" || return 1
	echo $((($(now_us) - t0) / 1000)) >"$BATS_TEST_TMPDIR/$1.ms"
}

# at_least MS KEY: KEY's timed read took MS milliseconds or more.
at_least() {
	local took
	took="$(cat "$BATS_TEST_TMPDIR/$2.ms")"
	echo "# $2 took $took ms" >&3
	[ "$took" -ge "$1" ]
}

# throttled PEER: the peer has counted time its connections waited for tokens.
throttled() {
	local v
	v="$(mc_metric "$1" mc_peer_egress_throttled_seconds_total)"
	[ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'
}

@test "egress: at --egress-limit 4MiB a 16 MiB read takes 4 s, byte-exact" {
	mc_start_master
	mc_start_peer p1 --egress-limit 4MiB --http 127.0.0.1:0
	put_random big $((16 << 20))
	[ "$(mc_metric p1 mc_peer_egress_limit_bytes)" = 4194304 ]
	timed_get big &
	local reader=$!
	# /metrics is not held back by the limit: it answers while the read waits for tokens
	wait_until 10 throttled p1
	wait "$reader"
	at_least 2500 big
	cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/big.got"
}

@test "egress: two readers at once share the one limit, neither starved" {
	mc_start_master
	mc_start_peer p1 --egress-limit 4MiB
	put_random one $((8 << 20))
	put_random two $((8 << 20))
	local t0 r1 r2
	t0="$(now_us)"
	timed_get one &
	r1=$!
	timed_get two &
	r2=$!
	wait "$r1"
	wait "$r2"
	# 16 MiB at 4 MiB/s in all: a limit per connection would take 2 s
	[ $((($(now_us) - t0) / 1000)) -ge 3000 ]
	# taking turns, both end near the end; a reader served first would end at 2 s
	at_least 2500 one
	at_least 2500 two
	cmp "$BATS_TEST_TMPDIR/one" "$BATS_TEST_TMPDIR/one.got"
	cmp "$BATS_TEST_TMPDIR/two" "$BATS_TEST_TMPDIR/two.got"
}

@test "egress: without --egress-limit the same read is fast, and the limit reads 0" {
	mc_start_master
	mc_start_peer p1 --http 127.0.0.1:0
	put_random big $((16 << 20))
	timed_get big
	[ "$(cat "$BATS_TEST_TMPDIR/big.ms")" -lt 2000 ]
	cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/big.got"
	[ "$(mc_metric p1 mc_peer_egress_limit_bytes)" = 0 ]
	[ "$(mc_metric p1 mc_peer_egress_throttled_seconds_total)" = 0 ]
}

@test "egress: MC_EGRESS_LIMIT sets the default, the flag beats it" {
	mc_start_master
	MC_EGRESS_LIMIT=1MiB mc_start_peer p1 --http 127.0.0.1:0
	MC_EGRESS_LIMIT=1MiB mc_start_peer p2 --http 127.0.0.1:0 --egress-limit 0
	[ "$(mc_metric p1 mc_peer_egress_limit_bytes)" = 1048576 ]
	[ "$(mc_metric p2 mc_peer_egress_limit_bytes)" = 0 ]
}

@test "egress: a bad --egress-limit or MC_EGRESS_LIMIT exits 64 naming it" {
	run -64 mc-peer --master "unix:$MC_DIR/none.sock" --dram 16MiB --egress-limit abc
	assert_output --partial "--egress-limit"
	assert_output --partial "abc"
	MC_EGRESS_LIMIT=-5 run -64 mc-peer --master "unix:$MC_DIR/none.sock" --dram 16MiB
	assert_output --partial "MC_EGRESS_LIMIT"
}
