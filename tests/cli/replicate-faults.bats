#!/usr/bin/env bats
# slow: each test makes 100 dynamic copies and kills a daemon in their middle
#
# Dynamic copies cut short (seed 002's interrupted copies; mc-master(8)
# --dynamic-replication): kill -9 the source, the target or the master
# in the middle of 100 copies. In every case no object reads wrong
# bytes, no lease and no reserved room outlives the lease's expiry, and
# the keys whose copies failed cool their domain.
#
# The copies are held in the middle by the source's copy fault point in
# pause mode (mc-fault(7)): started by the master, the target's room
# reserved, no byte sent yet; the kill comes then.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-replicate mc-fill mc-snapshot
	mc_test_dir
	SNAPDIR="$BATS_TEST_TMPDIR/snaps"
	mkdir -p "$SNAPDIR"
	PAUSE="$BATS_TEST_TMPDIR/pause"
	mkdir -p "$PAUSE"
}

teardown() {
	mc_stop_everything
}

fill() {
	mc-fill --prefix hot/ -n 100 --min-size 1 --max-size 64KiB "$@"
}

master() {
	mc_start_master --http 127.0.0.1:0 --snapshot-dir "$SNAPDIR" --peer-ttl 1h \
		--dynamic-replication enforce --dynamic-replication-window 10s \
		--dynamic-replication-qps 0.5 --dynamic-replication-lease 30s \
		--dynamic-replication-max-copies 128 "$@"
}

# cluster: the 100 keys on p1 (the source, its copies paused) and on p3,
# which copies nothing; p2 the one target; the keys made hot: 100 leases,
# the copies its workers took started (their room reserved) and held at
# the pause, the rest queued at the source.
cluster() {
	master "$@"
	MC_FAULT='copy:pause' MC_FAULT_DIR="$PAUSE" \
		mc_start_peer p1 --host-id host1 --http 127.0.0.1:0 --session-file "$MC_DIR/p1.session"
	mc_start_peer p3 --host-id host3 --http 127.0.0.1:0 --copy-workers 0
	fill --replicas 2 put
	mc_start_peer p2 --host-id host2 --http 127.0.0.1:0
	local i
	for i in 1 2 3 4 5; do
		fill check
	done
	wait_until 20 leases_are 100
	wait_until 10 test -e "$PAUSE/copy.paused"
	wait_until 10 leases_started_are 2
}

leases_started_are() {
	[ "$(mc-replicate --json leases | jq -s 'map(select(.stage == "started")) | length')" -eq "$1" ]
}

leases_are() {
	[ "$(mc-replicate --json leases | wc -l)" -eq "$1" ]
}

# room_on NAME: the DRAM bytes the master counts on peer NAME.
room_on() {
	mc_peers_json | jq -r --arg a "$(mc_addr "$1")" \
		'select(.addr == $a) | .tiers[] | select(.tier == "dram") | .used'
}

# processing: replicas of the 100 keys not complete (half copies), summed.
processing() {
	local i n=0 k
	for ((i = 0; i < 100; i++)); do
		k="$(printf 'hot/%06d' "$i")"
		n=$((n + $(mc_stat_json "$k" | jq '[.replicas[] | select(.state != "complete")] | length')))
	done
	echo "$n"
}

ended_are() {
	local sum
	sum="$(mc-replicate --json status | jq '.copies.outcomes | add')"
	[ "$sum" -eq "$1" ]
}

@test "faults: kill -9 the source in the middle of 100 copies: reads stay right, the leases expire with their reservations, the domain cools" {
	cluster
	[ "$(room_on p2)" -gt 0 ]
	mc_kill9 p1
	fill verify
	fill check
	# nothing is held past the expiry
	advance_clock 31000
	wait_until 10 leases_are 0
	[ "$(mc_series master mc_replication_copies_total 'outcome="expired"')" -eq 100 ]
	[ "$(room_on p2)" -eq 0 ]
	[ "$(processing)" -eq 0 ]
	[ "$(mc_metric master mc_replication_dynamic_replicas)" -eq 0 ]
	[ "$(mc-replicate --json status | jq '.copies.cooldowns')" -eq 100 ]
	fill check
}

@test "faults: kill -9 the target in the middle of 100 copies: the source revokes them, reads stay right, nothing is left reserved" {
	cluster
	mc_kill9 p2
	touch "$PAUSE/copy"
	wait_until 30 ended_are 100
	leases_are 0
	[ "$(mc_series master mc_replication_copies_total 'outcome="completed"')" -eq 0 ]
	[ "$(processing)" -eq 0 ]
	[ "$(mc_metric p1 mc_peer_copies_running)" -eq 0 ]
	[ "$(mc-replicate --json status | jq '.copies.cooldowns')" -eq 100 ]
	fill check
	# a fresh target gets no half copy back: it holds nothing
	mc_start_peer p2 --host-id host2 --http 127.0.0.1:0
	fill check
	[ "$(mc_metric master mc_replication_dynamic_replicas)" -eq 0 ]
}

@test "faults: kill -9 the master in the middle of 100 copies and restart it with --restore latest: no lease survives it, every key reads right" {
	cluster
	mc-snapshot save >/dev/null
	mc_kill9 master
	master --restore latest
	wait_until 10 mc_live_peer_count_is 3
	leases_are 0
	# the copies go on at the source, and the new master knows none of them
	touch "$PAUSE/copy"
	wait_until 30 copies_settled
	leases_are 0
	[ "$(processing)" -eq 0 ]
	fill check
	# the target's copies, if it kept any, are the object's bytes: read from it alone
	mc_kill9 p1
	mc_kill9 p3
	fill verify
}

# copies_settled: the source's copy worker has ended all 100.
copies_settled() {
	local done failed refused
	done="$(mc_series p1 mc_peer_copies_total 'outcome="done"')"
	failed="$(mc_series p1 mc_peer_copies_total 'outcome="failed"')"
	refused="$(mc_series p1 mc_peer_copies_total 'outcome="refused"')"
	[ $((done + failed + refused)) -ge 100 ] && [ "$(mc_metric p1 mc_peer_copies_running)" -eq 0 ]
}
