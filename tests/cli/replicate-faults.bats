#!/usr/bin/env bats
# slow: each test makes 100 dynamic copies and kills a daemon in their middle
#
# Dynamic copies cut short (seed 002's interrupted copies; mc-master(8)
# --dynamic-replication): kill -9 a source, the target or the master
# in the middle of 100 copies. In every case no object reads wrong
# bytes, no lease and no reserved room outlives the lease's expiry, and
# the keys whose copies failed cool their domain.
#
# The copies are held in the middle by the sources' copy fault point in
# pause mode (mc-fault(7)): started by the master, the target's room
# reserved, no byte sent yet; the kill comes then.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-replicate mc-fill mc-snapshot
	mc_test_dir
	SNAPDIR="$BATS_TEST_TMPDIR/snaps"
	mkdir -p "$SNAPDIR"
	mkdir -p "$BATS_TEST_TMPDIR/pause1" "$BATS_TEST_TMPDIR/pause3"
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

# cluster: the 100 keys on p1 and p3, the sources, each holding its
# copies at its own pause; p2 the one target. The keys made hot: 100
# leases, the fewest under way first, so 50 a source; of each source's,
# the two its workers took started (their room on p2 reserved) and held,
# the rest queued at the source.
cluster() {
	master "$@"
	source_peer p1 host1
	source_peer p3 host3
	fill --replicas 2 put
	mc_start_peer p2 --host-id host2 --http 127.0.0.1:0
	local i
	for i in 1 2 3 4 5; do
		fill check
	done
	wait_until 20 leases_are 100
	wait_until 10 test -e "$BATS_TEST_TMPDIR/pause1/copy.paused"
	wait_until 10 test -e "$BATS_TEST_TMPDIR/pause3/copy.paused"
	wait_until 10 leases_started_are 4
	mc-replicate --json leases | jq -s -e 'group_by(.source) | map(length) == [50, 50]'
}

# source_peer NAME HOST: a peer whose copies wait at $BATS_TEST_TMPDIR/pauseN.
source_peer() {
	MC_FAULT='copy:pause' MC_FAULT_DIR="$BATS_TEST_TMPDIR/pause${1#p}" \
		mc_start_peer "$1" --host-id "$2" --http 127.0.0.1:0
}

# release NAME: NAME's copies go on.
release() {
	touch "$BATS_TEST_TMPDIR/pause${1#p}/copy"
}

outcome() {
	mc_series master mc_replication_copies_total "outcome=\"$1\""
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

@test "faults: kill -9 a source in the middle of 100 copies: reads stay right, its leases expire with their reservations, its keys cool; the other source's copies complete" {
	cluster
	[ "$(room_on p2)" -gt 0 ]
	mc_kill9 p1
	release p3
	wait_until 20 mc_metric_at_least master 'mc_replication_copies_total{outcome="completed"}' 50
	fill verify
	fill check
	# nothing of the dead source's is held past the expiry
	advance_clock 31000
	wait_until 10 leases_are 0
	[ "$(outcome expired)" -eq 50 ]
	[ "$(outcome completed)" -eq 50 ]
	[ "$(processing)" -eq 0 ]
	[ "$(mc_metric master mc_replication_dynamic_replicas)" -eq 50 ]
	[ "$(mc-replicate --json status | jq '.copies.cooldowns')" -eq 50 ]
	fill check
}

@test "faults: kill -9 the target in the middle of 100 copies: the sources revoke what they started, the rest is refused, reads stay right, nothing is left reserved" {
	cluster
	mc_kill9 p2
	release p1
	release p3
	wait_until 30 ended_are 100
	leases_are 0
	[ "$(outcome revoked)" -eq 4 ]
	[ "$(outcome refused)" -eq 96 ]
	[ "$(processing)" -eq 0 ]
	[ "$(mc_metric p1 mc_peer_copies_running)" -eq 0 ]
	[ "$(mc_metric p3 mc_peer_copies_running)" -eq 0 ]
	# the copies that failed under way cool their keys; a start refused does not
	[ "$(mc-replicate --json status | jq '.copies.cooldowns')" -eq 4 ]
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
	# the copies go on at the sources, and the new master knows none of them
	release p1
	release p3
	wait_until 30 copies_settled p1
	wait_until 30 copies_settled p3
	leases_are 0
	[ "$(processing)" -eq 0 ]
	fill check
	# the target's copies, if it kept any, are the object's bytes: read from it alone
	mc_kill9 p1
	mc_kill9 p3
	fill verify
}

# copies_settled NAME: source NAME's copy worker has ended its 50.
copies_settled() {
	local done failed refused
	done="$(mc_series "$1" mc_peer_copies_total 'outcome="done"')"
	failed="$(mc_series "$1" mc_peer_copies_total 'outcome="failed"')"
	refused="$(mc_series "$1" mc_peer_copies_total 'outcome="refused"')"
	[ $((done + failed + refused)) -ge 50 ] && [ "$(mc_metric "$1" mc_peer_copies_running)" -eq 0 ]
}
