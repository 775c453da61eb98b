#!/usr/bin/env bats
#
# Dynamic hot replication in enforce mode, end to end (seed 002;
# mc-master(8) --dynamic-replication, mc-replicate(1)): a key read hot
# gets dynamic DRAM replicas on other hosts, made by its source peer's
# copy worker under a lease, and its reads spread over them; a key is
# hot per requester domain and its replica goes into that domain; an
# evicted dynamic replica cools its domain only; a new domain warms up;
# proposals are idempotent; a lease that runs out leaves nothing behind.
# Time (the heat window, cooldowns, leases) is the fake clock's.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-replicate mc-snapshot
	mc_test_dir
}

teardown() {
	mc_stop_everything
}

# enforce_master [ARGS...]: hot at 5 reads in 10 s, copies made.
enforce_master() {
	mc_start_master --http 127.0.0.1:0 --dynamic-replication enforce \
		--dynamic-replication-window 10s --dynamic-replication-qps 0.5 "$@"
}

# peer NAME HOST DOMAIN [ARGS...]
peer() {
	local name="$1" host="$2" domain="$3"
	shift 3
	mc_start_peer "$name" --host-id "$host" --domain "$domain" --http 127.0.0.1:0 "$@"
}

# reads N KEY [DOMAIN]: N gets of KEY by readers of DOMAIN, each a client of its own.
reads() {
	local i
	for ((i = 0; i < $1; i++)); do
		MC_DOMAIN="${3:-}" mc-cli get "$2" >/dev/null
	done
}

# dynamic_on KEY: the peers (by address) holding a readable dynamic replica of KEY.
dynamic_on() {
	mc_stat_json "$1" |
		jq -r '.replicas[] | select(.dynamic and .state == "complete") | .addr' | sort
}

# dynamic_is KEY PEER: PEER alone holds a readable dynamic replica of KEY; the record is
# printed when not.
dynamic_is() {
	local on
	on="$(dynamic_on "$1")"
	if [ "$on" != "$(mc_addr "$2")" ]; then
		echo "# $1's dynamic replicas are on '$on', not on $2 ($(mc_addr "$2")):" >&2
		mc-cli --json stat "$1" >&2
		return 1
	fi
}

dynamic_count() {
	mc_stat_json "$1" | jq '[.replicas[] | select(.dynamic and .state == "complete")] | length'
}

dynamic_count_is() {
	[ "$(dynamic_count "$1")" -eq "$2" ]
}

status_field() {
	mc-replicate --json status | jq -r ".$1"
}

rejected() {
	mc_series master mc_replication_rejected_total "reason=\"$1\""
}

# a_file NAME SIZE: random bytes of SIZE in the test's directory.
a_file() {
	head -c "$2" /dev/urandom >"$BATS_TEST_TMPDIR/$1"
	echo "$BATS_TEST_TMPDIR/$1"
}

# a_key KEY SIZE: KEY put with SIZE random bytes while only p1 runs, so p1 holds it.
a_key() {
	mc-cli put "$1" <"$(a_file "$1" "$2")"
}

# reads_served_by PEER...: the reads each PEER served, one a line.
reads_served_by() {
	local p
	for p in "$@"; do
		mc_metric "$p" mc_peer_reads_total
	done
}

# rack_a [ARGS...]: an enforcing master, and p1..p3 on hosts of their own in rack-a;
# KEY hot (256 KiB) is put while p1 alone runs.
rack_a() {
	enforce_master
	peer p1 host1 rack-a "$@"
	a_key hot 262144
	peer p2 host2 rack-a "$@"
	peer p3 host3 rack-a "$@"
}

