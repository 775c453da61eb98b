#!/usr/bin/env bats
#
# The master's side of tiers (the SSD tier seed): eviction rounds that
# send their victims to the peers as evict tasks naming the tier, copies
# that stay readable while their peer demotes them, what the peers then
# report (copy_moved, copy_dropped, inventories), byte-sized rounds and
# their cap, per-peer watermarks, and puts that ask for a tier.
#
# The peers here are played with mc-rpc, so the master is tested on its
# own: a peer registers with its tiers, reports copies in an inventory
# (500 bytes each, so byte counts are exact), and reads the tasks the
# master sent it from the notifications that precede the answer to a
# heartbeat on a new connection.

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

# master [ARGS...]: a master on the fake clock with metrics, whose peers
# live a minute without heartbeats, over 90% of a tier evicting to 50%.
master() {
	mc_start_master --http 127.0.0.1:0 --peer-ttl 60s --evict-high-watermark 0.9 \
		--evict-low-watermark 0.5 "$@"
}

# tier NAME CAPACITY [HIGH LOW]: one entry of a registration's tiers.
tier() {
	if [ $# -gt 2 ]; then
		printf '{"tier":"%s","capacity":%s,"used":0,"high":%s,"low":%s}' "$@"
	else
		printf '{"tier":"%s","capacity":%s,"used":0}' "$@"
	fi
}

# register NAME TIERS-JSON [FIELDS...]: a peer at $MC_DIR/NAME.sock; prints its id.
register() {
	local name="$1" tiers="$2"
	shift 2
	mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/$name.sock" "tiers:=$tiers" "$@" |
		mc_keep_session
}

# items N TIER [FROM]: inventory items k<FROM>..k<FROM+N-1> of OBJ bytes on TIER.
items() {
	local n="$1" tier="$2" from="${3:-0}"
	jq -cn --argjson n "$n" --argjson from "$from" --arg tier "$tier" --argjson size "$OBJ" \
		'[range($from; $from + $n) | {tenant: "default", key: "k\(.)", tier: $tier,
		size: $size, version: (. + 1), checksum: 7}]'
}

# inventory ID ITEMS-JSON: report copies for peer ID.
inventory() {
	mc-rpc "$MC_MASTER" peer_inventory peer_id:="$1" "$(mc_session "$1")" done:=true \
		"items:=$2" >/dev/null
}

# tasks ID: the tasks the master sent peer ID and it has not acknowledged,
# one JSON item a line with the method that carried it ({method, key, tier, ...}).
tasks() {
	mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$1" "$(mc_session "$1")" |
		jq -c 'select(has("notify")) | .notify as $m | .params.items[] | . + {method: $m}'
}

# used ID TIER: what the master counts on peer ID's TIER, in bytes.
used() {
	mc-cli --json peers | jq -s --argjson id "$1" --arg t "$2" \
		'[.. | objects | select(.peer_id? == $id) | .tiers[]? | select(.tier == $t) |
		.used] | add'
}

used_is() {
	advance_clock 200
	[ "$(used "$1" "$2")" -eq "$3" ]
}

# moving ID TIER: of used, what demotions the master asked for are taking out.
moving() {
	mc-cli --json peers | jq -s --argjson id "$1" --arg t "$2" \
		'[.. | objects | select(.peer_id? == $id) | .tiers[]? | select(.tier == $t) |
		.moving] | add'
}

# staying ID TIER: what stays on the tier once its demotions land.
staying() {
	echo $(($(used "$1" "$2") - $(moving "$1" "$2")))
}

staying_is() {
	advance_clock 200
	[ "$(staying "$1" "$2")" -eq "$3" ]
}

# metric_is SERIES VALUE: the master's SERIES is VALUE now (read anew at each call).
metric_is() {
	[ "$(mc_metric master "$1")" = "$2" ]
}

# tier_of KEY: the tier of KEY's one replica.
tier_of() {
	mc_stat_json "$1" | jq -r '.replicas[0].tier'
}

