#!/usr/bin/env bats
#
# The SSD tier (seed "one eviction path per peer", its medium and pool
# half): a peer with --ssd below DRAM, the master's rounds reclaiming
# DRAM copies through the peer's one pool_evict (demoted to SSD, or
# dropped when SSD is full), SSD draining through the same path, a hot
# set that stays in DRAM under a steady put stream, promotion on read,
# and SSD copies that survive a kill -9 with their metadata, a corrupt
# one caught. SSD files stay at or under 64 MiB.

load helpers

# The puts here cross the watermarks while the fake clock stands still,
# and what is checked is the eviction ahead of need that follows: their
# copies are old the moment they commit (--young 0), as before young
# copies were kept (tests/cli/young.bats checks --young itself).
export MC_YOUNG=0

OBJ=65536

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-fill
	mc_test_dir
	SSD="$BATS_TEST_TMPDIR/ssd"
	mkdir -p "$SSD"
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# peer NAME [ARGS...]: a peer with 4 MiB of DRAM over 32 MiB of SSD in $SSD.
peer() {
	local name="$1"
	shift
	MC_PEER_DRAM=4MiB mc_start_peer "$name" --ssd "$SSD" --ssd-size 32MiB "$@"
}

# fill PREFIX N: N objects of 64 KiB through mc-fill.
fill() {
	mc-fill --prefix "$1" --count "$2" --min-size "$OBJ" --max-size "$OBJ" put
}

# tiers KEY: the tiers of KEY's replicas, sorted, space-separated.
tiers() {
	mc_stat_json "$1" | jq -r '[.replicas[].tier] | sort | join(" ")'
}

tier_is() {
	[ "$(tiers "$1")" = "$2" ]
}

# moved_at_least PEER N: N demotions done. The clock moves on at each
# look, so that a tier whose round found only copies still being written
# (and rests) gets its next round.
moved_at_least() {
	advance_clock 200
	[ "$(mc_series "$1" mc_peer_moves_total 'kind="demote",outcome="done"')" -ge "$2" ]
}

# extents DIR: the file the SSD medium keeps its extents in.
extents() {
	find "$1" -type f ! -name 'session*' -size +1M | head -n 1
}

@test "ssd: invalid tier configuration is rejected at start" {
	mc_start_master
	run mc-peer --dram 4MiB --ssd "$SSD"
	[ "$status" -eq 64 ]
	[[ "$output" == *"--ssd needs --ssd-size"* ]]
	run mc-peer --dram 4MiB --ssd-size 8MiB
	[ "$status" -eq 64 ]
	[[ "$output" == *"--ssd-size needs --ssd"* ]]
	run mc-peer --dram 4MiB --ssd-watermarks 0.9:0.7
	[ "$status" -eq 64 ]
	[[ "$output" == *"--ssd-watermarks needs --ssd"* ]]
	run mc-peer --dram 4MiB --dram-watermarks 0.5:0.7
	[ "$status" -eq 64 ]
	[[ "$output" == *"--dram-watermarks"*"0 < LOW < HIGH <= 1"* ]]
	run mc-peer --dram 4MiB --dram-watermarks 0.9
	[ "$status" -eq 64 ]
	[[ "$output" == *"--dram-watermarks"*"HIGH:LOW"* ]]
	run mc-peer --dram 4MiB --ssd "$SSD" --ssd-size 8MiB --promote-on-read copy
	[ "$status" -eq 64 ]
	[[ "$output" == *"--promote-on-read 'copy': 'copy' is not supported"*"use 'move'"* ]]
	run mc-peer --dram 4MiB --promote-on-read move
	[ "$status" -eq 64 ]
	[[ "$output" == *"--promote-on-read needs --ssd"* ]]
}

@test "ssd: a peer that cannot reserve its SSD space refuses to start" {
	mc_start_master
	run timeout 10 mc-peer --master "$MC_MASTER" --dram 4MiB --ssd "$SSD/missing/dir/x" \
		--ssd-size 8MiB
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot open the ssd tier"* ]]
	# more than the filesystem holds: fallocate fails
	run timeout 10 mc-peer --master "$MC_MASTER" --dram 4MiB --ssd "$SSD" --ssd-size 1000TiB
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot open the ssd tier"* ]]
}