# fanout_case [PEER ARGS...]: the first test, with the peers started by ARGS.
fanout_case() {
	rack_a "$@"
	reads 5 hot rack-a
	# Master-side hot admission queues a copy; the Get path expands it
	wait_until 10 dynamic_count_is hot 1
	[ "$(mc_series master mc_tasks_queued_total 'kind="replica_copy"')" -eq 1 ]
	[ "$(mc_series master mc_replication_copies_total 'outcome="completed"')" -eq 1 ]
	# another host, never the source's: p1 holds the original
	run -0 dynamic_on hot
	refute_output "$(mc_addr p1)"
	# the copy's bytes are the original's, read from the new replica
	local on
	on="$(dynamic_on hot)"
	mc-cli get hot >"$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/hot" "$BATS_TEST_TMPDIR/back"
	# judged again only one window on: a second replica, on the third host
	advance_clock 20000
	reads 5 hot rack-a
	wait_until 10 dynamic_count_is hot 2
	# max replicas suppresses fanout: two windows more, and no third
	advance_clock 20000
	reads 5 hot rack-a
	wait_until 10 mc_metric_at_least master 'mc_replication_rejected_total{reason="max_replicas"}' 1
	dynamic_count_is hot 2
	[ "$(mc_metric master mc_replication_dynamic_replicas)" -eq 2 ]
	# and the reads spread over the three copies
	local before after i
	before="$(reads_served_by p1 p2 p3 | paste -sd' ')"
	reads 30 hot rack-a
	after="$(reads_served_by p1 p2 p3 | paste -sd' ')"
	read -r -a b <<<"$before"
	read -r -a a <<<"$after"
	for i in 0 1 2; do
		echo "# p$((i + 1)) served $((a[i] - b[i])) of 30" >&3
		[ $((a[i] - b[i])) -ge 3 ]
	done
	[ -n "$on" ]
}

@test "enforce: master-side hot admission queues a copy; the get path expands after threshold crossing, onto other hosts, one a window; the copy lifecycle marks dynamic replica completion, with the original's bytes; the max replica limit suppresses fanout; reads spread over the replicas" {
	fanout_case
}

@test "enforce: the same with the peers evicting for themselves (--eviction-mode local)" {
	fanout_case --eviction-mode local
}

@test "enforce: the batch get path expands after threshold crossing, as a get does" {
	rack_a
	local i
	for ((i = 0; i < 5; i++)); do
		MC_DOMAIN=rack-a mc-rpc "$MC_MASTER" batch_get_replica_list 'keys:=["hot"]' >/dev/null
	done
	wait_until 10 dynamic_count_is hot 1
}

@test "enforce: observe mode does not queue a copy; switched to enforce, the next window's judgement does" {
	mc_start_master --http 127.0.0.1:0 --dynamic-replication observe \
		--dynamic-replication-window 10s --dynamic-replication-qps 0.5
	peer p1 host1 rack-a
	a_key hot 4096
	peer p2 host2 rack-a
	reads 5 hot rack-a
	wait_until 10 mc_metric_at_least master mc_replication_would_propose_total 1
	[ "$(mc_series master mc_tasks_queued_total 'kind="replica_copy"')" -eq 0 ]
	dynamic_count_is hot 0
	run -0 mc-replicate mode enforce
	assert_output "mode: enforce (was observe)"
	advance_clock 20000
	reads 5 hot rack-a
	wait_until 10 dynamic_count_is hot 1
}

@test "enforce: requester-domain admission is independent across domains; target selection chooses a peer in the requester domain; an existing readable replica in the target domain suppresses cross-domain copy; same-domain fanout still works after a target-domain replica exists" {
	enforce_master --dynamic-replication-max-replicas 4
	peer p1 host1 rack-a
	a_key hot 65536
	peer p2 host2 rack-a
	peer p4 host4 rack-b
	peer p5 host5 rack-b
	# 3 reads from each domain: hot in neither
	reads 3 hot rack-a
	reads 3 hot rack-b
	[ "$(status_field triggers)" -eq 0 ]
	reads 2 hot rack-b
	wait_until 10 dynamic_count_is hot 1
	# in rack-b, copied across from rack-a's only replica
	run -0 dynamic_on hot
	assert_output --regexp "$(mc_addr p4)|$(mc_addr p5)"
	[ "$(mc_series master mc_replication_copied_total 'scope="cross"')" -eq 1 ]
	# hot from rack-b again: a readable replica in rack-b now is the source, within it
	advance_clock 20000
	reads 5 hot rack-b
	wait_until 10 dynamic_count_is hot 2
	[ "$(mc_series master mc_replication_copied_total 'scope="same"')" -eq 1 ]
	[ "$(mc_series master mc_replication_copied_total 'scope="cross"')" -eq 1 ]
	# rack-b has no host left to copy to; rack-a still gets its own fanout
	advance_clock 20000
	reads 5 hot rack-b
	wait_until 10 mc_metric_at_least master 'mc_replication_rejected_total{reason="no_target"}' 1
	reads 5 hot rack-a
	wait_until 10 dynamic_count_is hot 3
}