@test "tiers: a round's victims become evict tasks naming their tier; with ssd below they stay readable" {
	local id
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]" 'task_kinds:=["drop","evict"]')"
	inventory "$id" "$(items 200 dram)"
	# 100% of dram: the round takes it to its low mark, 50%, by demotion:
	# the copies take their room until they moved
	wait_until 10 staying_is "$id" dram 50000
	[ "$(used "$id" dram)" -eq 100000 ]
	run -0 tasks "$id"
	[ "$(jq -s 'length' <<<"$output")" -eq 100 ]
	[ "$(jq -s 'map(select(.method == "evict" and .tier == "dram")) | length' <<<"$output")" -eq 100 ]
	# the evicted copies are still where they were, moving, and no candidate any more
	local victim
	victim="$(jq -r -s '.[0].key' <<<"$output")"
	run -0 mc-cli exist "$victim"
	[ "$(tier_of "$victim")" = dram ]
	run -0 mc-rpc "$MC_MASTER" candidates peer_id:="$id"
	[ "$(jq -r .count <<<"$output")" -eq 100 ]
	[ "$(mc_metric master 'mc_tasks_queued_total{kind="evict"}')" -eq 100 ]
	[ "$(mc_metric master 'mc_tasks_queued_total{kind="drop"}')" -eq 0 ]
}

@test "tiers: a victim on a peer's last tier goes at once, and the peer is told to evict it" {
	local id
	master
	id="$(register p "[$(tier dram 100000)]" 'task_kinds:=["drop","evict"]')"
	inventory "$id" "$(items 200 dram)"
	wait_until 10 used_is "$id" dram 50000
	run -0 tasks "$id"
	[ "$(jq -s 'map(select(.method == "evict" and .tier == "dram")) | length' <<<"$output")" -eq 100 ]
	run -1 mc-cli exist "$(jq -r -s '.[0].key' <<<"$output")"
}

@test "tiers: a peer that serves no evict task is sent drops, its victims gone at once" {
	local id
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]")"
	inventory "$id" "$(items 200 dram)"
	wait_until 10 used_is "$id" dram 50000
	run -0 tasks "$id"
	[ "$(jq -s 'map(select(.method == "drop" and (has("tier") | not))) | length' <<<"$output")" -eq 100 ]
	run -1 mc-cli exist "$(jq -r -s '.[0].key' <<<"$output")"
}

# evicted ID: peer ID over its high mark on dram, evicted down to 50%
# (100 of 200 copies moving to ssd); prints the victims' keys.
evicted() {
	inventory "$1" "$(items 200 dram)"
	wait_until 10 staying_is "$1" dram 50000
	tasks "$1" | jq -r 'select(.method == "evict") | .key'
}

# as_peer ID METHOD FIELDS...: a notification from peer ID on its own link.
as_peer() {
	local id="$1" method="$2"
	shift 2
	mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" --then-notify "$method" peer_id:="$id" \
		tenant=default "$@" >/dev/null
}

# version_of KEY: inventory item KEY's version (k<N> has N + 1).
version_of() {
	echo $((${1#k} + 1))
}

candidates_of() {
	mc-rpc "$MC_MASTER" candidates peer_id:="$1" | jq -r .count
}

@test "copy_moved: the replica takes its new tier, its bytes move there, and it is a candidate again" {
	local id v
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]" 'task_kinds:=["drop","evict"]')"
	v="$(evicted "$id" | head -n 1)"
	[ "$(used "$id" ssd)" -eq 0 ]
	[ "$(candidates_of "$id")" -eq 100 ]
	as_peer "$id" copy_moved key="$v" version:="$(version_of "$v")" size:=$OBJ from=dram to=ssd
	[ "$(tier_of "$v")" = ssd ]
	[ "$(used "$id" ssd)" -eq $OBJ ]
	[ "$(used "$id" dram)" -eq $((100000 - OBJ)) ]
	[ "$(staying "$id" dram)" -eq 50000 ]
	[ "$(candidates_of "$id")" -eq 101 ]
	[ "$(mc_metric master 'mc_copies_moved_total{from="dram",to="ssd"}')" -eq 1 ]
	# a promotion back moves the bytes back
	as_peer "$id" copy_moved key="$v" version:="$(version_of "$v")" size:=$OBJ from=ssd to=dram
	[ "$(tier_of "$v")" = dram ]
	[ "$(used "$id" ssd)" -eq 0 ]
	[ "$(staying "$id" dram)" -eq $((50000 + OBJ)) ]
}

@test "copy_dropped: the replica goes without a drop and its object with it" {
	local id v w
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]" 'task_kinds:=["drop","evict"]')"
	evicted "$id" >"$BATS_TEST_TMPDIR/victims"
	v="$(sed -n 1p "$BATS_TEST_TMPDIR/victims")"
	w="$(sed -n 2p "$BATS_TEST_TMPDIR/victims")"
	run -0 mc-cli exist "$v"
	as_peer "$id" copy_dropped key="$v" version:="$(version_of "$v")" tier=dram reason=no_space
	run -1 mc-cli exist "$v"
	[ "$(mc_metric master 'mc_copies_dropped_total{tier="dram",reason="no_space"}')" -eq 1 ]
	# a copy the peer reclaimed on ssd after it moved there
	as_peer "$id" copy_moved key="$w" version:="$(version_of "$w")" size:=$OBJ from=dram to=ssd
	as_peer "$id" copy_dropped key="$w" version:="$(version_of "$w")" tier=ssd reason=reclaim
	run -1 mc-cli exist "$w"
	[ "$(used "$id" ssd)" -eq 0 ]
	[ "$(mc_metric master 'mc_copies_dropped_total{tier="ssd",reason="reclaim"}')" -eq 1 ]
	# the master sent no drop for either
	[ "$(mc_metric master 'mc_tasks_queued_total{kind="drop"}')" -eq 0 ]
}

@test "copy notices for no such replica are counted and ignored; only the peer itself reports" {
	local id v
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]" 'task_kinds:=["drop","evict"]')"
	v="$(evicted "$id" | head -n 1)"
	as_peer "$id" copy_moved key="$v" version:=999 size:=$OBJ from=dram to=ssd
	as_peer "$id" copy_dropped key=nosuchkey version:=1 tier=dram reason=corrupt
	[ "$(tier_of "$v")" = dram ]
	[ "$(mc_metric master 'mc_copy_notices_stale_total{method="copy_moved"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_copy_notices_stale_total{method="copy_dropped"}')" -eq 1 ]
	run -1 mc-rpc "$MC_MASTER" copy_dropped peer_id:="$id" tenant=default key="$v" \
		version:=1 tier=dram reason=reclaim
	assert_output --partial "is not the peer registered on this connection"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" --then copy_dropped \
		peer_id:="$id" tenant=default key="$v" version:=1 tier=dram reason=tired
	assert_output --partial "unknown reason 'tired'"
	run -0 mc-cli exist "$v"
}

