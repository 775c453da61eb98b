#!/usr/bin/env bats
#
# Commit receipts (issue 27): with an auth file, the master keeps a
# receipt key beside it and gives each peer a receipt when a write
# commits; a copy it would adopt from an inventory (after a restart of
# either) is adopted only when its receipt verifies. Replayed here: an
# SSD extent forged with the file's own key and naming another tenant,
# and an inventory injected with the peer secret that plants a key in
# another tenant at version 2^64 - 3; both are dropped and counted in
# mc_inventory_unverified_total, and the counter of versions is not
# spent. Genuine copies come back after restarts, on their receipts.
# Every test here failed before receipts were built.

load helpers

# 2^64 - 3: VERSION_MAX, the last version a put may take
VERSION_END=18446744073709551613

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-ssdforge mc-snapshot
	mc_test_dir
	SSD="$MC_DIR/ssd"
	mkdir -p "$SSD"
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# tokens: an auth file ($AUTH) for tenants alice and bob, admin ops and
# the peers' secret, each token in $MC_DIR/NAME.tok; the tools speak
# as ops unless told otherwise (MC_TOKEN).
tokens() {
	AUTH="$MC_DIR/auth"
	mc-cli auth add alice --auth-file "$AUTH" >"$MC_DIR/alice.tok"
	mc-cli auth add bob --auth-file "$AUTH" >"$MC_DIR/bob.tok"
	mc-cli auth add ops --admin --auth-file "$AUTH" >"$MC_DIR/ops.tok"
	mc-cli auth add --peer --auth-file "$AUTH" >"$MC_DIR/peer.tok"
	MC_TOKEN="$(tok ops)"
	export MC_TOKEN
}

tok() {
	cat "$MC_DIR/$1.tok"
}

# as NAME CMD...: CMD with NAME's token.
as() {
	local who="$1"
	shift
	MC_TOKEN="$(tok "$who")" "$@"
}

master() {
	mc_start_master --auth-file "$AUTH" --http 127.0.0.1:0 "$@"
}

# peer NAME [ARGS...]: a peer with the secret, 8 MiB of DRAM over 64 MiB of SSD in $SSD.
peer() {
	local name="$1"
	shift
	MC_PEER_DRAM=8MiB mc_start_peer "$name" --peer-secret-file "$MC_DIR/peer.tok" \
		--ssd "$SSD" --ssd-size 64MiB --http 127.0.0.1:0 "$@"
}

unverified() {
	mc_series master mc_inventory_unverified_total "reason=\"$1\""
}

# unverified_is REASON N
unverified_is() {
	[ "$(unverified "$1")" -eq "$2" ]
}

ssd_objects_are() {
	[ "$(mc_tier_field "$1" ssd objects)" -eq "$2" ]
}

# notices_are PEER N: PEER took N commit notices (and kept their receipts).
notices_are() {
	[ "$(mc_metric "$1" mc_peer_commit_notices_total)" = "$2" ]
}

# inventoried NAME N: the master logged N inventories of peer NAME's as done.
inventoried() {
	[ "$(grep -c "($(mc_addr "$1")) inventory: .*(done)" "$MC_DIR/master.log")" -ge "$2" ]
}

# bob_lists KEY: bob's ls names KEY.
bob_lists() {
	as bob mc-cli ls | grep -qx "$1"
}