@test "enforce: an evicted dynamic replica blocks immediate recreate, for the cooldown; the eviction cooldown is scoped to the evicted domain" {
	enforce_master --dynamic-replication-max-replicas 4 --dynamic-replication-cooldown 60s
	peer p1 host1 rack-a
	a_key hot 65536
	peer p2 host2 rack-a
	peer p4 host4 rack-b
	reads 5 hot rack-b
	wait_until 10 dynamic_count_is hot 1
	dynamic_is hot p4
	# p4's DRAM holds that replica alone: evicting from it takes it
	mc-cli evict --target 1 --peer "$(mc_peer_id "$(mc_addr p4)")" --tier dram >/dev/null
	wait_until 10 dynamic_count_is hot 0
	[ "$(status_field copies.cooldowns)" -eq 1 ]
	# dropped, not demoted: nothing of it left on p4
	[ "$(mc_stat_json hot | jq '.replicas | length')" -eq 1 ]
	advance_clock 20000
	reads 5 hot rack-b
	wait_until 10 mc_metric_at_least master 'mc_replication_rejected_total{reason="cooldown"}' 1
	dynamic_count_is hot 0
	# rack-a is not held back by rack-b's cooldown
	reads 5 hot rack-a
	wait_until 10 dynamic_count_is hot 1
	dynamic_is hot p2
	# past the cooldown rack-b gets its replica again
	advance_clock 60000
	reads 5 hot rack-b
	wait_until 10 dynamic_count_is hot 2
}

@test "enforce: a recreate cooldown outlives a kill -9 of the master restored from its snapshot" {
	local snaps="$BATS_TEST_TMPDIR/snaps"
	mkdir -p "$snaps"
	enforce_master --dynamic-replication-cooldown 60s --snapshot-dir "$snaps" --peer-ttl 1h
	peer p1 host1 rack-a
	a_key hot 65536
	peer p4 host4 rack-b
	reads 5 hot rack-b
	wait_until 10 dynamic_count_is hot 1
	mc-cli evict --target 1 --peer "$(mc_peer_id "$(mc_addr p4)")" --tier dram >/dev/null
	wait_until 10 dynamic_count_is hot 0
	mc-snapshot save >/dev/null
	mc_kill9 master
	enforce_master --dynamic-replication-cooldown 60s --snapshot-dir "$snaps" --peer-ttl 1h \
		--restore latest
	wait_until 10 mc_live_peer_count_is 2
	[ "$(status_field copies.cooldowns)" -eq 1 ]
	reads 5 hot rack-b
	wait_until 10 mc_metric_at_least master 'mc_replication_rejected_total{reason="cooldown"}' 1
	dynamic_count_is hot 0
	advance_clock 61000
	[ "$(status_field copies.cooldowns)" -eq 0 ]
}

@test "enforce: a dynamic replica made after the snapshot is one again for the master restored from it, by its peer's inventory" {
	local snaps="$BATS_TEST_TMPDIR/snaps"
	mkdir -p "$snaps"
	enforce_master --snapshot-dir "$snaps" --peer-ttl 1h
	peer p1 host1 rack-a
	a_key hot 65536
	peer p2 host2 rack-a
	mc-snapshot save >/dev/null
	reads 5 hot rack-a
	wait_until 10 dynamic_count_is hot 1
	mc_kill9 master
	enforce_master --snapshot-dir "$snaps" --peer-ttl 1h --restore latest
	wait_until 10 mc_live_peer_count_is 2
	wait_until 10 dynamic_count_is hot 1
	dynamic_is hot p2
	[ "$(mc_stat_json hot | jq '[.replicas[] | select(.dynamic | not)] | length')" -eq 1 ]
}

@test "enforce: warmup copies the hottest keys into a new domain; it skips objects that already exist in the target domain and respects the copy limit of --max-bytes" {
	enforce_master --dynamic-replication-max-replicas 4 --dynamic-replication-qps 100
	peer p1 host1 rack-a
	a_key k1 100000
	a_key k2 100000
	a_key k3 100000
	reads 3 k1 rack-a
	reads 2 k2 rack-a
	reads 1 k3 rack-a
	# nothing is hot at 1000 reads a window: warmup is not admission
	[ "$(status_field triggers)" -eq 0 ]
	run -64 mc-replicate warmup
	assert_output --partial "--domain"
	peer p4 host4 rack-b
	run -0 mc-replicate warmup --domain rack-b --max-bytes 250000
	assert_line "proposed: 2"
	assert_line "present: 0"
	wait_until 10 dynamic_count_is k1 1
	wait_until 10 dynamic_count_is k2 1
	dynamic_count_is k3 0
	dynamic_is k1 p4
	# again: the two there are skipped, the third fits now
	run -0 mc-replicate --json warmup --domain rack-b --max-bytes 250000
	jq -e '.proposed == 1 and .present == 2' <<<"$output"
	wait_until 10 dynamic_count_is k3 1
}

