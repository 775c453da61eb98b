#!/usr/bin/env bats
#
# Read leases: a get leases the object (and its group) for --lease-ttl;
# rm refuses a leased object unless --force. Time moves by the fake clock.

load helpers

LEASE_TTL_MS=5000

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli
	mc_file_dir
	# Peers must outlive every clock move here: a long --peer-ttl.
	mc_start_master --lease-ttl "${LEASE_TTL_MS}ms" --peer-ttl 1000h --put-timeout 1000h
	mc_start_peers 2
}

teardown_file() {
	mc_stop_everything
}

@test "lease: rm right after put succeeds (a put grants no lease)" {
	echo v | mc-cli put nolease
	mc-cli rm nolease
}

@test "lease: after a get, rm without --force exits 1 saying leased and keeps the object" {
	echo v | mc-cli put leased1
	mc-cli get leased1 >/dev/null
	run -1 mc-cli rm leased1
	assert_output --partial leased
	assert_output --partial leased1
	[ "$(mc-cli get leased1)" = v ]
}

@test "lease: rm --force removes a leased object" {
	echo v | mc-cli put leased2
	mc-cli get leased2 >/dev/null
	mc-cli rm leased2 --force
	run -1 mc-cli exist leased2
}

@test "lease: stat reports the lease deadline granted by a get" {
	echo v | mc-cli put leased-stat
	local now
	now="$(clock_now)"
	mc-cli get leased-stat >/dev/null
	mc_stat_json leased-stat | jq_true --argjson d $((now + LEASE_TTL_MS)) '.lease_deadline == $d'
}

@test "lease: after --lease-ttl passes, rm without --force succeeds" {
	echo v | mc-cli put leased3
	mc-cli get leased3 >/dev/null
	run -1 mc-cli rm leased3
	advance_clock $((LEASE_TTL_MS + 1))
	mc-cli rm leased3
	run -1 mc-cli exist leased3
}

@test "lease: a lease still holds one millisecond before it ends" {
	echo v | mc-cli put leased4
	mc-cli get leased4 >/dev/null
	advance_clock $((LEASE_TTL_MS - 1))
	run -1 mc-cli rm leased4
	assert_output --partial leased
}

@test "lease: a second get renews the lease from its own time" {
	echo v | mc-cli put renew
	mc-cli get renew >/dev/null
	advance_clock $((LEASE_TTL_MS * 3 / 5))
	mc-cli get renew >/dev/null
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

@test "lease: get of one group member leases every member (rm of another member refused)" {
	echo a | mc-cli put grp/a --group G1
	echo b | mc-cli put grp/b --group G1
	echo c | mc-cli put grp/c --group G1
	echo o | mc-cli put grp/other --group G2
	mc-cli get grp/a >/dev/null
	run -1 mc-cli rm grp/b
	assert_output --partial leased
	run -1 mc-cli rm grp/c
	assert_output --partial leased
	# another group is not leased
	mc-cli rm grp/other
}

@test "lease: a group member's lease also ends after --lease-ttl" {
	echo a | mc-cli put grp2/a --group G3
	echo b | mc-cli put grp2/b --group G3
	mc-cli get grp2/a >/dev/null
	run -1 mc-cli rm grp2/b
	advance_clock $((LEASE_TTL_MS + 1))
	mc-cli rm grp2/b
	mc-cli rm grp2/a
}

@test "lease: rm --prefix skips leased keys unless --force" {
	echo a | mc-cli put pfx/leased
	echo b | mc-cli put pfx/free
	mc-cli get pfx/leased >/dev/null
	run mc-cli rm --prefix pfx/
	run -1 mc-cli exist pfx/free
	mc-cli exist pfx/leased
	mc-cli rm --prefix pfx/ --force
	run -1 mc-cli exist pfx/leased
}
