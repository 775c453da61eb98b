#!/usr/bin/env bats
#
# The master's ranking for peers that evict for themselves
# (evict_candidates, mc-wire(5)): a real master and peer, keys written
# and read through mc-cli, the ranking asked for with mc-rpc as the peer
# asks it, and local reads reported on a heartbeat as the peer would.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_test_dir
	mc_start_master --http 127.0.0.1:0
	mc_start_peer p1 --session-file "$MC_DIR/p1.session"
	PEER="$(mc_peer_id "$MC_LAST_ADDR")"
	[ -n "$PEER" ]
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# put KEY BYTES: a value of BYTES bytes under KEY.
put() {
	head -c "$2" /dev/zero | mc-cli put "$1"
}

# rank [FIELDS...]: the ranking of $PEER's dram copies, keys space-separated,
# then "more" or "done".
rank() {
	local out
	out="$(mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)" tier=dram \
		"$@")" || return 1
	jq -r '([.keys[].key] | join(" ")) + " " + (if .more then "more" else "done" end)' \
		<<<"$out"
}

@test "rank: least recently accessed first; a read moves a key to the warm end" {
	put k1 100
	put k2 200
	put k3 300
	run -0 rank
	assert_output "k1 k2 k3 done"
	mc-cli get k1 >/dev/null
	run -0 rank
	assert_output "k2 k3 k1 done"
	# every entry carries its tenant, version and size
	run -0 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)" tier=dram max:=1
	[ "$(jq -c '.keys[0] | [.tenant, .key, .bytes, (.version > 0)]' <<<"$output")" = \
		'["default","k2",200,true]' ]
}

@test "rank: a byte budget and a key cap stop the walk, and more says so" {
	put k1 100
	put k2 200
	put k3 300
	run -0 rank bytes:=250
	assert_output "k1 k2 more"
	run -0 rank bytes:=100
	assert_output "k1 more"
	run -0 rank max:=2
	assert_output "k1 k2 more"
	run -0 rank max:=3
	assert_output "k1 k2 k3 done"
	# the peer has no ssd: nothing there
	run -0 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)" tier=ssd
	[ "$(jq -c '[.keys, .more]' <<<"$output")" = '[[],false]' ]
}

@test "rank: leased, hard-pinned, soft-pinned and grouped keys are not offered" {
	put k1 100
	put k2 100
	put k3 100
	echo x | mc-cli put --hard-pin hard
	echo x | mc-cli put --soft-pin enable:1h soft
	echo x | mc-cli put --group g member
	mc_hold_lease k1
	run -0 rank
	assert_output "k2 k3 done"
}

@test "rank: keys the peer read locally rank behind all others, their read count unchanged" {
	put k1 100
	put k2 100
	put k3 100
	local before
	before="$(mc_stat_json k1 | jq .access_count)"
	run -0 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$PEER" "$(mc_session p1)" \
		'local_reads:=[{"tenant":"default","key":"k1"},{"tenant":"default","key":"gone"}]'
	run -0 rank
	assert_output "k2 k3 k1 done"
	[ "$(mc_stat_json k1 | jq .access_count)" = "$before" ]
	[ "$(mc_metric master 'mc_local_reads_total{result="recorded"}')" = 1 ]
	[ "$(mc_metric master 'mc_local_reads_total{result="unknown"}')" = 1 ]
}

@test "rank: bad fields are refused, naming the field; the master keeps serving" {
	put k1 100
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:=999 tier=dram
	assert_output --partial "permission denied: peer 999 is not the peer registered on this"
	# another connection speaks for the peer only with its session
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" tier=dram
	assert_output --partial "is not the peer registered on this connection"
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" tier=dram \
		session="$(printf '0%.0s' {1..32})"
	assert_output --partial "is not the peer registered on this connection"
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)" tier=tape
	assert_output --partial "invalid: tier"
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)" tier=hbm
	assert_output --partial "invalid: tier"
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)"
	assert_output --partial "invalid: tier"
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)" tier=dram max:=0
	assert_output --partial "invalid: max"
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$PEER" "$(mc_session p1)" tier=dram max:=4097
	assert_output --partial "invalid: max"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$PEER" "$(mc_session p1)" 'local_reads:=[{"key":"k1"}]'
	assert_output --partial "local_reads"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$PEER" "$(mc_session p1)" 'local_reads:="k1"'
	assert_output --partial "local_reads"
	run -0 rank
	assert_output "k1 done"
	[ "$(mc_metric master mc_rank_queries_total)" = 1 ]
	[ "$(mc_metric master mc_rank_answer_keys_total)" = 1 ]
	[ "$(mc_metric master mc_rank_query_seconds_count)" = 1 ]
}

@test "rank: reply.evict_candidates:pause holds the answer until released" {
	mc_stop_all
	export MC_FAULT_DIR="$MC_DIR/faults"
	mkdir -p "$MC_FAULT_DIR"
	MC_FAULT=reply.evict_candidates:pause mc_start_master
	mc_start_peer p1 --session-file "$MC_DIR/p1.session"
	PEER="$(mc_peer_id "$MC_LAST_ADDR")"
	put k1 100
	rank >"$BATS_TEST_TMPDIR/answer" &
	local asker=$!
	wait_until 10 test -e "$MC_FAULT_DIR/reply.evict_candidates.paused"
	[ ! -s "$BATS_TEST_TMPDIR/answer" ]
	touch "$MC_FAULT_DIR/reply.evict_candidates"
	wait "$asker"
	[ "$(cat "$BATS_TEST_TMPDIR/answer")" = "k1 done" ]
}

# ranked_is WANT [FIELDS...]: the ranking of the peer at $PEER_ADDR (its id
# may change) is WANT.
ranked_is() {
	local want="$1"
	shift
	PEER="$(mc_peer_id "$PEER_ADDR")"
	[ -n "$PEER" ] && [ "$(rank "$@" 2>/dev/null)" = "$want" ]
}

@test "rank: a restored master ranks by the recency it saved" {
	mc_stop_all
	mkdir -p "$MC_DIR/snap"
	mc_start_master --snapshot-dir "$MC_DIR/snap" --peer-ttl 1h
	mc_start_peer p1 --session-file "$MC_DIR/p1.session"
	PEER_ADDR="$MC_LAST_ADDR"
	# more keys than a copy reported after the restart could be placed by
	# walking in from the warm end: only the rebuild puts them in order
	mc-fill --prefix k -n 300 --min-size 100 --max-size 100 put
	mc-fill --prefix k -n 150 --min-size 100 --max-size 100 check
	local before
	before="$(rank max:=300)"
	[ "${before%% *}" = k000150 ]
	mc-snapshot save >/dev/null
	mc_kill9 master
	mc_start_master --snapshot-dir "$MC_DIR/snap" --peer-ttl 1h --restore latest
	wait_until 20 ranked_is "$before" max:=300
}