@test "propose: below-threshold admission is rejected (the master's own heat decides); a proposal is rejected when the target domain has no valid peer, and checked as admission checks a hot key; a valid preferred target is taken" {
	enforce_master
	peer p1 host1 rack-a
	a_key hot 4096
	peer p2 host2 rack-a
	peer p3 host3 rack-a
	run -1 mc-replicate propose hot --requester-domain rack-a
	assert_output "rejected: below_threshold"
	run -1 mc-replicate propose nothing-here --requester-domain rack-a
	assert_output "rejected: gone"
	reads 5 hot rack-a
	wait_until 10 dynamic_count_is hot 1
	# hot from rack-a, not from rack-b
	run -1 mc-replicate propose hot --requester-domain rack-b
	assert_output "rejected: below_threshold"
	# a target domain with no valid peer is rejected
	run -1 mc-replicate propose hot --requester-domain rack-a --target-domain rack-z
	assert_output "rejected: no_target"
	run -1 mc-replicate propose hot --requester-domain rack-a --observed-version 99 --observed-size 4096
	assert_output "rejected: version"
	run -1 mc-replicate propose hot --requester-domain rack-a --observed-version 1 --observed-size 5
	assert_output "rejected: size"
	run -1 mc-replicate propose hot --requester-domain rack-a --within 0
	assert_output "rejected: expired"
	# the preferred target is taken when it is a valid one
	local p3
	p3="$(mc_peer_id "$(mc_addr p3)")"
	if [ "$(dynamic_on hot)" = "$(mc_addr p3)" ]; then
		p3="$(mc_peer_id "$(mc_addr p2)")"
	fi
	run -0 mc-replicate --json propose hot --requester-domain rack-a --preferred-target "$p3"
	jq -e --argjson t "$p3" '.accepted and .lease.target == $t' <<<"$output"
	wait_until 10 dynamic_count_is hot 2
	run -1 mc-replicate propose hot --requester-domain rack-a
	assert_output "rejected: max_replicas"
	[ "$(rejected below_threshold)" -ge 2 ]
}

@test "propose: short proposal deadlines clamp the returned lease deadline; proposal idempotency returns the same lease; conflicting idempotency requests are rejected; expired pending dynamic leases retire unconsumed pending copy tasks; expired dynamic copy task cleanup removes dynamic state and enters recreate cooldown" {
	# tasks never reach the peers: the lease stays for the test to look at
	MC_FAULT='task.send:always' mc_start_master --http 127.0.0.1:0 \
		--dynamic-replication observe --dynamic-replication-window 10s \
		--dynamic-replication-qps 0.5 --dynamic-replication-lease 30s
	peer p1 host1 rack-a
	a_key hot 4096
	peer p2 host2 rack-a
	reads 5 hot rack-a
	wait_until 10 mc_metric_at_least master mc_replication_would_propose_total 1
	# observe: a proposal that passes is answered so, and queues nothing
	run -1 mc-replicate propose hot --requester-domain rack-a --id prop-0
	assert_output "rejected: observe"
	mc-replicate mode enforce >/dev/null
	run -0 mc-replicate --json propose hot --requester-domain rack-a --id prop-1 --within 5s
	jq -e '.accepted and .lease.stage == "queued" and .lease.expires_in_ms <= 5000 and
		.lease.domain == "rack-a" and .lease.proposal == "prop-1"' <<<"$output"
	local id
	id="$(jq -r '.lease.id' <<<"$output")"
	# the same again answers the same lease, its deadline aside
	run -0 mc-replicate --json propose hot --requester-domain rack-a --id prop-1 --within 9s
	jq -e --argjson id "$id" '.accepted and .lease.id == $id' <<<"$output"
	# single flight: another proposal for the key finds the copy under way
	run -1 mc-replicate propose hot --requester-domain rack-a --id prop-2
	assert_output "rejected: in_flight"
	run -0 mc-replicate leases
	assert_output --regexp "^$id  queued  [0-9]+  [0-9]+  rack-a  [0-9]+  default  hot$"
	run mc-replicate propose hot --requester-domain rack-b --id prop-1
	assert_failure
	assert_output --partial "proposal id 'prop-1' was given already for another proposal"
	# the deadline, not the 30 s lease, ends it: its task goes, nothing is left, the domain cools
	advance_clock 6000
	wait_until 10 mc_metric_at_least master 'mc_replication_copies_total{outcome="expired"}' 1
	[ "$(mc-replicate leases | wc -l)" -eq 0 ]
	[ "$(mc_series master mc_tasks_retired_total 'kind="replica_copy"')" -eq 1 ]
	[ "$(mc_stat_json hot | jq '.replicas | length')" -eq 1 ]
	[ "$(status_field copies.cooldowns)" -eq 1 ]
	run -1 mc-replicate propose hot --requester-domain rack-a
	assert_output "rejected: cooldown"
	# asked again under its id, the proposal answers what became of it
	run -0 mc-replicate --json propose hot --requester-domain rack-a --id prop-1 --within 9s
	jq -e --argjson id "$id" '.lease.id == $id and .lease.outcome == "expired"' <<<"$output"
}