@test "an inventory that confirms a moving copy ends its move" {
	local id v
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]" 'task_kinds:=["drop","evict"]')"
	v="$(evicted "$id" | head -n 1)"
	inventory "$id" "$(items 1 ssd "${v#k}")"
	[ "$(tier_of "$v")" = ssd ]
	[ "$(used "$id" ssd)" -eq $OBJ ]
	[ "$(candidates_of "$id")" -eq 101 ]
}

@test "rounds are sized in bytes: one round frees the whole overage, however many keys" {
	local id from
	master
	id="$(register p "[$(tier dram 1000000)]")"
	# in chunks: one argument holds at most 128 KiB
	for from in 0 500 1000 1500; do
		inventory "$id" "$(items 500 dram "$from")"
	done
	wait_until 10 used_is "$id" dram 500000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evicted_objects_total{kind="evict",trigger="watermark"}')" -eq 1000 ]
}

@test "--max-evict-bytes-per-round caps each round; the next goes on until the tier is under its high mark" {
	local id
	master --max-evict-bytes-per-round 5000
	id="$(register p "[$(tier dram 100000)]")"
	inventory "$id" "$(items 200 dram)"
	wait_until 10 used_is "$id" dram 90000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -eq 2 ]
	[ "$(mc_metric master 'mc_evicted_bytes_total{kind="evict",trigger="watermark"}')" -eq 10000 ]
}

# marks ID TIER: "HIGH LOW" the master uses for peer ID's TIER.
marks() {
	mc-cli --json peers | jq -r --argjson id "$1" --arg t "$2" \
		'.. | objects | select(.peer_id? == $id) | .tiers[] | select(.tier == $t) |
		"\(.high) \(.low)"'
}

@test "per-peer watermarks: a peer's own marks drive its tier's rounds; the master's are defaults" {
	local id other
	master
	id="$(register p "[$(tier dram 100000 0.5 0.2),$(tier ssd 1000000)]")"
	other="$(register q "[$(tier dram 100000)]")"
	[ "$(marks "$id" dram)" = "0.5 0.2" ]
	[ "$(marks "$id" ssd)" = "0.9 0.5" ]
	[ "$(marks "$other" dram)" = "0.9 0.5" ]
	# 60% of dram: over the peer's high mark (not the master's), down to its low one
	inventory "$id" "$(items 120 dram)"
	wait_until 10 used_is "$id" dram 20000
	# a heartbeat may change them; one that leaves them out keeps them
	run -0 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" "tiers:=[$(tier dram 100000 0.95 0.9)]"
	[ "$(marks "$id" dram)" = "0.95 0.9" ]
	run -0 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" "tiers:=[$(tier dram 100000)]"
	[ "$(marks "$id" dram)" = "0.95 0.9" ]
}

