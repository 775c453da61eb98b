#!/usr/bin/env bats
#
# Peers that evict for themselves: a peer names the tiers it evicts
# (self_evict, on its registration and every heartbeat) and the master's
# watermark rounds leave them alone; a tier whose overage the peer cannot
# cover itself (stalled) gets a master round; quota and on-demand rounds
# still reach it, and a put that finds no room there waits for the peer
# to free it. The peers are played with mc-rpc, as in tiers.bats; a
# last case reads through two real peers, one of which lost its copy.

load helpers

OBJ=500

setup() {
	mc_require_bins mc-master mc-cli mc-rpc
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# master [ARGS...]: over 90% of a tier evicting to 50%, on the fake clock.
master() {
	mc_start_master --http 127.0.0.1:0 --peer-ttl 60s --evict-high-watermark 0.9 \
		--evict-low-watermark 0.5 "$@"
}

# register NAME [FIELDS...]: a peer with 100000 bytes of dram; prints its id.
register() {
	local name="$1"
	shift
	mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/$name.sock" \
		'tiers:=[{"tier":"dram","capacity":100000,"used":0}]' 'task_kinds:=["drop","evict"]' \
		"$@" | mc_keep_session
}

# fill ID N: inventory copies k0..k<N-1> of OBJ bytes on dram for peer ID.
fill() {
	local items
	items="$(jq -cn --argjson n "$2" --argjson size "$OBJ" \
		'[range(0; $n) | {tenant: "default", key: "k\(.)", tier: "dram",
		size: $size, version: (. + 1), checksum: 7}]')"
	mc-rpc "$MC_MASTER" peer_inventory peer_id:="$1" "$(mc_session "$1")" done:=true \
		"items:=$items" >/dev/null
}

heartbeat() {
	local id="$1"
	shift
	mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" "$@" >/dev/null
}

used() {
	mc-cli --json peers | jq -s --argjson id "$1" \
		'[.. | objects | select(.peer_id? == $id) | .tiers[]? | select(.tier == "dram") |
		.used] | add'
}

used_is() {
	advance_clock 200
	[ "$(used "$1")" -eq "$2" ]
}

used_at_most() {
	advance_clock 200
	[ "$(used "$1")" -le "$2" ]
}

metric_is() {
	[ "$(mc_metric master "$1")" = "$2" ]
}

@test "selfevict: a tier the peer evicts itself gets no watermark round, and it is listed" {
	local id
	master
	id="$(register p evict_mode=local 'self_evict:=["dram"]')"
	fill "$id" 200
	heartbeat "$id" 'self_evict:=["dram"]'
	advance_clock 10000
	heartbeat "$id" 'self_evict:=["dram"]'
	advance_clock 10000
	# the watermark check is the master's sweep: once it has skipped the tier
	wait_until 10 mc_metric_at_least master 'mc_rounds_skipped_total{why="self_evict"}' 1
	[ "$(used "$id")" -eq 100000 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -eq 0 ]
	[ "$(mc_metric master mc_peers_self_evicting)" -eq 1 ]
	mc-cli --json peers | jq -e --argjson id "$id" \
		'.. | objects | select(.peer_id? == $id) | .self_evict == ["dram"] and
		.evict_mode == "local"' >/dev/null
	# a heartbeat without the tier hands it back to the master's rounds
	heartbeat "$id" 'self_evict:=[]'
	wait_until 10 used_is "$id" 50000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -ge 1 ]
	[ "$(mc_metric master mc_peers_self_evicting)" -eq 0 ]
}

@test "selfevict: a peer that names no self_evict (an older one) keeps the master's rounds" {
	local id
	master
	id="$(register p evict_mode=master)"
	fill "$id" 200
	wait_until 10 used_is "$id" 50000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -ge 1 ]
	[ "$(mc_metric master 'mc_rounds_skipped_total{why="self_evict"}')" -eq 0 ]
	mc-cli --json peers | jq -e '.. | objects | select(.peer_id? != null) |
		.self_evict == []' >/dev/null
}