# as_peer NAME METHOD FIELDS...: a call from peer NAME (its session file) on a connection of
# the test's own.
as_peer() {
	local id name="$1" method="$2"
	shift 2
	read -r id _ <"$MC_DIR/$name.session"
	mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$name")" \
		--then "$method" peer_id:="$id" "$@"
}

@test "dynamic copy calls: non-source clients cannot execute them; mismatched lease/version rejects copy end and copy revoke; a stale dynamic task without pending state is rejected; the copy then completes" {
	enforce_master
	MC_FAULT='copy:pause' MC_FAULT_DIR="$BATS_TEST_TMPDIR" \
		peer p1 host1 rack-a --session-file "$MC_DIR/p1.session"
	a_key hot 4096
	peer p2 host2 rack-a --session-file "$MC_DIR/p2.session"
	reads 5 hot rack-a
	wait_until 10 test -e "$BATS_TEST_TMPDIR/copy.paused"
	local id
	id="$(mc-replicate --json leases | jq -r '.id')"
	[ "$(mc-replicate --json leases | jq -r '.stage')" = started ]
	# started: the target's room is reserved, its replica not readable yet
	mc_stat_json hot | jq -e '[.replicas[] | select(.dynamic and .state == "processing")] |
		length == 1'
	dynamic_count_is hot 0
	# a client connection is no peer
	run mc-rpc "$MC_MASTER" dynamic_copy_end peer_id:=1 lease:="$id" version:=1
	assert_failure
	# the target is not the source
	run as_peer p2 dynamic_copy_end lease:="$id" version:=1
	assert_failure
	assert_output --partial "is not lease $id's source"
	run as_peer p2 dynamic_copy_revoke lease:="$id" version:=1
	assert_failure
	# the source with a stale version, or a lease that is not there
	run as_peer p1 dynamic_copy_end lease:="$id" version:=2
	assert_failure
	assert_output --partial "is for version 1"
	run as_peer p1 dynamic_copy_revoke lease:="$((id + 100))" version:=1
	assert_failure
	assert_output --partial "no lease"
	run as_peer p1 dynamic_copy_start lease:="$id" version:=1
	assert_failure
	assert_output --partial "started already"
	[ "$(mc-replicate --json leases | jq -r '.stage')" = started ]
	[ "$(mc_metric master mc_replication_copy_calls_stale_total)" -ge 2 ]
	# let it go: it completes as if nothing had been said
	touch "$BATS_TEST_TMPDIR/copy"
	wait_until 10 dynamic_count_is hot 1
	# a late end for a lease that ended is stale
	run as_peer p1 dynamic_copy_end lease:="$id" version:=1
	assert_failure
	assert_output --partial "no lease $id"
}

@test "enforce: bad flags name themselves" {
	run -64 mc-master --dynamic-replication-max-copies 0
	assert_output --partial "--dynamic-replication-max-copies"
	run -64 mc-master --dynamic-replication-lease 0
	assert_output --partial "--dynamic-replication-lease"
	run -64 mc-master --dynamic-replication-cooldown soon
	assert_output --partial "--dynamic-replication-cooldown"
	run -64 mc-replicate propose
	run -64 mc-replicate propose k --within never
	assert_output --partial "--within"
}