@test "per-peer watermarks: marks out of (0, 1] or a low not below the high are refused" {
	local id
	master
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/p.sock" \
		"tiers:=[$(tier dram 100000 0.5 0.5)]"
	assert_output --partial "tiers[0]: low watermark 0.5 is not below high 0.5"
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/p.sock" \
		"tiers:=[$(tier dram 100000 1.5 0.5)]"
	assert_output --partial "tiers[0]: watermarks must be in (0, 1], not high 1.5 low 0.5"
	# low alone, above the master's high
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/p.sock" \
		'tiers:=[{"tier":"dram","capacity":100000,"used":0,"low":0.95}]'
	assert_output --partial "low watermark 0.95 is not below high 0.9"
	id="$(register p "[$(tier dram 100000 0.8 0.6)]")"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" "tiers:=[$(tier dram 100000 0 0.6)]"
	assert_output --partial "watermarks must be in (0, 1]"
	[ "$(marks "$id" dram)" = "0.8 0.6" ]
}

@test "committed: put_end tells the replica's peer what its version committed as" {
	local id end
	master
	id="$(register p "[$(tier dram 100000)]")"
	run -0 mc-rpc "$MC_MASTER" put_start key=a size:=100 type=kv group=g1 hard_pin:=true \
		soft_pin=enable soft_pin_ttl_ms:=60000
	# the put_end waits for the peer's confirmation, which completes it
	mc-rpc "$MC_MASTER" put_end key=a version:=1 >/dev/null &
	end=$!
	wait_until 10 metric_is mc_put_end_waits_total 1
	run -0 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" --then write_ack peer_id:="$id" \
		tenant=default key=a version:=1 size:=100
	wait "$end"
	jq -e -s 'map(select(has("notify"))) | length == 1 and .[0].notify == "committed" and
		.[0].params == {tenant: "default", key: "a", version: 1, type: "kv", group: "g1",
		hard_pin: true, sp_remaining: 60000}' <<<"$output"
	# no group, no pin: the notice says so
	run -0 mc-rpc "$MC_MASTER" put_start key=b size:=100
	mc-rpc "$MC_MASTER" put_end key=b version:=2 >/dev/null &
	end=$!
	wait_until 10 metric_is mc_put_end_waits_total 2
	run -0 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" --then write_ack peer_id:="$id" \
		tenant=default key=b version:=2 size:=100
	wait "$end"
	jq -e -s 'map(select(has("notify")))[0].params | has("group") == false and
		.type == "general" and .hard_pin == false and .sp_remaining == 0' <<<"$output"
}

# item KEY VERSION EXTRA-JSON: one inventory item of OBJ bytes on dram with
# EXTRA's fields (type, group, hard_pin, sp_deadline) merged in.
item() {
	jq -cn --arg k "$1" --argjson v "$2" --argjson size "$OBJ" --argjson x "$3" \
		'{tenant: "default", key: $k, tier: "dram", size: $size, version: $v,
		checksum: 7} + $x'
}

# stat_field KEY FIELD
stat_field() {
	mc_stat_json "$1" | jq -r ".$2"
}

stat_field_is() {
	[ "$(stat_field "$1" "$2")" = "$3" ]
}

@test "inventory adoption keeps the copy's type, group, hard pin and soft-pin deadline" {
	local id now
	master
	id="$(register p "[$(tier dram 100000)]")"
	now="$(clock_now)"
	inventory "$id" "[$(item a 3 "{\"type\":\"kv\",\"group\":\"g1\",\"hard_pin\":true,\"sp_deadline\":$((now + 50000))}"),
		$(item b 4 "{\"group\":\"g1\",\"sp_deadline\":$((now - 1))}"),
		$(item c 5 '{"sp_deadline":0}'),
		$(item bad1 6 '{"type":"two words"}'),
		$(item bad2 7 '{"hard_pin":"yes"}'),
		$(item bad3 8 '{"group":""}'),
		$(item bad4 9 '{"sp_deadline":-5}')]"
	[ "$(stat_field a type)" = kv ]
	[ "$(stat_field a group)" = g1 ]
	[ "$(stat_field a hard_pin)" = true ]
	[ "$(stat_field a soft_pin)" = active ]
	# the deadline the copy had: no new lifetime
	[ "$(stat_field a soft_pin_deadline)" -eq $((now + 50000)) ]
	# a deadline past is no pin; the group holds both members
	[ "$(stat_field b soft_pin)" = disabled ]
	[ "$(stat_field b group)" = g1 ]
	[ "$(stat_field b type)" = general ]
	[ "$(stat_field c soft_pin)" = disabled ]
	[ "$(stat_field c hard_pin)" = false ]
	# invalid metadata skips the item, not the inventory
	for k in bad1 bad2 bad3 bad4; do
		run -1 mc-cli exist "$k"
	done
	grep -q "inventory: 4 items skipped" "$MC_DIR/master.log"
	# the pin runs out at its deadline, on the master's clock
	advance_clock 50001
	wait_until 5 stat_field_is a soft_pin disabled
}

