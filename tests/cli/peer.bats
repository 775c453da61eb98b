#!/usr/bin/env bats
#
# The peer's data plane spoken directly (tests/tools/mc-rpc): write, read,
# drop, peer_stats and corrupt, with their version rules and errors.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-rpc
	mc_file_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h
	MC_PEER_DRAM=8MiB mc_start_peer p1 --fault-inject
	MC_PEER_DRAM=8MiB mc_start_peer plain
}

teardown_file() {
	mc_stop_everything
}

# prpc [mc-rpc options] METHOD FIELDS...: a call to p1.
prpc() {
	local opts=()
	while [ $# -gt 0 ] && [[ "$1" == -* ]]; do
		opts+=("$1" "$2")
		shift 2
	done
	mc-rpc "${opts[@]}" "$(mc_addr p1)" "$@"
}

# pwrite KEY VERSION FILE [TENANT]
pwrite() {
	prpc --bulk "$3" write tenant="${4:-t}" key="$1" version:="$2"
}

@test "peer: write then read returns the same bytes, version and length" {
	local src="$BATS_TEST_TMPDIR/src" got="$BATS_TEST_TMPDIR/got"
	mc_random_file "$src" 100000
	pwrite rw 3 "$src"
	run -0 prpc -o "$got" read tenant=t key=rw
	jq_true '.len == 100000 and .version == 3' <<<"$output"
	cmp "$src" "$got"
}

@test "peer: a 0 B write reads back as 0 bytes" {
	local got="$BATS_TEST_TMPDIR/got"
	pwrite empty 1 /dev/null
	run -0 prpc -o "$got" read tenant=t key=empty
	jq_true '.len == 0' <<<"$output"
	[ -f "$got" ] && [ ! -s "$got" ]
}

@test "peer: read of an absent key fails with not_found" {
	run -1 prpc read tenant=t key=absent
	assert_output --partial not_found
}

@test "peer: read asking another version fails with not_found" {
	echo v5 >"$BATS_TEST_TMPDIR/v5"
	pwrite vers 5 "$BATS_TEST_TMPDIR/v5"
	run -1 prpc read tenant=t key=vers version:=4
	assert_output --partial not_found
	run -0 prpc read tenant=t key=vers version:=5
}

@test "peer: the same key in another tenant is another object" {
	echo a >"$BATS_TEST_TMPDIR/a"
	pwrite tk 1 "$BATS_TEST_TMPDIR/a" ten-a
	run -1 prpc read tenant=ten-b key=tk
	assert_output --partial not_found
	run -0 prpc read tenant=ten-a key=tk
}

@test "peer: a newer version replaces the copy; an older one is refused with version" {
	local got="$BATS_TEST_TMPDIR/got"
	echo one >"$BATS_TEST_TMPDIR/one"
	echo second >"$BATS_TEST_TMPDIR/two"
	pwrite upd 1 "$BATS_TEST_TMPDIR/one"
	pwrite upd 2 "$BATS_TEST_TMPDIR/two"
	prpc -o "$got" read tenant=t key=upd >/dev/null
	cmp "$BATS_TEST_TMPDIR/two" "$got"
	run -1 pwrite upd 1 "$BATS_TEST_TMPDIR/one"
	assert_output --partial version
	prpc -o "$got" read tenant=t key=upd >/dev/null
	cmp "$BATS_TEST_TMPDIR/two" "$got"
}

@test "peer: drop of an older version keeps the copy; of its version or none frees it" {
	echo x >"$BATS_TEST_TMPDIR/x"
	pwrite dr 7 "$BATS_TEST_TMPDIR/x"
	prpc drop tenant=t key=dr version:=6
	run -0 prpc read tenant=t key=dr
	prpc drop tenant=t key=dr version:=7
	run -1 prpc read tenant=t key=dr
	pwrite dr2 9 "$BATS_TEST_TMPDIR/x"
	prpc drop tenant=t key=dr2
	run -1 prpc read tenant=t key=dr2
}

@test "peer: a write larger than the whole arena is refused (too_large or no_space)" {
	local big="$BATS_TEST_TMPDIR/big"
	mc_random_file "$big" $((9 << 20))
	run -1 pwrite toobig 1 "$big"
	assert_output --regexp 'too_large|no_space'
	run -1 prpc read tenant=t key=toobig
}

@test "peer: a write larger than the free space fails with no_space naming used and capacity" {
	local half="$BATS_TEST_TMPDIR/half"
	mc_random_file "$half" $((5 << 20))
	pwrite half-1 1 "$half"
	run -1 pwrite half-2 1 "$half"
	assert_output --partial no_space
	assert_output --regexp "no space for $((5 << 20)) bytes in dram \(used [0-9]+ of 8388608\)"
	run -1 prpc read tenant=t key=half-2
	# the space comes back once the first copy is dropped
	prpc drop tenant=t key=half-1
	pwrite half-2 1 "$half"
	prpc drop tenant=t key=half-2
}

@test "peer: a write names its tier: dram by default, a tier the peer lacks or an unknown one refused" {
	echo x >"$BATS_TEST_TMPDIR/x"
	prpc --bulk "$BATS_TEST_TMPDIR/x" write tenant=t key=tiered version:=1 tier=dram
	run -0 prpc read tenant=t key=tiered
	run -1 prpc --bulk "$BATS_TEST_TMPDIR/x" write tenant=t key=tiered-ssd version:=1 tier=ssd
	assert_output --partial "this peer has no ssd tier"
	run -1 prpc --bulk "$BATS_TEST_TMPDIR/x" write tenant=t key=tiered-ssd version:=1 tier=floppy
	assert_output --partial "unknown tier 'floppy'"
	run -1 prpc read tenant=t key=tiered-ssd
	prpc drop tenant=t key=tiered
}

@test "peer: a write whose key is longer than MC_KEY_MAX is refused" {
	local k
	k="$(head -c 4097 /dev/zero | tr '\0' k)"
	echo x >"$BATS_TEST_TMPDIR/x"
	run -1 pwrite "$k" 1 "$BATS_TEST_TMPDIR/x"
	assert_output --partial invalid
}

@test "peer: peer_stats counts objects, reads and writes" {
	local o0 r0 w0
	run -0 prpc peer_stats
	o0="$(jq '.tiers[] | select(.tier == "dram") | .objects' <<<"$output")"
	r0="$(jq .reads <<<"$output")"
	w0="$(jq .writes <<<"$output")"
	echo s >"$BATS_TEST_TMPDIR/s"
	pwrite stats-1 1 "$BATS_TEST_TMPDIR/s"
	prpc read tenant=t key=stats-1 >/dev/null
	prpc read tenant=t key=stats-1 >/dev/null
	run -0 prpc peer_stats
	jq_true --argjson o "$o0" '(.tiers[] | select(.tier == "dram") | .objects) == $o + 1' <<<"$output"
	jq_true --argjson r "$r0" --argjson w "$w0" '.reads == $r + 2 and .writes == $w + 1' <<<"$output"
	jq_true '(.tiers[] | select(.tier == "dram") | .capacity) == 8388608' <<<"$output"
}

@test "peer: corrupt flips one byte of the stored copy (with --fault-inject)" {
	local src="$BATS_TEST_TMPDIR/src" got="$BATS_TEST_TMPDIR/got"
	mc_random_file "$src" 64
	pwrite flip 1 "$src"
	prpc corrupt tenant=t key=flip offset:=10
	prpc -o "$got" read tenant=t key=flip >/dev/null
	[ "$(cmp -l "$src" "$got" | wc -l)" -eq 1 ]
	cmp -l "$src" "$got" | grep -q '^ *11 '
}

@test "peer: corrupt of an absent key fails with not_found" {
	run -1 prpc corrupt tenant=t key=nothing-here offset:=0
	assert_output --partial not_found
}

@test "peer: without --fault-inject, corrupt is denied and raw writes, reads and drops are refused" {
	echo x >"$BATS_TEST_TMPDIR/x"
	run -1 mc-rpc "$(mc_addr plain)" corrupt tenant=t key=safe offset:=0
	assert_output --partial denied
	run -1 mc-rpc --bulk "$BATS_TEST_TMPDIR/x" "$(mc_addr plain)" write tenant=t key=safe \
		version:=1
	assert_output --partial "permission denied"
	run -1 mc-rpc "$(mc_addr plain)" read tenant=t key=safe
	assert_output --partial "permission denied"
	run -1 mc-rpc "$(mc_addr plain)" drop tenant=t key=safe
	assert_output --partial "permission denied"
}

@test "peer: an unknown method gets an error reply and the peer keeps serving" {
	run -1 prpc no_such_method
	run -0 prpc peer_stats
}

has_content() {
	[ -s "$1" ]
}

read_is_not_found() {
	local st=0
	mc-rpc "$1" read tenant=t key="$2" >/dev/null 2>&1 || st=$?
	[ "$st" -eq 1 ]
}

@test "peer: a copy dropped while being read is unlinked at once but its bytes live until the read ends" {
	MC_PEER_DRAM=8MiB mc_start_peer slow --fault-inject
	local addr src other got fifo hdr
	addr="$(mc_addr slow)"
	src="$BATS_TEST_TMPDIR/src" other="$BATS_TEST_TMPDIR/other"
	got="$BATS_TEST_TMPDIR/got" fifo="$BATS_TEST_TMPDIR/stall" hdr="$BATS_TEST_TMPDIR/hdr"
	mc_random_file "$src" $((6 << 20))
	mc_random_file "$other" $((6 << 20))
	mkfifo "$fifo"
	mc-rpc --bulk "$src" "$addr" write tenant=t key=inflight version:=1
	# a reader that takes the header and then stops reading the bulk
	mc-rpc --stall "$fifo" -o "$got" "$addr" read tenant=t key=inflight >"$hdr" &
	local reader=$!
	wait_until 10 has_content "$hdr"
	mc-rpc "$addr" drop tenant=t key=inflight
	wait_until 5 read_is_not_found "$addr" inflight
	# the 6 MiB still being sent must not be handed out again: 6 + 6 > 8
	run mc-rpc --bulk "$other" "$addr" write tenant=t key=reuse version:=1
	local reuse_status="$status"
	echo go >"$fifo"
	wait "$reader"
	cmp "$src" "$got"
	[ "$reuse_status" -eq 1 ]
	# once the read is over the space is free again
	wait_until 5 mc-rpc --bulk "$other" "$addr" write tenant=t key=reuse2 version:=1
	mc_stop slow
}

# used PEER: the bytes PEER's tiers hold now.
used() {
	mc-rpc "$(mc_addr "$1")" peer_stats | jq '[.tiers[].used] | add'
}

used_is() {
	[ "$(used "$1")" -eq "$2" ]
}

@test "peer: a write whose bytes stop coming is abandoned after --write-timeout and its space freed" {
	MC_PEER_DRAM=8MiB mc_start_peer stall --fault-inject --write-timeout 200ms --http 127.0.0.1:0
	local addr big="$BATS_TEST_TMPDIR/big" small="$BATS_TEST_TMPDIR/small" got="$BATS_TEST_TMPDIR/got"
	addr="$(mc_addr stall)"
	mc_random_file "$big" $((6 << 20))
	mc_random_file "$small" 1000
	[ "$(used stall)" -eq 0 ]
	# a writer that announces 6 MiB, sends 1000 bytes and stops
	mc-rpc --timeout-ms 10000 --bulk "$big" --bulk-short 1000 "$addr" write tenant=t \
		key=stalled version:=1 &
	local writer=$!
	wait_until 10 used_is stall $((6 << 20))
	# meanwhile another client writes and reads
	mc-rpc --bulk "$small" "$addr" write tenant=t key=alive version:=1
	mc-rpc -o "$got" "$addr" read tenant=t key=alive >/dev/null
	cmp "$small" "$got"
	mc-rpc "$addr" drop tenant=t key=alive
	# the stalled writer's connection is closed by the peer, and its space comes back
	wait "$writer"
	wait_until 10 used_is stall 0
	[ "$(mc_metric stall mc_peer_writes_abandoned_total)" -eq 1 ]
	run -1 mc-rpc "$addr" read tenant=t key=stalled
	assert_output --partial not_found
	mc_stop stall
}