@test "selfevict: a heartbeat naming a stalled tier starts a master round for it" {
	local id
	master
	id="$(register p 'self_evict:=["dram"]')"
	fill "$id" 200
	advance_clock 10000
	[ "$(used "$id")" -eq 100000 ]
	heartbeat "$id" 'self_evict:=["dram"]' 'stalled:=["dram"]'
	wait_until 10 used_is "$id" 50000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="stalled"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -eq 0 ]
}

@test "selfevict: on-demand rounds and quota rounds still reach a self-evicting peer" {
	local id
	printf 'default 60000\n' >"$BATS_TEST_TMPDIR/quotas"
	master --quota-file "$BATS_TEST_TMPDIR/quotas" --put-wait 0
	id="$(register p 'self_evict:=["dram"]')"
	fill "$id" 200
	mc-cli evict --target 10000 >/dev/null
	wait_until 10 used_is "$id" 90000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="manual"}')" -eq 1 ]
	# a put over the tenant's quota starts its round, on this peer's copies; the
	# charge is the 180 objects' 90000 bytes and each one's key and 256 bytes of
	# overhead, and the put's 100 bytes and its own
	run -1 mc-rpc "$MC_MASTER" put_start key=over size:=100
	assert_output --partial "over its quota: 136720 + 360 bytes of 60000; eviction started"
	wait_until 10 metric_is 'mc_evict_rounds_total{trigger="quota"}' 1
	# down to the quota's low mark, 50% of it
	wait_until 10 used_at_most "$id" 30000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="quota"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -eq 0 ]
}

@test "selfevict: a put with no room on a self-evicting tier waits for the peer to free it" {
	local id
	master --put-wait 30s
	id="$(register p 'self_evict:=["dram"]')"
	fill "$id" 200
	mc-rpc "$MC_MASTER" put_start key=new size:=2000 >"$BATS_TEST_TMPDIR/put" 2>&1 &
	local put=$!
	wait_until 10 metric_is mc_put_waiting 1
	# the master starts no round of its own for it
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 0 ]
	local i
	for i in 0 1 2 3; do
		mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" \
			--then-notify copy_dropped \
			peer_id:="$id" tenant=default key="k$i" version:=$((i + 1)) tier=dram \
			reason=reclaim >/dev/null
	done
	wait "$put"
	jq -e '.replicas | length == 1' "$BATS_TEST_TMPDIR/put" >/dev/null
	[ "$(mc_metric master 'mc_put_waits_total{outcome="placed"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 0 ]
}

@test "selfevict: an unknown tier in self_evict or stalled is refused naming the field; the link stays" {
	local id
	master
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/q.sock" \
		'tiers:=[{"tier":"dram","capacity":100000,"used":0}]' 'self_evict:=["tape"]'
	assert_output --partial "self_evict[0]: unknown tier 'tape'"
	id="$(register p 'self_evict:=["dram"]')"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" \
		'stalled:=["dram","tape"]'
	assert_output --partial "stalled[1]: unknown tier 'tape'"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" \
		'self_evict:="dram"'
	assert_output --partial "field 'self_evict' must be an array of tier names"
	# nothing changed, and the next good heartbeat is taken
	mc-cli --json peers | jq -e '.. | objects | select(.peer_id? != null) |
		.self_evict == ["dram"]' >/dev/null
	heartbeat "$id" 'self_evict:=["dram"]'
	mc-cli peers >/dev/null
}

@test "read race: a copy gone behind the master's back is read from the other replica, and counted" {
	mc_require_bins mc-peer
	mc_start_master --http 127.0.0.1:0
	mc_start_peers 2 --fault-inject --http 127.0.0.1:0
	mc-cli put --replicas 2 raced <<<"hello"
	[ "$(mc_metric master mc_read_raced_total)" -eq 0 ]
	# drop one copy on its peer, without telling the master
	local gone=peer1 i
	mc-rpc "$(mc_addr "$gone")" drop tenant=default key=raced >/dev/null
	# readers spread over equal replicas: each reads the key whole, until
	# one tried the dropped copy first
	for ((i = 0; i < 16; i++)); do
		run -0 mc-cli get raced
		assert_output hello
		[ "$(mc_metric "$gone" mc_peer_read_misses_total)" -ge 1 ] && break
	done
	[ "$(mc_metric "$gone" mc_peer_read_misses_total)" -eq 1 ]
	wait_until 10 metric_is mc_read_raced_total 1
}
