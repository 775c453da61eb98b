#!/usr/bin/env bats
#
# Read leases belong to readers: get_replica_list grants its reader a
# lease with an id on the object (or its whole group); rm refuses a
# leased object unless --force, and eviction keeps it. The reader's
# release ends its own lease; --lease-ttl covers a reader that never
# releases. Time moves by the fake clock. A reader that keeps its lease
# is a bare get_replica_list through mc-rpc; mc-cli get releases its own.

load helpers

LEASE_TTL_MS=5000

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_file_dir
	# Peers must outlive every clock move here: a long --peer-ttl.
	mc_start_master --lease-ttl "${LEASE_TTL_MS}ms" --peer-ttl 1000h --put-timeout 1000h
	mc_start_peers 2
}

teardown_file() {
	mc_stop_everything
}

# hold KEY [TENANT]: a reader that takes a lease on KEY and never
# releases it; prints its lease id.
hold() {
	local out
	out="$(mc-rpc --tenant "${2:-default}" "$MC_MASTER" get_replica_list key="$1")" ||
		return 1
	jq -r '.lease_id' <<<"$out"
}

# release ID [TENANT]: the reader of lease ID releases it, by the
# notification clients send (the master has handled it when this returns).
release() {
	mc-rpc --tenant "${2:-default}" --notify "$MC_MASTER" release lease_id:="$1"
}

lease_deadline() {
	mc_stat_json "$1" | jq -r '.lease_deadline'
}

@test "lease: rm right after put succeeds (a put grants no lease)" {
	echo v | mc-cli put nolease
	mc-cli rm nolease
}

@test "lease: get_replica_list answers a lease id of the reader's own" {
	echo v | mc-cli put ids
	local a b
	a="$(hold ids)"
	b="$(hold ids)"
	[ "$a" -gt 0 ]
	[ "$b" -gt 0 ]
	[ "$a" != "$b" ]
}

@test "lease: while a reader holds a lease, rm without --force exits 1 saying leased and keeps the object" {
	echo v | mc-cli put leased1
	hold leased1 >/dev/null
	run -1 mc-cli rm leased1
	assert_output --partial leased
	assert_output --partial leased1
	[ "$(mc-cli get leased1)" = v ]
}

@test "lease: rm --force removes a leased object" {
	echo v | mc-cli put leased2
	hold leased2 >/dev/null
	mc-cli rm leased2 --force
	run -1 mc-cli exist leased2
}

@test "lease: stat reports the deadline of the lease a reader holds" {
	echo v | mc-cli put leased-stat
	local now
	now="$(clock_now)"
	hold leased-stat >/dev/null
	[ "$(lease_deadline leased-stat)" -eq $((now + LEASE_TTL_MS)) ]
}

@test "lease: mc-cli get releases its lease once it has the bytes" {
	echo v | mc-cli put released
	[ "$(mc-cli get released)" = v ]
	# the clock stands still: only the release can have ended the lease
	wait_until 5 mc-cli rm released
	run -1 mc-cli exist released
}

@test "lease: two readers hold one object; one release keeps it protected, the second frees it before the TTL" {
	# a tenant of its own, so that a round over it has no other victim
	echo v | mc-cli -t two put shared
	local a b now
	now="$(clock_now)"
	a="$(hold shared two)"
	advance_clock 1000
	b="$(hold shared two)"
	# the later reader's lease ends last
	[ "$(mc-cli -t two --json stat shared | jq -r '.. | objects | select(has("lease_deadline")) | .lease_deadline')" -eq $((now + 1000 + LEASE_TTL_MS)) ]
	run -0 mc-cli -t two --json evict --target 1 --tenant two
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_objects] | add // 0' <<<"$output")" -eq 0 ]
	release "$b" two
	# the first reader still holds it: its own deadline protects it now
	[ "$(mc-cli -t two --json stat shared | jq -r '.. | objects | select(has("lease_deadline")) | .lease_deadline')" -eq $((now + LEASE_TTL_MS)) ]
	run -1 mc-cli -t two rm shared
	assert_output --partial leased
	run -0 mc-cli -t two --json evict --target 1 --tenant two
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_objects] | add // 0' <<<"$output")" -eq 0 ]
	release "$a" two
	# evictable long before either TTL: a round takes it
	run -0 mc-cli -t two --json evict --target 1 --tenant two
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_objects] | add' <<<"$output")" -eq 1 ]
	run -1 mc-cli -t two exist shared
}