@test "ssd: the peer reports both tiers with its own watermarks" {
	mc_start_master
	peer p1 --dram-watermarks 0.8:0.5 --ssd-watermarks 0.95:0.6 --http 127.0.0.1:0
	run mc-cli --json peers
	[ "$status" -eq 0 ]
	jq -e '[.. | objects | select(has("tier")) | .tier] | index("ssd") != null' <<<"$output"
	[ "$(mc_series p1 mc_peer_tier_bytes_capacity 'tier="ssd"')" -eq $((32 << 20)) ]
}

@test "ssd: a put may ask for the ssd tier, and reads back from there" {
	mc_start_master
	peer p1
	mc_roundtrip direct 300000 --tier ssd
	tier_is direct ssd
	mc_roundtrip plain 1000
	tier_is plain dram
}

@test "ssd: rounds demote dram copies to ssd; every object reads back byte-exact" {
	mc_start_master
	peer p1 --http 127.0.0.1:0
	# 5 MiB into 4 MiB of DRAM: its watermark rounds must make room by demotion
	run fill d/ 80
	[ "$status" -eq 0 ]
	wait_until 10 moved_at_least p1 1
	run mc-fill --prefix d/ --count 80 --min-size "$OBJ" --max-size "$OBJ" check
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 bad"* ]]
	tier_is d/000000 ssd
	[ "$(mc_series p1 mc_peer_capacity_drops_total 'tier="dram",reason="no_space"')" -eq 0 ]
	[ "$(mc_series p1 mc_peer_evictions_total 'tier="ssd",reason="reclaim"')" -eq 0 ]
	# no DRAM copy was simply dropped: each went down
	[ "$(mc_series p1 mc_peer_evictions_total 'tier="dram",reason="reclaim"')" -eq 0 ]
}

@test "ssd: used counts each copy's header room and sector rounding, no more" {
	mc_start_master
	peer p1 --http 127.0.0.1:0
	mc_roundtrip four 4096 --tier ssd
	mc_roundtrip sixty-four 65536 --tier ssd
	mc_roundtrip odd 5000 --tier ssd
	# a sector of header each, the bytes in whole sectors: 4608 + 66048 + 5632
	[ "$(mc_tier_field p1 ssd used)" -eq $((4608 + 66048 + 5632)) ]
	[ "$(mc_series p1 mc_peer_tier_bytes_used 'tier="ssd"')" -eq $((4608 + 66048 + 5632)) ]
	mc-cli rm odd
	wait_until 10 test "$(mc_tier_field p1 ssd used)" -eq $((4608 + 66048))
}

@test "ssd: the ssd tier drains through the pool; writes evict nothing themselves" {
	mc_start_master
	peer p1 --http 127.0.0.1:0
	# 40 MiB through 4 MiB of DRAM and 32 MiB of SSD
	run fill s/ 640
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 failed"* ]]
	run mc-fill --prefix s/ --count 640 --min-size "$OBJ" --max-size "$OBJ" verify
	[ "$status" -eq 0 ]
	[[ "$output" == *" 0 wrong"* ]]
	[ "$(mc_series p1 mc_peer_evictions_total 'tier="ssd",reason="reclaim"')" -gt 0 ]
	[ "$(mc_series p1 mc_peer_tier_bytes_used 'tier="ssd"')" -le $((32 << 20)) ]
	# the newest objects are all there
	run mc-fill --prefix s/ --start 600 --count 40 --min-size "$OBJ" --max-size "$OBJ" check
	[ "$status" -eq 0 ]
}

# hotset_holds MODE: the hot set test with the peer in eviction mode MODE.
hotset_holds() {
	mc_start_master
	MC_PEER_DRAM=8MiB mc_start_peer p1 --ssd "$SSD" --ssd-size 48MiB --http 127.0.0.1:0 \
		--eviction-mode "$1"
	# 12 hot keys of 64 KiB: under 10% of DRAM; 1000 puts: past DRAM and SSD both
	run mc-fill --prefix h/ --count 1000 --hot 12 --every 64 --min-size "$OBJ" \
		--max-size "$OBJ" hotset
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"1000 puts, 0 failed"* ]]
	[[ "$output" == *" 0 missed, 0 wrong; 0 hot keys outside dram"* ]]
	[[ "$output" == *" 0 wrong"* ]]
	[ "$(mc_series p1 mc_peer_moves_total 'kind="demote",outcome="done"')" -gt 0 ]
}

