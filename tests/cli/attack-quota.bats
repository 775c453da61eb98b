#!/usr/bin/env bats
#
# Attacks on what objects cost the master, replayed as the attacker made
# them: a flood of objects of no bytes under 4 KiB keys, which the byte
# quota once counted as nothing, and the same flood under --max-objects,
# whose store-wide round once evicted every other tenant's objects and
# then let nobody put. Each object now costs its key and a per-object
# overhead against its tenant's quota, --max-objects-per-tenant caps the
# count, and a store round takes from the tenant furthest over its fair
# share. Every test here failed before its defence was built.

load helpers

# the flood's keys: 4,000 bytes of prefix and mc-fill's 6 digits
KEY_LEN=4006
# STORE_OBJECT_OVERHEAD of cmd/mc-master/store.h, as mc-master(8) documents it
OVERHEAD=256

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-fill mc-snapshot mc-rpc
	mc_test_dir
	PREFIX="$(head -c 4000 /dev/zero | tr '\0' k)"
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# flood TENANT N [MC-FILL OPTIONS...]: N objects of no bytes under 4 KiB
# keys; some may be refused, which is the point.
flood() {
	local tenant="$1" n="$2"
	shift 2
	mc-fill -t "$tenant" --prefix "$PREFIX" -n "$n" --min-size 0 --max-size 0 "$@" put \
		>/dev/null 2>&1 || true
}

tenant_metric() {
	local v
	v="$(mc_metric master "$1{tenant=\"$2\"}")"
	echo "${v:-0}"
}

@test "attack: empty objects under 4 KiB keys are charged their keys and overhead against the byte quota" {
	printf 'A 100KiB\n' >"$BATS_TEST_TMPDIR/quotas"
	mc_start_master --http 127.0.0.1:0 --quota-file "$BATS_TEST_TMPDIR/quotas"
	mc_start_peers 1
	flood A 300 --batch 8
	local objects meta
	objects="$(tenant_metric mc_tenant_objects A)"
	meta="$(tenant_metric mc_tenant_meta_bytes A)"
	# each one costs its key and the overhead: 24 of them fill 100 KiB
	[ "$objects" -ge 1 ]
	[ "$objects" -le $((102400 / (KEY_LEN + OVERHEAD))) ]
	[ "$meta" -eq $((objects * (KEY_LEN + OVERHEAD))) ]
	[ "$(tenant_metric mc_tenant_bytes A)" -eq 0 ]
	# one more makes room among its own, and the charge stays within the quota
	mc-cli -t A put "${PREFIX}x" </dev/null
	[ "$(tenant_metric mc_tenant_meta_bytes A)" -le 102400 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="quota"}')" -ge 1 ]
	# the other tenants are not charged for it
	echo b | mc-cli -t B put b
	[ "$(tenant_metric mc_tenant_meta_bytes B)" -eq $((1 + OVERHEAD)) ]
}

@test "attack: the charge is taken at put_start, given back as objects go, and recomputed by a restored master" {
	mc_start_master --http 127.0.0.1:0 --snapshot-dir "$BATS_TEST_TMPDIR/snap"
	mc_start_peers 1
	flood A 10
	[ "$(tenant_metric mc_tenant_meta_bytes A)" -eq $((10 * (KEY_LEN + OVERHEAD))) ]
	# a write in progress is charged, and an abandoned one gives it back
	run -0 mc-rpc --tenant A "$MC_MASTER" put_start "key=${PREFIX}pending" size:=0 checksum:=1
	local v
	v="$(jq -r .version <<<"$output")"
	[ "$(tenant_metric mc_tenant_meta_bytes A)" -eq $((10 * (KEY_LEN + OVERHEAD) + 4007 + OVERHEAD)) ]
	mc-rpc --tenant A "$MC_MASTER" put_revoke "key=${PREFIX}pending" version:="$v"
	[ "$(tenant_metric mc_tenant_meta_bytes A)" -eq $((10 * (KEY_LEN + OVERHEAD))) ]
	mc-cli -t A rm "${PREFIX}000003"
	[ "$(tenant_metric mc_tenant_meta_bytes A)" -eq $((9 * (KEY_LEN + OVERHEAD))) ]
	mc-snapshot save >/dev/null
	mc_stop master
	mc_start_master --http 127.0.0.1:0 --snapshot-dir "$BATS_TEST_TMPDIR/snap" --restore latest
	[ "$(tenant_metric mc_tenant_objects A)" -eq 9 ]
	[ "$(tenant_metric mc_tenant_meta_bytes A)" -eq $((9 * (KEY_LEN + OVERHEAD))) ]
}

@test "attack: --max-objects-per-tenant caps one tenant's flood, and the others put as ever" {
	mc_start_master --http 127.0.0.1:0 --max-objects-per-tenant 50
	mc_start_peers 1
	echo b | mc-cli -t B put before
	flood A 200 --batch 8
	[ "$(tenant_metric mc_tenant_objects A)" -le 50 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="quota"}')" -ge 1 ]
	# its newest got in: the round took its own oldest
	mc-cli -t A exist "${PREFIX}000199"
	run -0 mc-cli -t B get before
	assert_output b
	echo b | mc-cli -t B put after
	# at the cap with nothing it may evict, a put says which cap
	mc_stop_all
	mc_use_dir "$BATS_TEST_TMPDIR/pinned"
	mc_start_master --http 127.0.0.1:0 --max-objects-per-tenant 2 --put-wait 0
	mc_start_peers 1
	mc-cli -t A put --hard-pin p1 </dev/null
	mc-cli -t A put --hard-pin p2 </dev/null
	run -1 mc-cli -t A put p3 </dev/null
	assert_output --partial "tenant 'A' holds 2 objects, its --max-objects-per-tenant 2"
}

@test "attack: under --max-objects one tenant's flood evicts its own objects, not another's under its share" {
	mc_start_master --http 127.0.0.1:0 --max-objects 300
	mc_start_peers 1
	local k
	for k in $(seq 1 20); do echo "bob $k" | mc-cli -t B put "b$k"; done
	flood A 1000
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="budget"}')" -ge 1 ]
	[ "$(mc_metric master mc_objects)" -le 300 ]
	# every one of the other tenant's objects is still there
	[ "$(mc-cli -t B ls | wc -l)" -eq 20 ]
	for k in $(seq 1 20); do
		run -0 mc-cli -t B get "b$k"
		assert_output "bob $k"
	done
	# and its puts, and the flooder's, still work
	for k in $(seq 1 20); do echo "again $k" | mc-cli -t B put "c$k"; done
	[ "$(mc-cli -t B ls | wc -l)" -eq 40 ]
	mc-cli -t A put "${PREFIX}last" </dev/null
}
