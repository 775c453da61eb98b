#!/usr/bin/env bats
#
# The SSD tier across a crash: a peer killed with SIGKILL in the middle
# of heavy demotion, started again on the same file, serves exactly the
# copies that were sealed before the kill, byte-exact, and the master
# lists no other; a copy dropped while a reader holds it stays dropped;
# a clean stop keeps the copies too. Then what a restarted peer finds in
# space no copy claims: a header forged in a client's bytes, garbage,
# headers signed with absurd fields, an older version's extent, a file
# without its superblock, and one of an older format. SSD files stay at
# or under 64 MiB (plus the superblock's page), under $BATS_TEST_TMPDIR.

load helpers

OBJ=16384

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-fill mc-rpc
	mc_test_dir
	SSD="$BATS_TEST_TMPDIR/ssd"
	mkdir -p "$SSD"
}

teardown() {
	# a reader a test left stalled on its fifo
	if [ -f "$BATS_TEST_TMPDIR/reader.pid" ]; then
		kill "$(cat "$BATS_TEST_TMPDIR/reader.pid")" 2>/dev/null || true
	fi
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# peer NAME [ARGS...]: a peer with 8 MiB of DRAM over 64 MiB of SSD in $SSD.
peer() {
	local name="$1"
	shift
	MC_PEER_DRAM=8MiB mc_start_peer "$name" --ssd "$SSD" --ssd-size 64MiB \
		--http 127.0.0.1:0 "$@"
}

demotes() {
	mc_series "$1" mc_peer_moves_total "kind=\"demote\",outcome=\"$2\""
}

# settled PEER: every demotion queued has ended, and DRAM is at or under the high end of its band.
settled() {
	local q d used high
	q="$(demotes "$1" queued)" && d="$(demotes "$1" done)" || return 1
	used="$(mc_tier_field "$1" dram used)" && high="$(mc_tier_field "$1" dram band_high)" ||
		return 1
	[ "$q" -gt 0 ] && [ "$q" -eq "$d" ] && [ "$used" -le "$high" ]
}

# in_flight_at_least PEER N: N demotions queued that have not ended.
in_flight_at_least() {
	local q d
	q="$(demotes "$1" queued)" && d="$(demotes "$1" done)" || return 1
	[ "$((q - d))" -ge "$2" ]
}

# ssd_keys: the keys the master has a copy of on ssd, sorted.
ssd_keys() {
	mc-cli --json candidates --tier ssd | jq -r 'select(has("key")) | .key' | sort
}

# master_ssd_is N: the master lists N copies on ssd.
master_ssd_is() {
	[ "$(ssd_keys | grep -c .)" -eq "$1" ]
}

verify() {
	mc-fill --prefix "$1" --count "$2" --min-size "$OBJ" --max-size "$OBJ" verify
}

@test "ssd crash: kill -9 with demotions in flight keeps exactly the copies sealed before it" {
	mc_start_master
	export MC_FAULT="moved.demote:pause" MC_FAULT_DIR="$BATS_TEST_TMPDIR"
	# demotions go through while the go file is there
	touch "$BATS_TEST_TMPDIR/moved.demote"
	# a wide band: one pass queues a hundred demotions behind the paused one
	peer p1 --dram-watermarks 0.9:0.7
	unset MC_FAULT MC_FAULT_DIR

	# 16 MiB through 8 MiB of DRAM: a few hundred demotions, all of them landed
	run -0 mc-fill --prefix a/ --count 1000 --min-size "$OBJ" --max-size "$OBJ" put
	assert_output --partial "0 failed"
	wait_until 20 settled p1
	ssd_objects="$(mc_tier_field p1 ssd objects)"
	# what one copy takes on ssd, its header with it
	per_copy=$(($(mc_tier_field p1 ssd used) / ssd_objects))
	[ "$per_copy" -gt "$OBJ" ]
	[ "$((per_copy * ssd_objects))" -eq "$(mc_tier_field p1 ssd used)" ]

	# the next demotion stops once its bytes landed, before its seal; the
	# rest queue behind it on the mover's one worker
	rm -f "$BATS_TEST_TMPDIR/moved.demote" "$BATS_TEST_TMPDIR/moved.demote.paused"
	run -0 mc-fill --prefix b/ --count 600 --min-size "$OBJ" --max-size "$OBJ" put
	assert_output --partial "0 failed"
	wait_until 10 test -e "$BATS_TEST_TMPDIR/moved.demote.paused"
	wait_until 10 in_flight_at_least p1 50
	in_flight=$(($(demotes p1 queued) - $(demotes p1 done)))
	ssd_objects="$(mc_tier_field p1 ssd objects)"
	dram_objects="$(mc_tier_field p1 dram objects)"
	ssd_used="$(mc_tier_field p1 ssd used)"
	# the room of every move in flight is reserved on ssd already
	[ "$ssd_used" -eq $(((ssd_objects + in_flight) * per_copy)) ]
	wait_until 10 master_ssd_is "$ssd_objects"
	ssd_keys >"$BATS_TEST_TMPDIR/sealed"
	mc_kill9 p1

	peer p1 --dram-watermarks 0.9:0.7
	# the copies sealed come back, and only their room is taken
	[ "$(mc_tier_field p1 ssd objects)" -eq "$ssd_objects" ]
	[ "$(mc_tier_field p1 ssd used)" -eq $((ssd_objects * per_copy)) ]
	[ "$(mc_tier_field p1 dram objects)" -eq 0 ]
	grep -q "$ssd_objects copies kept on ssd from before" "$MC_DIR/p1.log"
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
	run -1 grep "torn or corrupt" "$MC_DIR/p1.log"
	wait_until 10 master_ssd_is "$ssd_objects"
	# the master lists exactly the copies sealed before the kill ...
	ssd_keys >"$BATS_TEST_TMPDIR/listed"
	run -0 diff "$BATS_TEST_TMPDIR/sealed" "$BATS_TEST_TMPDIR/listed"
	run -0 mc-cli ls
	[ "${#lines[@]}" -eq "$ssd_objects" ]
	# ... and every one of them reads byte-exact; the DRAM copies and the
	# moves in flight are cleanly gone
	run -0 verify a/ 1000
	a_exact="$(sed -n 's/.*: \([0-9]*\) exact.*/\1/p' <<<"$output")"
	assert_output --partial " 0 unreadable, 0 wrong"
	run -0 verify b/ 600
	b_exact="$(sed -n 's/.*: \([0-9]*\) exact.*/\1/p' <<<"$output")"
	assert_output --partial " 0 unreadable, 0 wrong"
	[ "$((a_exact + b_exact))" -eq "$ssd_objects" ]
	[ "$((1600 - a_exact - b_exact))" -eq "$dram_objects" ]
}

# ssd_objects_are PEER N: the peer holds N copies on ssd.
ssd_objects_are() {
	[ "$(mc_tier_field "$1" ssd objects)" -eq "$2" ]
}

# master_metric SERIES: one sample of the master's /metrics (0 when absent).
master_metric() {
	local v
	v="$(mc_scrape master | awk -v s="$1" '$1 == s { print $2 }')"
	echo "${v:-0}"
}

drops_acked() {
	[ "$(master_metric 'mc_tasks_acked_total{kind="drop"}')" -ge "$1" ]
}

@test "ssd crash: a copy removed while a reader still holds it does not come back after a kill" {
	mc_start_master --http 127.0.0.1:0
	peer p1 --fault-inject
	mc_random_file "$BATS_TEST_TMPDIR/r" $((8 << 20))
	mc-cli put r "$BATS_TEST_TMPDIR/r" --tier ssd
	# a reader takes the reply's first bytes and then stops reading: the
	# peer holds the copy until the rest is sent
	mkfifo "$BATS_TEST_TMPDIR/go"
	mc-rpc --stall "$BATS_TEST_TMPDIR/go" -o "$BATS_TEST_TMPDIR/r.out" "$(mc_addr p1)" \
		read key=r >"$BATS_TEST_TMPDIR/r.json" 2>"$BATS_TEST_TMPDIR/r.err" &
	reader=$!
	echo "$reader" >"$BATS_TEST_TMPDIR/reader.pid"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/r.json"
	run -0 mc-cli rm r
	# the peer has dropped it and told the master so
	wait_until 10 drops_acked 1
	ssd_objects_are p1 0
	mc_kill9 p1
	echo go >"$BATS_TEST_TMPDIR/go"
	# the reader loses its peer in the middle of the bytes
	st=0
	wait "$reader" || st=$?
	[ "$st" -eq 69 ]
	rm "$BATS_TEST_TMPDIR/reader.pid"
	peer p1
	ssd_objects_are p1 0
	mc_key_gone r
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
}

@test "ssd crash: a clean stop keeps the ssd copies as a crash does" {
	mc_start_master
	peer p1
	mc_random_file "$BATS_TEST_TMPDIR/a" 150000
	mc-cli put kept "$BATS_TEST_TMPDIR/a" --tier ssd --type kv --group g1
	mc_stop p1
	[ "$MC_STOP_STATUS" -eq 0 ]
	peer p1
	ssd_objects_are p1 1
	grep -q "1 copies kept on ssd from before" "$MC_DIR/p1.log"
	# unregistered, the peer's copies are the master's again once reported
	wait_until 10 mc-cli exist kept
	mc-cli get kept >"$BATS_TEST_TMPDIR/a.out"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/a.out"
	run -0 mc_stat_json kept
	[ "$(jq -r .type <<<"$output")" = kv ]
	[ "$(jq -r .group <<<"$output")" = g1 ]
}

# ---- what a restarted peer finds in space no copy claims ----

# extents: the peer's file of extents.
extents() {
	echo "$SSD/extents"
}

# pad_to_page FILE: zeros up to the next page boundary.
pad_to_page() {
	local n
	n="$(stat -c %s "$1")"
	head -c $(((4096 - n % 4096) % 4096)) /dev/zero >>"$1"
}

# first_data_offset: where the bytes of the first copy of p1's empty ssd
# tier land, found with a probe that is then removed.
first_data_offset() {
	mc_random_file "$BATS_TEST_TMPDIR/probe" 4096
	mc-cli put probe "$BATS_TEST_TMPDIR/probe" --tier ssd >/dev/null || return 1
	mc_offset_of "$(extents)" "$BATS_TEST_TMPDIR/probe"
	mc-cli rm probe >/dev/null || return 1
	wait_until 10 ssd_objects_are p1 0
}

# bait D FILE: an object for offset D holding, after a page of its own,
# a header an outsider signs as best it can (format 3, no key) and one
# as the format-1 peer signed them, each for tenant victim's key stolen.
bait() {
	local d="$1" out="$2" at
	mc_random_file "$out" 4096
	mc_random_file "$BATS_TEST_TMPDIR/stolen" 20000
	mc-ssdforge --at $((d + 4096)) --tenant victim --key stolen --version 7 \
		"$BATS_TEST_TMPDIR/stolen" >>"$out" || return 1
	pad_to_page "$out"
	at=$((d + $(stat -c %s "$out")))
	mc-ssdforge --format 1 --at "$at" --tenant victim --key stolen --version 7 \
		"$BATS_TEST_TMPDIR/stolen" >>"$out" || return 1
	pad_to_page "$out"
}

@test "ssd crash: a header forged in a client's bytes is no copy once they are freed" {
	mc_start_master
	peer p1
	d="$(first_data_offset)"
	[ "$d" -gt 0 ]
	bait "$d" "$BATS_TEST_TMPDIR/bait"
	mc-cli put bait "$BATS_TEST_TMPDIR/bait" --tier ssd
	# the forged headers sit at sector boundaries of the file, where they claim to be
	[ "$(mc_offset_of "$(extents)" "$BATS_TEST_TMPDIR/bait")" -eq "$d" ]

	# a live copy's bytes are its own: a restart finds nothing in them
	mc_kill9 p1
	peer p1
	mc-cli get bait >"$BATS_TEST_TMPDIR/bait.out"
	cmp "$BATS_TEST_TMPDIR/bait" "$BATS_TEST_TMPDIR/bait.out"
	mc_key_gone stolen -t victim
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]

	# freed, they are not a copy either, of the victim's key or any
	mc-cli rm bait
	wait_until 10 ssd_objects_are p1 0
	mc_kill9 p1
	peer p1
	ssd_objects_are p1 0
	mc_key_gone stolen -t victim
	mc_key_gone bait
	run -1 mc-cli -t victim get stolen
	# both are counted, and cleared: the next start finds nothing
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 2 ]
	mc_stop p1
	peer p1
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
	ssd_objects_are p1 0
}

