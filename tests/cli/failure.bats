#!/usr/bin/env bats
#
# Peer failure and corruption. Every test kills or damages something, so
# each gets its own master and three peers (they start in milliseconds).

load helpers

# Peer liveness runs on the monotonic clock (the fake clock cannot kill a
# peer), so these tests wait real time for a dead peer's TTL to pass: short
# enough to keep them quick, long enough that a live peer (heartbeat every
# second) is never mistaken for a dead one.
PEER_TTL_MS=3000

setup() {
	mc_require_bins mc-master mc-peer mc-cli
	mc_test_dir
	mc_start_master --peer-ttl "${PEER_TTL_MS}ms" --lease-ttl 1h --put-timeout 1h
	mc_start_peers 3 --fault-inject
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# silent_at_least ADDR MS: the master last heard from ADDR at least MS ago.
silent_at_least() {
	mc_peers_json | jq_any --arg a "$1" --argjson t "$2" '.addr == $a and .silent_ms >= $t'
}

# put_set PREFIX COUNT REPLICAS: COUNT random objects PREFIX/i, sizes from
# 1 B up; their bytes stay in $BATS_TEST_TMPDIR/PREFIX.i.
put_set() {
	local prefix="$1" count="$2" reps="$3" i
	for ((i = 0; i < count; i++)); do
		mc_random_file "$BATS_TEST_TMPDIR/$prefix.$i" $((1 + i * 7919))
		mc-cli put "$prefix/$i" "$BATS_TEST_TMPDIR/$prefix.$i" --replicas "$reps" ||
			return 1
	done
}

# check_set PREFIX COUNT: every object reads back byte-exact.
check_set() {
	local prefix="$1" count="$2" i
	for ((i = 0; i < count; i++)); do
		mc-cli get "$prefix/$i" >"$BATS_TEST_TMPDIR/got" || return 1
		cmp "$BATS_TEST_TMPDIR/$prefix.$i" "$BATS_TEST_TMPDIR/got" || return 1
	done
}

# holder KEY: the single peer name (peer1..3) holding KEY's first replica.
holder() {
	local a n
	a="$(mc_replica_addrs "$1" | head -n 1)"
	for n in peer1 peer2 peer3; do
		if [ "$(mc_addr "$n")" = "$a" ]; then
			echo "$n"
			return 0
		fi
	done
	return 1
}

object_gone() {
	! mc-cli exist "$1"
}

@test "failure: after kill -9 of a peer every object that had another replica reads back byte-exact" {
	put_set two 12 2
	local victim
	victim="$(holder two/0)"
	mc_kill9 "$victim"
	check_set two 12
}

@test "failure: a killed peer is not dropped before --peer-ttl passes" {
	echo x | mc-cli put single --replicas 1
	local victim addr
	victim="$(holder single)"
	addr="$(mc_addr "$victim")"
	mc_kill9 "$victim"
	# silent for half its TTL: the 100 ms sweep had a dozen rounds to (wrongly) act
	wait_until 10 silent_at_least "$addr" $((PEER_TTL_MS / 2))
	mc_peers_json | jq_any --arg a "$addr" '.addr == $a and .alive'
	mc_replica_addrs single | grep -qxF "$addr"
}

@test "failure: after --peer-ttl the master drops the dead peer from peers and from stat" {
	put_set two 6 2
	local victim addr
	victim="$(holder two/0)"
	addr="$(mc_addr "$victim")"
	mc_kill9 "$victim"
	wait_until 15 mc_peer_not_listed "$addr"
	run -0 mc_peer_count
	assert_output 2
	local n
	for ((n = 0; n < 6; n++)); do
		run -1 grep -qxF "$addr" <(mc_replica_addrs "two/$n")
		mc_stat_json "two/$n" | jq_true '(.replicas | length) >= 1'
	done
	check_set two 6
}

@test "failure: a 1-replica object whose only peer died is not found after --peer-ttl" {
	put_set one 9 1
	local victim addr n
	local -a held
	for ((n = 0; n < 9; n++)); do
		held[n]="$(holder "one/$n")"
	done
	victim="${held[0]}"
	addr="$(mc_addr "$victim")"
	mc_kill9 "$victim"
	wait_until 15 mc_peer_not_listed "$addr"
	for ((n = 0; n < 9; n++)); do
		if [ "${held[n]}" = "$victim" ]; then
			run -1 mc-cli get "one/$n"
			assert_output --partial "not found"
			run -1 mc-cli exist "one/$n"
			run -1 mc-cli stat "one/$n"
		else
			# objects held by the surviving peers are untouched
			mc-cli get "one/$n" | cmp "$BATS_TEST_TMPDIR/one.$n" -
		fi
	done
}

@test "failure: a corrupted byte in either replica is caught and the read falls back to the other" {
	# Corrupt the first listed replica of one object and the second of
	# another, so the fallback is exercised whichever order get uses.
	local n src a
	for n in 0 1; do
		src="$BATS_TEST_TMPDIR/c$n"
		mc_random_file "$src" 65536
		mc-cli put "corr/$n" "$src" --replicas 2
		a="$(mc_replica_addrs "corr/$n" | sed -n "$((n + 1))p")"
		run -0 mc-cli corrupt "$a" "corr/$n"
		mc-cli get "corr/$n" >"$BATS_TEST_TMPDIR/got"
		cmp "$src" "$BATS_TEST_TMPDIR/got"
	done
}

@test "failure: get -o FILE past a corrupt replica rewrites the file from the next one" {
	local n src a out="$BATS_TEST_TMPDIR/out"
	for n in 0 1; do
		# several staging chunks, the last one short
		src="$BATS_TEST_TMPDIR/f$n"
		mc_random_file "$src" 1048579
		mc-cli put "corr-o/$n" "$src" --replicas 2
		a="$(mc_replica_addrs "corr-o/$n" | sed -n "$((n + 1))p")"
		run -0 mc-cli corrupt "$a" "corr-o/$n" 1048000
		run -0 mc-cli get "corr-o/$n" -o "$out"
		cmp "$src" "$out"
	done
	# the temporary file went with the rename
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial .tmp.
}

@test "failure: corrupt at an explicit offset is still caught by the checksum" {
	local src="$BATS_TEST_TMPDIR/src" a
	mc_random_file "$src" 1000
	mc-cli put corr-off "$src" --replicas 2
	for a in $(mc_replica_addrs corr-off | head -n 1); do
		mc-cli corrupt "$a" corr-off 999
	done
	mc-cli get corr-off | cmp "$src" -
}

@test "failure: corrupting every replica makes get exit 65 naming the checksum" {
	local src="$BATS_TEST_TMPDIR/src" a
	mc_random_file "$src" 4096
	mc-cli put corr-all "$src" --replicas 2
	for a in $(mc_replica_addrs corr-all); do
		mc-cli corrupt "$a" corr-all
	done
	run -65 mc-cli get corr-all
	assert_output --partial checksum
	assert_output --partial corr-all
	# nothing was written to -o either
	run -65 mc-cli get corr-all -o "$BATS_TEST_TMPDIR/never"
	[ ! -e "$BATS_TEST_TMPDIR/never" ]
}

@test "failure: a 1 B object with a corrupted byte is caught too" {
	printf 'Z' | mc-cli put corr-one --replicas 1
	mc-cli corrupt "$(mc_replica_addrs corr-one)" corr-one
	run -65 mc-cli get corr-one
	assert_output --partial checksum
}

@test "failure: corrupt is denied by a peer started without --fault-inject" {
	mc_start_peer plain
	echo safe | mc-cli put guarded --replicas 4
	run -1 mc-cli corrupt "$(mc_addr plain)" guarded
	assert_output --partial denied
	[ "$(mc-cli get guarded)" = safe ]
}

@test "failure: a peer restarted on the same address replaces its dead entry at once" {
	put_set one 6 1
	local victim addr n
	local -a held
	for ((n = 0; n < 6; n++)); do
		held[n]="$(holder "one/$n")"
	done
	victim="${held[0]}"
	addr="$(mc_addr "$victim")"
	mc_kill9 "$victim"
	# same address, empty arena: no clock move, the re-registration alone
	# drops the old entry's replicas
	mc_start_peer "$victim" --fault-inject
	for ((n = 0; n < 6; n++)); do
		if [ "${held[n]}" = "$victim" ]; then
			wait_until 5 object_gone "one/$n"
		else
			mc-cli get "one/$n" | cmp "$BATS_TEST_TMPDIR/one.$n" -
		fi
	done
	run -0 mc_peer_count
	assert_output 3
	# and the new peer takes new objects
	echo fresh | mc-cli put fresh --replicas 3
	[ "$(mc-cli get fresh)" = fresh ]
}