@test "tiers: a group evicted all or none is dropped, every member, never demoted" {
	local id
	master
	id="$(register p "[$(tier dram 10000),$(tier ssd 1000000)]" 'task_kinds:=["drop","evict"]')"
	inventory "$id" "[$(item g0 1 '{"group":"g"}'),$(item g1 2 '{"group":"g"}'),
		$(item x0 3 '{}'),$(item x1 4 '{}'),$(item x2 5 '{}'),$(item x3 6 '{}'),
		$(item x4 7 '{}'),$(item x5 8 '{}'),$(item x6 9 '{}'),$(item x7 10 '{}'),
		$(item x8 11 '{}'),$(item x9 12 '{}'),$(item x10 13 '{}'),$(item x11 14 '{}'),
		$(item x12 15 '{}'),$(item x13 16 '{}'),$(item x14 17 '{}'),$(item x15 18 '{}'),
		$(item x16 19 '{}'),$(item x17 20 '{}')]"
	# 20 copies in 10000 bytes: the round frees 5000, the oldest first, the group with them
	wait_until 10 metric_is 'mc_evict_rounds_total{trigger="watermark"}' 1
	run -1 mc-cli exist g0
	run -1 mc-cli exist g1
	run -0 tasks "$id"
	[ "$(jq -s 'map(select(.method == "drop")) | map(.key) | sort' <<<"$output" | jq -c .)" = '["g0","g1"]' ]
	[ "$(jq -s 'map(select(.method == "evict" and .tier == "dram")) | length' <<<"$output")" -ge 1 ]
}

@test "put_start's tier: the copies land only there; a tier no live peer has is refused" {
	local id
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]")"
	run -0 mc-rpc "$MC_MASTER" put_start key=a size:=100 tier=ssd
	[ "$(jq -r '.replicas[0].tier' <<<"$output")" = ssd ]
	[ "$(used "$id" ssd)" -eq 100 ]
	[ "$(used "$id" dram)" -eq 0 ]
	run -0 mc-rpc "$MC_MASTER" put_start key=b size:=100
	[ "$(jq -r '.replicas[0].tier' <<<"$output")" = dram ]
	run -1 mc-rpc "$MC_MASTER" put_start key=c size:=100 tier=cxl
	assert_output --partial "invalid: no live peer has a cxl tier"
	run -1 mc-rpc "$MC_MASTER" put_start key=c size:=100 tier=tape
	assert_output --partial "unknown tier 'tape'"
	# a full asked-for tier is no space, though dram has room
	run -1 mc-rpc "$MC_MASTER" put_start key=c size:=999990 tier=ssd
	assert_output --partial "no_space"
	# one larger than the whole tier can never go there
	run -1 mc-rpc "$MC_MASTER" put_start key=c size:=2000000 tier=ssd
	assert_output --partial "too_large"
}

@test "hbm and cxl, which only a peer speaking the protocol can have: cxl between dram and ssd, hbm only when asked" {
	master
	register p "[$(tier dram 1000),$(tier cxl 100000),$(tier ssd 1000000),$(tier hbm 10000000)]" >/dev/null
	run -0 mc-rpc "$MC_MASTER" put_start key=small size:=500
	[ "$(jq -r '.replicas[0].tier' <<<"$output")" = dram ]
	# past dram, cxl comes before ssd
	run -0 mc-rpc "$MC_MASTER" put_start key=mid size:=2000
	[ "$(jq -r '.replicas[0].tier' <<<"$output")" = cxl ]
	# past cxl, ssd: hbm, with room to spare, is never picked by itself
	run -0 mc-rpc "$MC_MASTER" put_start key=big size:=200000
	[ "$(jq -r '.replicas[0].tier' <<<"$output")" = ssd ]
	run -0 mc-rpc "$MC_MASTER" put_start key=cold size:=500 tier=cxl
	[ "$(jq -r '.replicas[0].tier' <<<"$output")" = cxl ]
	# a put that names hbm lands there (mc-cli(1))
	run -0 mc-rpc "$MC_MASTER" put_start key=hot size:=500 tier=hbm
	[ "$(jq -r '.replicas[0].tier' <<<"$output")" = hbm ]
}