# held_master: an enforcing master whose tasks never reach a peer, so a lease waits in its
# queue for the test to speak as its source; p1 (host1) holds KEY hot, p2 and p3 are the
# other hosts of rack-a. hot was read hot in observe mode, so no lease of the master's own
# stands in the way of a proposal.
held_master() {
	MC_FAULT='task.send:always' mc_start_master --http 127.0.0.1:0 \
		--dynamic-replication observe --dynamic-replication-window 10s \
		--dynamic-replication-qps 0.5 --dynamic-replication-lease 30s "$@"
	peer p1 host1 rack-a --session-file "$MC_DIR/p1.session"
	a_key hot 4096
	peer p2 host2 rack-a --session-file "$MC_DIR/p2.session"
	peer p3 host3 rack-a --session-file "$MC_DIR/p3.session"
	reads 5 hot rack-a
	wait_until 10 mc_metric_at_least master mc_replication_would_propose_total 1
	mc-replicate mode enforce >/dev/null
}

# all_connected: every live peer is on its own connection again (a call as_peer makes moves a
# peer's link to the test's connection, which then closes, until its next heartbeat).
all_connected() {
	mc_peers_json | jq -s -e 'all(.[] | select(.alive); .connected)'
}

# as_source ID METHOD FIELDS...: a call from peer ID, whichever of p1..p3 that is (a
# lease's source: a key written anew may sit on any of them).
as_source() {
	local p src="$1"
	shift
	for p in p1 p2 p3; do
		if [ "$(mc_peer_id "$(mc_addr "$p")")" = "$src" ]; then
			as_peer "$p" "$@"
			return
		fi
	done
	echo "no peer is source $src" >&2
	return 1
}

# lease_field FIELD: FIELD of the one lease the master holds.
lease_field() {
	mc-replicate --json leases | jq -r ".$1"
}

# processing_replicas KEY: how many replicas of KEY are reserved and not readable yet.
processing_replicas() {
	mc_stat_json "$1" | jq '[.replicas[] | select(.state != "complete")] | length'
}

@test "dynamic copy start: version mismatch rejects it; invalid target cleanup removes incomplete dynamic replica state; its failure clears the pending state before another copy; a stale start does not clear a newer pending action" {
	held_master
	local p2 p3 first second version
	p2="$(mc_peer_id "$(mc_addr p2)")"
	p3="$(mc_peer_id "$(mc_addr p3)")"
	run -0 mc-replicate --json propose hot --requester-domain rack-a --id first \
		--preferred-target "$p2"
	jq -e --argjson t "$p2" '.lease.target == $t' <<<"$output"
	first="$(jq -r .lease.id <<<"$output")"
	version="$(jq -r .lease.version <<<"$output")"
	# a version that is not the lease's: refused, the lease waits on
	run as_peer p1 dynamic_copy_start lease:="$first" version:=$((version + 1))
	assert_failure
	assert_output --partial "is for version $version"
	# non-source clients cannot execute a copy start
	run as_peer p2 dynamic_copy_start lease:="$first" version:="$version"
	assert_failure
	assert_output --partial "is not lease $first's source"
	[ "$(lease_field stage)" = queued ]
	[ "$(processing_replicas hot)" -eq 0 ]
	# the target goes: the start is refused and nothing of the copy is left
	mc_stop p2
	wait_until 10 mc_peer_not_listed "$(mc_addr p2)"
	run as_peer p1 dynamic_copy_start lease:="$first" version:="$version"
	assert_failure
	assert_output --partial "the target peer is gone"
	[ "$(mc-replicate leases | wc -l)" -eq 0 ]
	[ "$(mc_series master mc_replication_copies_total 'outcome="refused"')" -eq 1 ]
	[ "$(mc_stat_json hot | jq '.replicas | length')" -eq 1 ]
	# no pending state and no cooldown: the next proposal gets its copy
	wait_until 10 all_connected
	run -0 mc-replicate --json propose hot --requester-domain rack-a --id second
	jq -e --argjson t "$p3" '.accepted and .lease.target == $t' <<<"$output"
	second="$(jq -r .lease.id <<<"$output")"
	# the first lease's start again, stale now, leaves the second alone
	run as_peer p1 dynamic_copy_start lease:="$first" version:="$version"
	assert_failure
	assert_output --partial "no lease $first"
	[ "$(lease_field id)" = "$second" ]
	[ "$(lease_field stage)" = queued ]
	# the second starts: the room on p3 is reserved, not readable
	run -0 as_peer p1 dynamic_copy_start lease:="$second" version:="$version"
	[ "$(lease_field stage)" = started ]
	[ "$(processing_replicas hot)" -eq 1 ]
	dynamic_count_is hot 0
	# no byte ever comes: at the lease's end the reservation goes with it, and rack-a cools
	advance_clock 31000
	wait_until 10 mc_metric_at_least master 'mc_replication_copies_total{outcome="expired"}' 1
	[ "$(processing_replicas hot)" -eq 0 ]
	[ "$(mc_stat_json hot | jq '.replicas | length')" -eq 1 ]
	[ "$(status_field copies.cooldowns)" -eq 1 ]
}