@test "receipts: a forged ssd extent signed with the file's key, naming another tenant, is dropped and counted after the peer restarts" {
	tokens
	master
	peer p1
	mc_random_file "$MC_DIR/mine" 20000
	as alice mc-cli put mine "$MC_DIR/mine" --tier ssd
	wait_until 10 notices_are p1 1
	mc_stop p1

	# what someone who can read and write the peer's file can make: an
	# extent signed with its key, for bob's key "planted", in free space
	mc_random_file "$MC_DIR/x" 5000
	at=$((28 << 20))
	mc-ssdforge --at "$at" --key-from "$SSD/extents" \
		--file-end "$(stat -c %s "$SSD/extents")" --tenant bob --key planted --version 1 \
		"$MC_DIR/x" >"$MC_DIR/e"
	dd if="$MC_DIR/e" of="$SSD/extents" bs=512 seek=$((at / 512)) conv=notrunc status=none

	peer p1
	# the peer believes its file: it reports both copies
	grep -q "2 copies kept on ssd from before" "$MC_DIR/p1.log"
	wait_until 10 unverified_is receipt 1
	run -0 as bob mc-cli ls
	refute_output --partial planted
	mc_key_gone planted -t bob
	# (the clean stop unregistered the peer: its genuine copy is adopted again)
	grep -q "inventory: 0 kept, 1 adopted, 1 dropped (1 unverified)" "$MC_DIR/master.log"
	# and it frees the forged one when the master says so
	wait_until 10 ssd_objects_are p1 1
	as alice mc-cli get mine >"$MC_DIR/mine.out"
	cmp "$MC_DIR/mine" "$MC_DIR/mine.out"
}

@test "receipts: an inventory injected with the peer secret, planting another tenant's key at version 2^64-3, is dropped and counted; puts go on" {
	local id items
	tokens
	master
	peer p1
	as alice mc-cli put a <<<"before"
	id=$(($(mc_peers_json | jq -s 'map(.peer_id) | max') + 1))
	items='[{"tenant":"bob","key":"planted","tier":"dram","size":5,"version":'"$VERSION_END"',"checksum":7}]'
	# a compromised peer host: the secret, a registration of its own, then its inventory
	run -0 mc-rpc --token "$(tok peer)" "$MC_MASTER" peer_register \
		addr="unix:$MC_DIR/rogue.sock" 'tiers:=[{"tier":"dram","capacity":1048576,"used":0}]' \
		--then peer_inventory peer_id:="$id" "items:=$items" done:=true
	assert_output --partial '"adopted":0'
	assert_output --partial '"dropped":1'
	[ "$(unverified receipt)" -eq 1 ]
	run -0 as bob mc-cli ls
	refute_output --partial planted
	mc_key_gone planted -t bob
	# the counter was not spent: everyone still writes
	as alice mc-cli put b <<<"after"
	as bob mc-cli put mine <<<"bob's"
	run -0 as alice mc-cli get b
	assert_output after
	[ "$(as alice mc-cli --json stat b | jq -r '.. | objects | .version? // empty' | head -n 1)" -lt 100 ]
}

@test "receipts: without receipts, an injected item at version 2^64-3 is refused, so one inventory cannot end the version counter" {
	local id items
	mc_start_master --http 127.0.0.1:0
	MC_PEER_DRAM=8MiB mc_start_peer p1
	grep -q "copies adopted from inventories are trusted as reported" "$MC_DIR/master.log"
	mc-cli put a <<<"before"
	id=$(($(mc_peers_json | jq -s 'map(.peer_id) | max') + 1))
	items='[{"tenant":"bob","key":"planted","tier":"dram","size":5,"version":'"$VERSION_END"',"checksum":7}]'
	run -0 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/rogue.sock" \
		'tiers:=[{"tier":"dram","capacity":1048576,"used":0}]' \
		--then peer_inventory peer_id:="$id" "items:=$items" done:=true
	assert_output --partial '"dropped":1'
	[ "$(unverified version)" -eq 1 ]
	[ "$(unverified receipt)" -eq 0 ]
	mc_key_gone planted -t bob
	mc-cli put b <<<"after"
	mc-cli -t bob put mine <<<"bob's"
}