# plant FILE AT: write FILE's bytes into the extents file at offset AT (a sector's).
plant() {
	dd if="$1" of="$(extents)" bs=512 seek=$(($2 / 512)) conv=notrunc status=none
}

# forge AT OUT [ARGS...]: an extent for header offset AT, signed with the
# file's own key unless ARGS say otherwise, into OUT.
forge() {
	local at="$1" out="$2"
	shift 2
	mc-ssdforge --at "$at" --key-from "$(extents)" --file-end "$(stat -c %s "$(extents)")" \
		"$@" "$BATS_TEST_TMPDIR/x" >"$out"
}

@test "ssd crash: garbage and bad headers in free space are counted, cleared and never served" {
	mc_start_master
	peer p1
	for k in live1 live2; do
		mc_random_file "$BATS_TEST_TMPDIR/$k" 150000
		mc-cli put "$k" "$BATS_TEST_TMPDIR/$k" --tier ssd
	done
	mc_stop p1
	mc_random_file "$BATS_TEST_TMPDIR/x" 5000
	n=0
	# random bytes over a megabyte that was never allocated
	mc_random_file "$BATS_TEST_TMPDIR/g" $((1 << 20))
	plant "$BATS_TEST_TMPDIR/g" $((20 << 20))
	# the magic, then garbage, at three pages in a row
	for p in 0 1 2; do
		{ printf mcextent; head -c 4088 /dev/urandom; } >"$BATS_TEST_TMPDIR/g"
		plant "$BATS_TEST_TMPDIR/g" $(((24 << 20) + p * 4096))
		n=$((n + 1))
	done
	# headers signed with the file's key, each spoilt in one way
	at=$((28 << 20))
	for bad in sum data len names tenant nokey offset size empty; do
		forge "$at" "$BATS_TEST_TMPDIR/e" --key "bad-$bad" --bad "$bad"
		plant "$BATS_TEST_TMPDIR/e" "$at"
		at=$((at + (64 << 10)))
		n=$((n + 1))
	done
	# a size that would wrap, in the last header that could hold a page of
	# data: its room of a sector, then the page
	end="$(stat -c %s "$(extents)")"
	forge $((end - 4608)) "$BATS_TEST_TMPDIR/e" --key bad-huge --bad huge
	head -c 4608 "$BATS_TEST_TMPDIR/e" >"$BATS_TEST_TMPDIR/e3"
	plant "$BATS_TEST_TMPDIR/e3" $((end - 4608))
	n=$((n + 1))
	# what an outsider can sign: without the key, or in format 1
	mc-ssdforge --at "$at" --key nokeyed "$BATS_TEST_TMPDIR/x" >"$BATS_TEST_TMPDIR/e"
	plant "$BATS_TEST_TMPDIR/e" "$at"
	at=$((at + (64 << 10)))
	mc-ssdforge --format 1 --at "$at" --key format1 "$BATS_TEST_TMPDIR/x" >"$BATS_TEST_TMPDIR/e"
	plant "$BATS_TEST_TMPDIR/e" "$at"
	at=$((at + (64 << 10)))
	n=$((n + 2))
	# and one extent made right, so that the others fail for what is wrong with them
	forge "$at" "$BATS_TEST_TMPDIR/e" --key control
	plant "$BATS_TEST_TMPDIR/e" "$at"

	peer p1
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq "$n" ]
	grep -q "$n copies on ssd were torn or corrupt" "$MC_DIR/p1.log"
	ssd_objects_are p1 3
	for k in live1 live2; do
		mc-cli get "$k" >"$BATS_TEST_TMPDIR/$k.out"
		cmp "$BATS_TEST_TMPDIR/$k" "$BATS_TEST_TMPDIR/$k.out"
	done
	wait_until 10 mc-cli exist control
	mc-cli get control >"$BATS_TEST_TMPDIR/control.out"
	cmp "$BATS_TEST_TMPDIR/x" "$BATS_TEST_TMPDIR/control.out"
	run -0 mc-cli ls
	assert_output "$(printf '%s\n' control live1 live2)"
	# cleared: the next start finds nothing more
	mc_stop p1
	peer p1
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
	ssd_objects_are p1 3
}