@test "peers and stat show usage and capacity per tier" {
	local id
	master
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]")"
	register q "[$(tier dram 100000)]" >/dev/null
	run -0 mc-rpc "$MC_MASTER" put_start key=a size:=1024 tier=ssd
	run -0 mc-cli peers
	assert_line --index 0 --regexp '^ID +ADDR +HOST +DOMAIN +ALIVE +DRAM +SSD$'
	assert_line --index 1 --regexp ' 0B/97.66KiB \(peer: 0B\) +1KiB/976.56KiB \(peer: 0B\)$'
	assert_line --index 2 --regexp ' 0B/97.66KiB \(peer: 0B\) +-$'
	run -0 mc-cli --json stat
	[ "$(jq -c '.tiers' <<<"$output")" = \
		'[{"tier":"dram","used_bytes":0,"capacity_bytes":200000},{"tier":"ssd","used_bytes":1024,"capacity_bytes":1000000}]' ]
	[ "$(mc_metric master "mc_peer_tier_used_bytes{peer=\"$id\",tier=\"ssd\"}")" -eq 1024 ]
	[ "$(mc_metric master "mc_peer_tier_capacity_bytes{peer=\"$id\",tier=\"ssd\"}")" -eq 1000000 ]
}

@test "mc-cli put --tier: the client asks the master for that tier" {
	mc_require_bins mc-peer
	master
	mc_start_peers 1
	mc_random_file "$BATS_TEST_TMPDIR/obj" 4096
	run -0 mc-cli put --tier dram a "$BATS_TEST_TMPDIR/obj"
	[ "$(tier_of a)" = dram ]
	run -64 mc-cli put --tier ssd b "$BATS_TEST_TMPDIR/obj"
	assert_output --partial "no live peer has a ssd tier"
	run -64 mc-cli put --tier tape b "$BATS_TEST_TMPDIR/obj"
	assert_output --partial "unknown tier 'tape'"
}

@test "a put that only demotions under way make room for waits for them, and lands as they do" {
	local id
	master --put-wait 30s
	id="$(register p "[$(tier dram 100000),$(tier ssd 1000000)]" 'task_kinds:=["drop","evict"]')"
	evicted "$id" >"$BATS_TEST_TMPDIR/victims"
	# dram is full of copies still there, half of them moving out
	[ "$(used "$id" dram)" -eq 100000 ]
	[ "$(moving "$id" dram)" -eq 50000 ]
	mc-rpc "$MC_MASTER" put_start key=new size:=20000 tier=dram >"$BATS_TEST_TMPDIR/put" 2>&1 &
	local put=$!
	wait_until 10 metric_is mc_put_waiting 1
	# no round for it: the room is coming
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 0 ]
	local v
	while read -r v; do
		as_peer "$id" copy_moved key="$v" version:="$(version_of "$v")" size:=$OBJ \
			from=dram to=ssd
	done < <(head -n 40 "$BATS_TEST_TMPDIR/victims")
	wait "$put"
	[ "$(jq -r '.replicas[0].tier' "$BATS_TEST_TMPDIR/put")" = dram ]
	[ "$(mc_metric master 'mc_put_waits_total{outcome="placed"}')" -eq 1 ]
}

@test "a peer's page and per-copy header count in what its copies take" {
	local id
	master
	id="$(register p '[{"tier":"dram","capacity":100000,"used":0,"page":4096,"per_copy":0},
		{"tier":"ssd","capacity":1000000,"used":0,"page":4096,"per_copy":8192}]')"
	run -0 mc-rpc "$MC_MASTER" put_start key=a size:=100
	[ "$(used "$id" dram)" -eq 4096 ]
	run -0 mc-rpc "$MC_MASTER" put_start key=b size:=5000 tier=ssd
	[ "$(used "$id" ssd)" -eq $((8192 + 8192)) ]
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" \
		'tiers:=[{"tier":"dram","capacity":100000,"used":0,"page":2000000000}]'
	assert_output --partial "page or per_copy over"
}