@test "receipts: genuine copies are adopted on their receipts after a master restart without a snapshot (dram) and a restart of both (ssd)" {
	tokens
	master
	peer p1
	# the key is made beside the auth file, for the master's eyes only
	run -0 stat -c %a "$AUTH.receipt-key"
	assert_output 600
	[ "$(stat -c %s "$AUTH.receipt-key")" -eq 32 ]
	mc_random_file "$MC_DIR/d" 30000
	mc_random_file "$MC_DIR/s" 40000
	as alice mc-cli put d "$MC_DIR/d"
	as alice mc-cli put s "$MC_DIR/s" --tier ssd
	wait_until 10 notices_are p1 2

	# a master that lost everything learns the copies back from the peer
	mc_stop master
	master
	wait_until 20 inventoried p1 1
	grep -q "inventory: 0 kept, 2 adopted, 0 dropped (0 unverified)" "$MC_DIR/master.log"
	[ "$(mc_metric master 'mc_inventory_unverified_total{reason="receipt"}')" = 0 ]
	as alice mc-cli get d >"$MC_DIR/d.out"
	cmp "$MC_DIR/d" "$MC_DIR/d.out"

	# both gone: the ssd copy's receipt came back from its extent header
	mc_stop p1
	mc_stop master
	master
	peer p1
	wait_until 20 inventoried p1 1
	grep -q "inventory: 0 kept, 1 adopted, 0 dropped (0 unverified)" "$MC_DIR/master.log"
	as alice mc-cli get s >"$MC_DIR/s.out"
	cmp "$MC_DIR/s" "$MC_DIR/s.out"
	mc_key_gone d -t alice
	[ "$(unverified receipt)" -eq 0 ]
}

@test "receipts: a master with another receipt key adopts none of the copies, and the peer frees them" {
	tokens
	master
	peer p1
	as alice mc-cli put d <<<"dram copy"
	as alice mc-cli put s <<<"ssd copy" --tier ssd
	wait_until 10 notices_are p1 2
	mc_stop master
	# a standby that was not given the key file
	master --receipt-key "$MC_DIR/other.key"
	wait_until 20 inventoried p1 1
	wait_until 10 unverified_is receipt 2
	mc_key_gone d -t alice
	mc_key_gone s -t alice
	wait_until 10 ssd_objects_are p1 0
	# the one that was given it adopts what is left: nothing
	mc_stop master
	master --receipt-key "$AUTH.receipt-key"
	wait_until 20 inventoried p1 1
	mc_key_gone s -t alice
}

@test "receipts: a copy committed without a receipt gets one when an inventory confirms it, and comes back after a restart without a snapshot" {
	local snaps="$MC_DIR/snaps" key="$MC_DIR/receipt.key"
	mkdir -p "$snaps"
	# a master of before receipts (none configured), and its snapshot
	mc_start_master --snapshot-dir "$snaps"
	MC_PEER_DRAM=8MiB mc_start_peer p1 --http 127.0.0.1:0
	mc_random_file "$MC_DIR/x" 30000
	mc-cli put x "$MC_DIR/x"
	wait_until 10 notices_are p1 1
	mc-snapshot save >/dev/null
	mc_stop master

	# restored with receipts on: the peer's copy is kept, and sent its receipt
	mc_start_master --snapshot-dir "$snaps" --restore latest --receipt-key "$key" \
		--http 127.0.0.1:0
	wait_until 20 inventoried p1 1
	wait_until 10 eval '[ "$(mc_metric master mc_receipts_resent_total)" = 1 ]'
	# the peer took it before the master goes
	wait_until 10 notices_are p1 2
	mc_stop master

	# a master that lost everything adopts it on that receipt
	mc_start_master --receipt-key "$key" --http 127.0.0.1:0
	wait_until 20 inventoried p1 1
	grep -q "inventory: 0 kept, 1 adopted, 0 dropped (0 unverified)" "$MC_DIR/master.log"
	mc-cli get x >"$MC_DIR/x.out"
	cmp "$MC_DIR/x" "$MC_DIR/x.out"
	# a copy whose receipt verifies is not sent another
	[ "$(mc_metric master mc_receipts_resent_total)" = 0 ]
}