# hdr_bytes PEER: what a copy's header takes on the peer's empty ssd tier,
# from one copy of 4096 bytes, then removed.
hdr_bytes() {
	mc_random_file "$BATS_TEST_TMPDIR/one" 4096
	mc-cli put one "$BATS_TEST_TMPDIR/one" --tier ssd >/dev/null || return 1
	echo $(($(mc_tier_field "$1" ssd used) - 4096))
	mc-cli rm one >/dev/null || return 1
	wait_until 10 ssd_objects_are "$1" 0
}

# save_extent KEY FILE HDR OUT: the bytes of KEY's extent (header and
# data of FILE's size) into OUT; prints the header's offset.
save_extent() {
	local d
	d="$(mc_offset_of "$(extents)" "$2")"
	[ "$d" -gt 0 ] || return 1
	dd if="$(extents)" of="$4" bs=512 skip=$(((d - $3) / 512)) \
		count=$((($3 + $(stat -c %s "$2") + 511) / 512)) status=none
	echo $((d - $3))
}

@test "ssd crash: an older version's extent put back in free space never wins over the current one" {
	mc_start_master
	peer p1
	hdr="$(hdr_bytes p1)"
	[ "$hdr" -gt 0 ]
	mc_random_file "$BATS_TEST_TMPDIR/v1" 20000
	mc_random_file "$BATS_TEST_TMPDIR/v2" 20000
	mc-cli put other "$BATS_TEST_TMPDIR/v2" --tier ssd
	mc-cli put k "$BATS_TEST_TMPDIR/v1" --tier ssd
	mc_kill9 p1
	at="$(save_extent k "$BATS_TEST_TMPDIR/v1" "$hdr" "$BATS_TEST_TMPDIR/k.v1")"
	peer p1
	mc-cli put k "$BATS_TEST_TMPDIR/v2" --tier ssd --upsert
	mc_kill9 p1

	# the old extent where it was, its space free since the upsert
	plant "$BATS_TEST_TMPDIR/k.v1" "$at"
	peer p1
	# both versions were found; the older lost to the newer and went
	ssd_objects_are p1 2
	# each its header's room and its 20000 bytes in whole sectors
	[ "$(mc_tier_field p1 ssd used)" -eq $((2 * (hdr + (20000 + 511) / 512 * 512))) ]
	mc-cli get k >"$BATS_TEST_TMPDIR/k.out"
	cmp "$BATS_TEST_TMPDIR/v2" "$BATS_TEST_TMPDIR/k.out"
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
	# for good: it is not found at the next start
	mc_kill9 p1
	peer p1
	ssd_objects_are p1 2
	grep -q "2 copies kept on ssd from before" "$MC_DIR/p1.log"

	# somewhere else, it names a place it is not at: refused
	plant "$BATS_TEST_TMPDIR/k.v1" $((32 << 20))
	mc_kill9 p1
	peer p1
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 1 ]
	ssd_objects_are p1 2
	mc-cli get k >"$BATS_TEST_TMPDIR/k.out"
	cmp "$BATS_TEST_TMPDIR/v2" "$BATS_TEST_TMPDIR/k.out"

	# the newest version in dram, lost with a kill, the old extent back in
	# place: the master has the peer drop it rather than serve it
	mc-cli put k "$BATS_TEST_TMPDIR/v2" --tier dram --upsert
	ssd_objects_are p1 1
	mc_kill9 p1
	plant "$BATS_TEST_TMPDIR/k.v1" "$at"
	peer p1
	wait_until 10 mc_key_gone k
	wait_until 10 ssd_objects_are p1 1
	run -1 mc-cli get k
	mc-cli get other >"$BATS_TEST_TMPDIR/other.out"
	cmp "$BATS_TEST_TMPDIR/v2" "$BATS_TEST_TMPDIR/other.out"
}