@test "ssd: a hot set stays in dram under a steady put stream past the watermark (local)" {
	hotset_holds local
	# the peer evicted for itself
	[ "$(mc_series p1 mc_peer_local_evictions_total 'event="key"')" -gt 0 ]
}

@test "ssd: a hot set stays in dram under a steady put stream past the watermark (master_ranked)" {
	hotset_holds master_ranked
}

@test "ssd: a hot set stays in dram under a steady put stream past the watermark (master)" {
	hotset_holds master
}

@test "ssd: with --promote-on-read move, a read of an ssd copy moves it up" {
	mc_start_master
	peer p1 --promote-on-read move --http 127.0.0.1:0
	mc_random_file "$BATS_TEST_TMPDIR/up" 200000
	mc-cli put up "$BATS_TEST_TMPDIR/up" --tier ssd
	tier_is up ssd
	mc-cli get up >"$BATS_TEST_TMPDIR/up.out"
	cmp "$BATS_TEST_TMPDIR/up" "$BATS_TEST_TMPDIR/up.out"
	wait_until 10 tier_is up dram
	mc-cli get up >"$BATS_TEST_TMPDIR/up.out"
	cmp "$BATS_TEST_TMPDIR/up" "$BATS_TEST_TMPDIR/up.out"
	[ "$(mc_series p1 mc_peer_moves_total 'kind="promote",outcome="done"')" -eq 1 ]
	mc_roundtrip up2 1000
}

@test "ssd: copies survive a kill -9 with type, group, pins and soft-pin deadline" {
	mc_start_master --peer-ttl 60s
	peer p1
	mc_random_file "$BATS_TEST_TMPDIR/a" 150000
	mc_random_file "$BATS_TEST_TMPDIR/b" 150000
	mc-cli put keep "$BATS_TEST_TMPDIR/a" --tier ssd --type kv --group g1 --hard-pin
	mc-cli put soft "$BATS_TEST_TMPDIR/b" --tier ssd --soft-pin enable:10m
	before="$(mc_stat_json soft | jq -c '{sp_deadline, sp_mode}')"
	mc_kill9 p1
	peer p1
	mc-cli get keep >"$BATS_TEST_TMPDIR/a.out"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/a.out"
	mc-cli get soft >"$BATS_TEST_TMPDIR/b.out"
	cmp "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/b.out"
	run mc_stat_json keep
	[ "$(jq -r .type <<<"$output")" = kv ]
	[ "$(jq -r .group <<<"$output")" = g1 ]
	[ "$(jq -r .hard_pin <<<"$output")" = true ]
	[ "$(mc_stat_json soft | jq -c '{sp_deadline, sp_mode}')" = "$before" ]
}

@test "ssd: a restarted peer's copies come back to a master that forgot them" {
	mc_start_master
	peer p1
	mc_random_file "$BATS_TEST_TMPDIR/a" 150000
	mc-cli put adopt "$BATS_TEST_TMPDIR/a" --tier ssd --type kv --group g2 --hard-pin
	mc-cli put pinned "$BATS_TEST_TMPDIR/a" --tier ssd --soft-pin enable:10m
	deadline="$(mc_stat_json pinned | jq -r .sp_deadline)"
	mc_kill9 p1
	mc_stop master
	mc_start_master
	peer p1
	wait_until 10 mc-cli exist adopt
	mc-cli get adopt >"$BATS_TEST_TMPDIR/a.out"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/a.out"
	run mc_stat_json adopt
	[ "$(jq -r .type <<<"$output")" = kv ]
	[ "$(jq -r .group <<<"$output")" = g2 ]
	[ "$(jq -r .hard_pin <<<"$output")" = true ]
	[ "$(mc_stat_json pinned | jq -r .sp_deadline)" = "$deadline" ]
}