@test "dynamic copy start: version mismatch with the object rejects it, expired lease rejects it, and expired dynamic pending state does not block another copy" {
	held_master --dynamic-replication-max-replicas 4
	peer p4 host4 rack-b
	local id version source
	run -0 mc-replicate --json propose hot --requester-domain rack-a --id before-upsert
	id="$(jq -r .lease.id <<<"$output")"
	version="$(jq -r .lease.version <<<"$output")"
	# the key written anew: the lease's version is no longer the object's
	echo newer | mc-cli put --upsert hot
	run as_peer p1 dynamic_copy_start lease:="$id" version:="$version"
	assert_failure
	assert_output --partial "version $version is no longer the object's"
	[ "$(mc_series master mc_replication_copies_total 'outcome="lost"')" -eq 1 ]
	[ "$(mc-replicate leases | wc -l)" -eq 0 ]
	# a lease past its deadline is refused its start, whichever of the sweep and the start
	# sees it first, and cools its domain
	run -0 mc-replicate --json propose hot --requester-domain rack-a --id short --within 2s
	id="$(jq -r .lease.id <<<"$output")"
	version="$(jq -r .lease.version <<<"$output")"
	source="$(jq -r .lease.source <<<"$output")"
	advance_clock 3000
	run as_source "$source" dynamic_copy_start lease:="$id" version:="$version"
	assert_failure
	assert_output --partial "expired"
	wait_until 10 mc_metric_at_least master 'mc_replication_copies_total{outcome="expired"}' 1
	[ "$(mc-replicate leases | wc -l)" -eq 0 ]
	[ "$(processing_replicas hot)" -eq 0 ]
	wait_until 10 all_connected
	run -1 mc-replicate propose hot --requester-domain rack-a
	assert_output "rejected: cooldown"
	# nothing of it is pending: hot from rack-b, its copy is taken at once
	reads 5 hot rack-b
	wait_until 10 mc_metric_at_least master 'mc_replication_copies_created_total' 3
	[ "$(lease_field domain)" = rack-b ]
	[ "$(lease_field target)" = "$(mc_peer_id "$(mc_addr p4)")" ]
}

@test "propose: concurrent proposals for the same key/domain are single-flight" {
	held_master
	local i pids=()
	for ((i = 0; i < 8; i++)); do
		mc-replicate propose hot --requester-domain rack-a --id "race-$i" \
			>"$BATS_TEST_TMPDIR/race-$i" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	run cat "$BATS_TEST_TMPDIR"/race-*
	echo "$output"
	[ "$(grep -c '^accepted' <<<"$output")" -eq 1 ]
	[ "$(grep -c '^rejected: in_flight$' <<<"$output")" -eq 7 ]
	[ "$(mc-replicate leases | wc -l)" -eq 1 ]
	[ "$(mc_series master mc_tasks_queued_total 'kind="replica_copy"')" -eq 1 ]
}

@test "warmup respects the copy limit: past --dynamic-replication-max-copies a key is turned down busy, not queued" {
	held_master --dynamic-replication-max-copies 1 --dynamic-replication-max-replicas 4
	a_key second 4096
	# read hot in observe mode too: admission takes no slot of its own
	mc-replicate mode observe >/dev/null
	reads 5 second rack-a
	mc-replicate mode enforce >/dev/null
	peer p4 host4 rack-b
	run -0 mc-replicate --json warmup --domain rack-b
	jq -e '.proposed == 1 and .rejected.busy == 1' <<<"$output"
	[ "$(mc-replicate leases | wc -l)" -eq 1 ]
	[ "$(lease_field domain)" = rack-b ]
}