@test "ssd crash: a file of format 1 or with a damaged superblock is started afresh, saying why" {
	mc_start_master
	# a format-1 file: its first extent began the file, signed as anyone could
	mc_random_file "$BATS_TEST_TMPDIR/x" 5000
	mc-ssdforge --format 1 --at 0 --tenant victim --key old "$BATS_TEST_TMPDIR/x" \
		>"$(extents)"
	peer p1
	run -0 grep -c "starting it afresh" "$MC_DIR/p1.log"
	assert_output 1
	grep -q "ssd file '$(extents)' is of format 1, without a superblock: starting it afresh" \
		"$MC_DIR/p1.log"
	ssd_objects_are p1 0
	mc_key_gone old -t victim
	[ "$(stat -c %s "$(extents)")" -eq $(((64 << 20) + 4096)) ]
	mc_random_file "$BATS_TEST_TMPDIR/a" 150000
	mc-cli put a "$BATS_TEST_TMPDIR/a" --tier ssd

	# kept across a restart, its superblock whole
	mc_kill9 p1
	peer p1
	run -1 grep "afresh" "$MC_DIR/p1.log"
	ssd_objects_are p1 1

	# a byte of the superblock flipped: nothing in the file is believed
	mc_kill9 p1
	mc_flip_byte "$(extents)" 40
	peer p1
	grep -q "ssd file '$(extents)' has a damaged superblock: starting it afresh" "$MC_DIR/p1.log"
	ssd_objects_are p1 0
	[ "$(mc_series p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
	wait_until 10 mc_key_gone a
	mc_roundtrip b 150000 --tier ssd
	mc_kill9 p1
	peer p1
	ssd_objects_are p1 1
	mc-cli get b >"$BATS_TEST_TMPDIR/b.out"
	cmp "$BATS_TEST_TMPDIR/b.src" "$BATS_TEST_TMPDIR/b.out"
}

@test "ssd crash: a file of format 2 is refused at start, saying what to do, and left as it was" {
	mc_start_master
	# a format-2 peer's file: its superblock, then an extent of its layout
	mc_random_file "$BATS_TEST_TMPDIR/x" 5000
	mc-ssdforge --superblock --format 2 >"$(extents)"
	mc-ssdforge --format 2 --at 4096 --tenant t --key old "$BATS_TEST_TMPDIR/x" >>"$(extents)"
	truncate -s $(((64 << 20) + 4096)) "$(extents)"
	cp "$(extents)" "$BATS_TEST_TMPDIR/before"
	run timeout 10 mc-peer --master "$MC_MASTER" --dram 4MiB --ssd "$SSD" --ssd-size 64MiB
	[ "$status" -eq 69 ]
	assert_output --partial "ssd file '$(extents)' is in format 2; this peer writes format 3: move it away"
	cmp "$(extents)" "$BATS_TEST_TMPDIR/before"
	# at another size too: the file is neither cut nor grown
	run timeout 10 mc-peer --master "$MC_MASTER" --dram 4MiB --ssd "$SSD" --ssd-size 32MiB
	[ "$status" -eq 69 ]
	cmp "$(extents)" "$BATS_TEST_TMPDIR/before"
	# moved away, as the message says: the tier starts afresh
	mv "$(extents)" "$BATS_TEST_TMPDIR/format2"
	peer p1
	ssd_objects_are p1 0
	mc_roundtrip a 150000 --tier ssd
	cmp "$BATS_TEST_TMPDIR/format2" "$BATS_TEST_TMPDIR/before"
}