@test "ssd: a flipped byte in an extent is caught at restart and that copy dropped" {
	mc_start_master
	peer p1
	mc_random_file "$BATS_TEST_TMPDIR/good" 100000
	mc_random_file "$BATS_TEST_TMPDIR/bad" 100000
	mc-cli put good "$BATS_TEST_TMPDIR/good" --tier ssd
	mc-cli put bad "$BATS_TEST_TMPDIR/bad" --tier ssd
	mc_kill9 p1
	file="$(extents "$SSD")"
	[ -n "$file" ]
	off="$(mc_offset_of "$file" "$BATS_TEST_TMPDIR/bad")"
	[ "$off" -ge 0 ]
	mc_flip_byte "$file" $((off + 1000))
	peer p1
	wait_until 10 mc_key_gone bad
	mc-cli get good >"$BATS_TEST_TMPDIR/good.out"
	cmp "$BATS_TEST_TMPDIR/good" "$BATS_TEST_TMPDIR/good.out"
	grep -q "1 copies on ssd were torn or corrupt" "$MC_DIR/p1.log"
}

# tier_objects PEER TIER: copies the peer holds on TIER (peer_stats).
tier_objects() {
	mc_tier_field "$1" "$2" objects
}

tier_objects_is() {
	[ "$(tier_objects "$1" "$2")" -eq "$3" ]
}

outcome() {
	mc_series "$1" mc_peer_pool_evicts_total "outcome=\"$2\""
}

@test "ssd: the peer's evict frees the copy on the tier named, any tier unnamed, none on another" {
	mc_start_master
	peer p1 --fault-inject --http 127.0.0.1:0
	f="$BATS_TEST_TMPDIR/f"
	mc_random_file "$f" 20000
	mc-rpc --bulk "$f" "$(mc_addr p1)" write key=on-ssd version:=1 tier=ssd
	mc-rpc --bulk "$f" "$(mc_addr p1)" write key=on-dram version:=1
	mc-rpc --bulk "$f" "$(mc_addr p1)" write key=unscoped version:=1 tier=ssd
	# mismatched: charged to dram, but the copy is on ssd
	mc-rpc "$(mc_addr p1)" evict key=on-ssd tier=dram
	[ "$(outcome p1 none)" -eq 1 ]
	tier_objects_is p1 ssd 2
	# scoped: ssd is the end of the chain, so the copy is dropped
	mc-rpc "$(mc_addr p1)" evict key=on-ssd tier=ssd
	[ "$(outcome p1 freed)" -eq 1 ]
	tier_objects_is p1 ssd 1
	# unscoped: whichever tier holds it
	mc-rpc "$(mc_addr p1)" evict key=unscoped
	[ "$(outcome p1 freed)" -eq 2 ]
	tier_objects_is p1 ssd 0
	# dram with ssd below: demoted, not dropped
	mc-rpc "$(mc_addr p1)" evict key=on-dram tier=dram
	[ "$(outcome p1 demotion_queued)" -eq 1 ]
	wait_until 10 tier_objects_is p1 ssd 1
	tier_objects_is p1 dram 0
	# and it reads back from ssd byte for byte
	mc-rpc -o "$BATS_TEST_TMPDIR/out" "$(mc_addr p1)" read key=on-dram >/dev/null
	cmp "$f" "$BATS_TEST_TMPDIR/out"
	# an absent copy: nothing
	mc-rpc "$(mc_addr p1)" evict key=never-written tier=dram
	[ "$(outcome p1 none)" -eq 2 ]
}

@test "ssd: a demotion still queued is in flight when asked again" {
	mc_start_master
	export MC_FAULT="move.demote:pause" MC_FAULT_DIR="$BATS_TEST_TMPDIR"
	peer p1 --fault-inject --http 127.0.0.1:0
	unset MC_FAULT MC_FAULT_DIR
	f="$BATS_TEST_TMPDIR/f"
	mc_random_file "$f" 20000
	mc-rpc --bulk "$f" "$(mc_addr p1)" write key=k version:=1
	mc-rpc "$(mc_addr p1)" evict key=k tier=dram
	wait_until 10 test -e "$BATS_TEST_TMPDIR/move.demote.paused"
	mc-rpc "$(mc_addr p1)" evict key=k tier=dram
	[ "$(outcome p1 demotion_queued)" -eq 1 ]
	[ "$(outcome p1 in_flight)" -eq 1 ]
	# still readable in dram while it moves
	tier_objects_is p1 dram 1
	mc-rpc "$(mc_addr p1)" read key=k >/dev/null
	touch "$BATS_TEST_TMPDIR/move.demote"
	wait_until 10 tier_objects_is p1 ssd 1
	tier_objects_is p1 dram 0
}