@test "lease: releasing twice, or another reader's unknown id, ends nothing more" {
	echo v | mc-cli put twice
	local a b
	a="$(hold twice)"
	b="$(hold twice)"
	release "$a"
	release "$a"
	release 999999999
	run -1 mc-cli rm twice
	assert_output --partial leased
	release "$b"
	mc-cli rm twice
}

@test "lease: a reader of another tenant cannot release a lease" {
	echo v | mc-cli put other-tenant
	local a
	a="$(hold other-tenant)"
	release "$a" intruder
	run -1 mc-cli rm other-tenant
	assert_output --partial leased
	release "$a"
	mc-cli rm other-tenant
}

@test "lease: release as a request answers how many leases it ended" {
	echo v | mc-cli put counted
	local a
	a="$(hold counted)"
	run -0 mc-rpc "$MC_MASTER" release lease_id:="$a"
	[ "$(jq -r '.released' <<<"$output")" -eq 1 ]
	run -0 mc-rpc "$MC_MASTER" release lease_id:="$a"
	[ "$(jq -r '.released' <<<"$output")" -eq 0 ]
	run -1 mc-rpc "$MC_MASTER" release
	assert_output --partial "lease_ids"
}

@test "lease: a reader that never releases is covered by the TTL" {
	echo v | mc-cli put leased3
	hold leased3 >/dev/null
	run -1 mc-cli rm leased3
	advance_clock $((LEASE_TTL_MS + 1))
	mc-cli rm leased3
	run -1 mc-cli exist leased3
}

@test "lease: a lease still holds one millisecond before it ends" {
	echo v | mc-cli put leased4
	hold leased4 >/dev/null
	advance_clock $((LEASE_TTL_MS - 1))
	run -1 mc-cli rm leased4
	assert_output --partial leased
}

@test "lease: a second reader's lease runs from its own time" {
	echo v | mc-cli put renew
	hold renew >/dev/null
	advance_clock $((LEASE_TTL_MS * 3 / 5))
	hold renew >/dev/null
	# past the first lease's end, within the second's
	advance_clock $((LEASE_TTL_MS * 3 / 5))
	run -1 mc-cli rm renew
	assert_output --partial leased
}

@test "lease: exist, stat and ls grant no lease" {
	echo v | mc-cli put peek
	mc-cli exist peek
	mc-cli stat peek >/dev/null
	mc-cli ls peek >/dev/null
	mc-cli rm peek
}

@test "lease: a read of one group member leases every member until its reader releases" {
	echo a | mc-cli put grp/a --group G1
	echo b | mc-cli put grp/b --group G1
	echo c | mc-cli put grp/c --group G1
	echo o | mc-cli put grp/other --group G2
	local a
	a="$(hold grp/a)"
	run -1 mc-cli rm grp/b
	assert_output --partial leased
	run -1 mc-cli rm grp/c
	assert_output --partial leased
	# another group is not leased
	mc-cli rm grp/other
	# the reader's release ends the lease on the whole group
	release "$a"
	mc-cli rm grp/b
	mc-cli rm grp/c
	mc-cli rm grp/a
}

@test "lease: a group member's lease also ends after --lease-ttl" {
	echo a | mc-cli put grp2/a --group G3
	echo b | mc-cli put grp2/b --group G3
	hold grp2/a >/dev/null
	run -1 mc-cli rm grp2/b
	advance_clock $((LEASE_TTL_MS + 1))
	mc-cli rm grp2/b
	mc-cli rm grp2/a
}

@test "lease: rm --prefix skips leased keys unless --force" {
	echo a | mc-cli put pfx/leased
	echo b | mc-cli put pfx/free
	hold pfx/leased >/dev/null
	run -0 mc-cli rm --prefix pfx/
	assert_output "removed 1"
	run -1 mc-cli exist pfx/free
	mc-cli exist pfx/leased
	mc-cli rm --prefix pfx/ --force
	run -1 mc-cli exist pfx/leased
}

@test "lease: metrics count leases granted, released and held" {
	local dir="$BATS_TEST_TMPDIR/m"
	mc_use_dir "$dir"
	mc_start_master --http 127.0.0.1:0 --lease-ttl 1h --peer-ttl 1000h
	mc_start_peers 1
	echo v | mc-cli put counted
	local a
	a="$(hold counted)"
	hold counted >/dev/null
	release "$a"
	[ "$(mc_metric master mc_leases_granted_total)" -eq 2 ]
	[ "$(mc_metric master mc_leases_released_total)" -eq 1 ]
	[ "$(mc_metric master mc_leases)" -eq 1 ]
	mc_stop_all
}
