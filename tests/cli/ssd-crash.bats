#!/usr/bin/env bats
#
# The SSD tier across a crash: a peer killed with SIGKILL in the middle
# of heavy demotion, started again on the same file, serves exactly the
# copies that were sealed before the kill, byte-exact, and the master
# lists no other; a copy dropped while a reader holds it stays dropped;
# a clean stop keeps the copies too. SSD files stay at or under 64 MiB,
# under $BATS_TEST_TMPDIR.

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

# metric PEER NAME LABELS: one sample of the peer's /metrics (0 when absent).
metric() {
	local v
	v="$(mc_scrape "$1" | awk -v m="$2{$3}" '$1 == m { print $2 }')"
	echo "${v:-0}"
}

demotes() {
	metric "$1" mc_peer_moves_total "kind=\"demote\",outcome=\"$2\""
}

# tier_field PEER TIER FIELD: objects, used or capacity of one tier (peer_stats).
tier_field() {
	mc-rpc "$(mc_addr "$1")" peer_stats |
		jq -r --arg t "$2" --arg f "$3" '.tiers[] | select(.tier == $t) | .[$f]'
}

# settled PEER: every demotion queued has ended, and DRAM is under its high watermark.
settled() {
	local q d used cap
	q="$(demotes "$1" queued)" && d="$(demotes "$1" done)" || return 1
	used="$(tier_field "$1" dram used)" && cap="$(tier_field "$1" dram capacity)" || return 1
	[ "$q" -gt 0 ] && [ "$q" -eq "$d" ] && [ "$((used * 10))" -le "$((cap * 9))" ]
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
	peer p1
	unset MC_FAULT MC_FAULT_DIR

	# 16 MiB through 8 MiB of DRAM: a few hundred demotions, all of them landed
	run -0 mc-fill --prefix a/ --count 1000 --min-size "$OBJ" --max-size "$OBJ" put
	assert_output --partial "0 failed"
	wait_until 20 settled p1
	ssd_objects="$(tier_field p1 ssd objects)"
	# what one copy takes on ssd, its header with it
	per_copy=$(($(tier_field p1 ssd used) / ssd_objects))
	[ "$per_copy" -gt "$OBJ" ]
	[ "$((per_copy * ssd_objects))" -eq "$(tier_field p1 ssd used)" ]

	# the next demotion stops once its bytes landed, before its seal; the
	# rest queue behind it on the mover's one worker
	rm -f "$BATS_TEST_TMPDIR/moved.demote" "$BATS_TEST_TMPDIR/moved.demote.paused"
	run -0 mc-fill --prefix b/ --count 600 --min-size "$OBJ" --max-size "$OBJ" put
	assert_output --partial "0 failed"
	wait_until 10 test -e "$BATS_TEST_TMPDIR/moved.demote.paused"
	wait_until 10 in_flight_at_least p1 50
	in_flight=$(($(demotes p1 queued) - $(demotes p1 done)))
	ssd_objects="$(tier_field p1 ssd objects)"
	dram_objects="$(tier_field p1 dram objects)"
	ssd_used="$(tier_field p1 ssd used)"
	# the room of every move in flight is reserved on ssd already
	[ "$ssd_used" -eq $(((ssd_objects + in_flight) * per_copy)) ]
	wait_until 10 master_ssd_is "$ssd_objects"
	ssd_keys >"$BATS_TEST_TMPDIR/sealed"
	mc_kill9 p1

	peer p1
	# the copies sealed come back, and only their room is taken
	[ "$(tier_field p1 ssd objects)" -eq "$ssd_objects" ]
	[ "$(tier_field p1 ssd used)" -eq $((ssd_objects * per_copy)) ]
	[ "$(tier_field p1 dram objects)" -eq 0 ]
	grep -q "$ssd_objects copies kept on ssd from before" "$MC_DIR/p1.log"
	[ "$(metric p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
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
	[ "$(tier_field "$1" ssd objects)" -eq "$2" ]
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
	run -69 wait "$reader"
	rm "$BATS_TEST_TMPDIR/reader.pid"
	peer p1
	ssd_objects_are p1 0
	mc_key_gone r
	[ "$(metric p1 mc_peer_medium_corrupt_total 'tier="ssd"')" -eq 0 ]
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
