#!/usr/bin/env bats
#
# Snapshots, restore and reconciliation end to end: a master
# with --snapshot-dir and two peers, mc-snapshot to take and check files,
# kill -9 of the master and a restart on the same socket with --restore.
# Every test builds its own cluster, since every test kills something.
# Many objects are written and checked byte-exact with mc-fill (batched,
# content derived from the key).
#
# slow: about 20 s alone on two cores, up to a minute beside the trace
# replays and under ASan: 34 tests, most of them start a cluster, kill
# its master and restore it from a real file.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-snapshot mc-fill mc-rpc
}

setup() {
	mc_test_dir
	SNAPDIR="$MC_DIR/snap"
	mkdir -p "$SNAPDIR"
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# The fake clock moves by whole seconds in these tests; --peer-ttl 1h keeps
# the peers alive through every move.
master_flags=(--peer-ttl 1h)

# start_master [ARGS...]: a master with $SNAPDIR.
start_master() {
	mc_start_master --snapshot-dir "$SNAPDIR" "${master_flags[@]}" "$@"
}

start_cluster() {
	start_master
	mc_start_peers 2
}

# restart_master [ARGS...]: a crash (SIGKILL, no goodbye) and a new master
# on the same socket path, which the running peers reconnect to.
restart_master() {
	mc_kill9 master
	start_master "$@"
}

# save_now: ask the master for a snapshot; prints the path it wrote.
save_now() {
	local out
	out="$(mc-snapshot save)" || return 1
	local path
	path="$(grep -o "[^[:space:]]*/mc-snapshot-[0-9]*\.mcs" <<<"$out" | head -n 1)"
	if [ -z "$path" ] || [ ! -f "$path" ]; then
		echo "# mc-snapshot save printed no snapshot file: $out" >&2
		return 1
	fi
	echo "$path"
}

# The 10k objects of the round trip: two tenants besides the default,
# four types, two groups, hard pins, one and two replicas, 0 B to 16 KiB.
mixed_sets=(
	"-t alpha --prefix kv/ -n 3000 --type kv --group ga --replicas 2"
	"-t beta --prefix tensor/ -n 3000 --type tensor --replicas 1 --max-size 16KiB"
	"--prefix hidden/ -n 2000 --type hidden --hard-pin --replicas 2"
	"--prefix gen/ -n 2000 --group gb --replicas 1 --min-size 1"
)

# fill_mixed CMD: run mc-fill CMD (put or check) over every set.
fill_mixed() {
	local set
	for set in "${mixed_sets[@]}"; do
		# shellcheck disable=SC2086
		mc-fill $set "$1" || return 1
	done
}

# A sample across the sets, as "TENANT KEY".
sample_keys=(
	"alpha kv/000000" "alpha kv/002999" "alpha kv/001234"
	"beta tensor/000000" "beta tensor/002500"
	"default hidden/000007" "default hidden/001999"
	"default gen/000000" "default gen/001500"
)

# stat_core TENANT KEY: what `stat --json` says about an object, minus the
# ids a restart renumbers (peers register anew); replicas by address.
stat_core() {
	local out
	out="$(mc-cli -t "$1" --json stat "$2")" || return 1
	jq -S -c '{key, tenant, size, version, checksum, type, group, hard_pin,
		created, last_access, access_count, lease_deadline, soft_pin,
		soft_pin_deadline,
		replicas: ([.replicas[] | {replica_id, addr, tier, state, version,
			dynamic}] | sort_by(.addr))}' <<<"$out"
}

sample_core() {
	local tk
	for tk in "${sample_keys[@]}"; do
		# shellcheck disable=SC2086
		stat_core $tk || return 1
	done
}

# samples_match FILE: the sample's stat records equal those in FILE.
samples_match() {
	local now
	now="$(sample_core)" || return 1
	[ "$now" = "$(cat "$1")" ]
}

# stats_core: the cluster counts of `mc-cli stat`.
stats_core() {
	local out
	out="$(mc-cli --json stat)" || return 1
	jq -S -c '{objects, bytes, peers, tenants: (.tenants | sort_by(.tenant))}' <<<"$out"
}

# ---- round trip ----

@test "snapshot: 10k objects of mixed tenants, types, groups and pins read back byte-exact after kill -9 and --restore latest" {
	start_cluster
	fill_mixed put
	fill_mixed check
	sample_core >"$BATS_TEST_TMPDIR/before.stat"
	stats_core >"$BATS_TEST_TMPDIR/before.stats"
	jq -e '.objects == 10000' "$BATS_TEST_TMPDIR/before.stats"

	save_now

	restart_master --restore latest
	wait_until 20 mc_live_peer_count_is 2
	# compared before any read, which would move access times and leases
	wait_until 20 samples_match "$BATS_TEST_TMPDIR/before.stat"
	stats_core >"$BATS_TEST_TMPDIR/after.stats"
	diff "$BATS_TEST_TMPDIR/before.stats" "$BATS_TEST_TMPDIR/after.stats"
	fill_mixed check
}

@test "snapshot: the restored master logs which file it loaded" {
	start_cluster
	mc-fill --prefix logged/ -n 100 put
	local file
	file="$(save_now)"
	restart_master --restore latest
	grep -F "$(basename "$file")" "$MC_DIR/master.log"
}

# ---- access sequences ----

# seqs PREFIX: {key: [access_seq, created_seq]} of the candidate records
# under PREFIX, one line, keys sorted.
seqs() {
	local out
	out="$(mc-cli --json candidates)" || return 1
	jq -s -c -S --arg p "$1" '[.[] | select(has("key") and (.key | startswith($p)))
		| {(.key): [.access_seq, .created_seq]}] | add' <<<"$out"
}

# view_seq: the header's seq, the master's access counter (absent: 0).
view_seq() {
	local out
	out="$(mc-cli --json candidates)" || return 1
	head -n 1 <<<"$out" | jq -r '.seq // 0'
}

# seq_records_are N PREFIX: the view holds N records under PREFIX.
seq_records_are() {
	local out
	out="$(seqs "$2")" || return 1
	[ "$(jq 'length' <<<"$out")" -eq "$1" ]
}

@test "snapshot: access and creation sequences survive save and restore; later accesses number above them" {
	start_cluster
	local k
	for k in a b c; do
		echo "$k" | mc-cli put "sq/$k"
	done
	mc_hold_lease sq/b
	mc_hold_lease sq/a
	# created 1, 2, 3; then b read as 4 and a as 5
	local want='{"sq/a":[5,1],"sq/b":[4,2],"sq/c":[3,3]}'
	assert_equal "$(seqs sq/)" "$want"
	assert_equal "$(view_seq)" 5
	save_now
	# written after the snapshot: the restarted master adopts it from its peer
	echo d | mc-cli put sq/d

	restart_master --restore latest
	wait_until 20 mc_live_peer_count_is 2
	wait_until 20 seq_records_are 4 sq/
	# the restored ones as they were; the adopted one numbered after the file's counter
	assert_equal "$(seqs sq/)" "${want%\}},\"sq/d\":[6,6]}"
	assert_equal "$(view_seq)" 6
	mc_hold_lease sq/c
	assert_equal "$(seqs sq/ | jq -c '."sq/c"')" "[7,3]"
	assert_equal "$(view_seq)" 7
}

@test "snapshot: a file without access sequences restores, and numbering starts after it" {
	mc_require_bins mc-snapgen
	# mc-snapgen writes files as the master did before it numbered accesses
	mc-snapgen --count 50 -o "$BATS_TEST_TMPDIR/old.mcs"
	start_master --restore "$BATS_TEST_TMPDIR/old.mcs" --reconcile-timeout 1h
	mc_start_peers 1
	mc-cli --json stat | jq -e '.objects > 0'
	echo new | mc-cli put fresh
	assert_equal "$(seqs fresh)" '{"fresh":[1,1]}'
	assert_equal "$(view_seq)" 1
}

# ---- reconciliation ----

@test "snapshot: objects written after the snapshot are adopted from the peers and read back" {
	start_cluster
	mc-fill --prefix before/ -n 500 put
	save_now
	mc-fill --prefix after/ -n 500 put
	local v
	v="$(mc_version after/000123)"

	restart_master --restore latest
	wait_until 20 mc-fill --prefix after/ -n 500 check
	mc-fill --prefix before/ -n 500 check
	# adopted with the version the peer holds
	assert_equal "$(mc_version after/000123)" "$v"
}

@test "snapshot: versions never go backwards: a put after the restart gets a version above every restored and adopted one" {
	start_cluster
	mc-fill --prefix before/ -n 50 put
	save_now
	mc-fill --prefix after/ -n 50 put
	local v
	v="$(mc_version after/000049)"

	restart_master --restore latest
	wait_until 20 mc-fill --prefix after/ -n 50 check
	echo fresh | mc-cli put fresh-after-restart
	[ "$(mc_version fresh-after-restart)" -gt "$v" ]
}

@test "snapshot: an object written after the snapshot with two copies is adopted with both replicas" {
	start_cluster
	save_now
	mc-fill --prefix twice/ -n 100 --replicas 2 put

	restart_master --restore latest
	wait_until 20 mc_live_peer_count_is 2
	wait_until 20 mc-fill --prefix twice/ -n 100 check
	two_replicas() {
		[ "$(mc_replica_addrs twice/000042 | sort -u | grep -c .)" -eq 2 ]
	}
	wait_until 20 two_replicas
}

@test "snapshot: a master restarted empty adopts every object the peers hold" {
	start_cluster
	mc-fill --prefix nosnap/ -n 300 --replicas 2 put
	restart_master
	wait_until 20 mc-fill --prefix nosnap/ -n 300 check
}

@test "snapshot: a peer that died while the master was down loses its replicas after --reconcile-timeout; objects with another copy stay readable" {
	# peer2 alone first: the only2/ objects can only land there
	start_master
	mc_start_peer peer2
	mc-fill --prefix only2/ -n 200 put
	mc_start_peer peer1
	mc-fill --prefix both/ -n 200 --replicas 2 put
	save_now

	mc_kill9 master
	mc_kill9 peer2
	start_master --restore latest --reconcile-timeout 10s
	wait_until 20 mc_live_peer_count_is 1
	wait_until 20 mc-fill --prefix both/ -n 200 check
	# within the timeout the unconfirmed object is still known
	mc-cli stat only2/000000 >/dev/null

	advance_clock 11000
	wait_until 10 mc_key_gone only2/000000
	mc-fill --prefix only2/ -n 200 absent
	for k in 000000 000100 000199; do
		mc_key_gone "only2/$k"
	done
	mc-fill --prefix both/ -n 200 check
	# the dead peer's copies are gone from the survivors' records
	assert_equal "$(mc_replica_addrs both/000007)" "$(mc_addr peer1)"
	assert_equal "$(mc_replica_addrs both/000150)" "$(mc_addr peer1)"
	mc-cli --json stat | jq -e '.objects == 200'
}

@test "snapshot: a put still in progress at snapshot time is not restored (its writer is gone)" {
	start_cluster
	mc-fill --prefix done/ -n 20 put
	mc-rpc "$MC_MASTER" put_start key=inflight size:=10 checksum:=1 >/dev/null
	save_now
	restart_master --restore latest
	wait_until 20 mc-fill --prefix done/ -n 20 check
	mc_key_gone inflight
	# and the key is free for a new writer
	echo again | mc-cli put inflight
	mc-cli get inflight | grep -qx again
}

@test "snapshot: with no peer coming back, every restored object is erased once --reconcile-timeout passes" {
	start_cluster
	mc-fill --prefix lonely/ -n 100 put
	save_now
	mc_kill9 peer1
	mc_kill9 peer2
	restart_master --restore latest --reconcile-timeout 10s --http 127.0.0.1:0
	local st sweeps
	st="$(mc-rpc "$MC_MASTER" snapshot_status)"
	assert_equal "$(jq -r .reconcile_deadline <<<"$st")" $(($(clock_now) + 10000))
	mc-cli stat lonely/000000 >/dev/null

	advance_clock 9000
	# a whole sweep that runs after the clock moved, before the deadline, keeps them
	sweeps="$(mc_metric master mc_sweeps_total)"
	wait_until 10 mc_metric_at_least master mc_sweeps_total $((sweeps + 1))
	mc-cli stat lonely/000000 >/dev/null
	advance_clock 2000
	wait_until 10 mc_key_gone lonely/000000
	mc-cli --json stat | jq -e '.objects == 0 and .bytes == 0'
}

@test "snapshot: snapshot_status reports the directory, retention and the last snapshot" {
	start_cluster
	mc-fill --prefix st/ -n 40 put
	local file st
	file="$(save_now)"
	st="$(mc-rpc "$MC_MASTER" snapshot_status)"
	jq -e --arg f "$file" --argjson now "$(clock_now)" '.keep == 3 and
		.in_progress == false and .last.path == $f and
		.last.objects == 40 and .last.created == $now and
		.last.size > 0' <<<"$st"
	assert_equal "$(stat -c %s "$file")" "$(jq -r .last.size <<<"$st")"
}

@test "snapshot: inspect of a master's file counts its objects per tenant and type" {
	start_cluster
	mc-fill -t alpha --prefix a/ -n 30 --type kv put
	mc-fill --prefix b/ -n 20 --type tensor --hard-pin put
	local file
	file="$(save_now)"
	run -0 mc-snapshot inspect --json "$file"
	jq -e '.objects == 50 and .tenants.alpha.objects == 30 and
		.tenants.default.objects == 20 and .types.kv.objects == 30 and
		.types.tensor.objects == 20 and .hard_pins == 20' <<<"$output"
}

@test "snapshot: a leftover temporary file in the directory is never restored" {
	start_cluster
	mc-fill --prefix tmpf/ -n 10 put
	local file
	file="$(save_now)"
	# what a crash in the middle of a write leaves behind
	head -c 100 "$file" >"$SNAPDIR/.mc-snapshot-zzzzzz"
	cp "$file" "$SNAPDIR/.mc-snapshot-yyyyyy"
	mc_kill9 peer1
	mc_kill9 peer2
	restart_master --restore latest
	run ! grep -q 'mc-snapshot-[yz]' "$MC_DIR/master.log"
	grep -q -F "$(basename "$file")" "$MC_DIR/master.log"
	mc-cli stat tmpf/000000 >/dev/null
}

@test "snapshot: a dead writer's temporary file is removed at the next start; snapshots and other files stay" {
	start_cluster
	mc-fill --prefix tmpf/ -n 10 put
	local file
	file="$(save_now)"
	# what a writer killed together with its master leaves behind
	head -c 100 "$file" >"$SNAPDIR/.mc-snapshot-Dead01"
	: >"$SNAPDIR/.mc-snapshot-Dead02"
	echo mine >"$SNAPDIR/.mc-snapshot-notours"
	echo mine >"$SNAPDIR/notes.txt"
	restart_master
	[ ! -e "$SNAPDIR/.mc-snapshot-Dead01" ]
	[ ! -e "$SNAPDIR/.mc-snapshot-Dead02" ]
	[ -e "$file" ] && [ -e "$SNAPDIR/.mc-snapshot-notours" ] && [ -e "$SNAPDIR/notes.txt" ]
	grep -q "removed 2 unfinished snapshot files from $SNAPDIR" "$MC_DIR/master.log"
	mc-snapshot verify "$file"
}

@test "snapshot: a temporary file a live writer holds locked survives the start; the next prune removes it once let go" {
	local f="$SNAPDIR/.mc-snapshot-Live01"
	# held here on fd 8, which the daemons do not inherit
	exec 8>"$f"
	flock -n 8
	start_cluster 8>&-
	[ -e "$f" ]
	exec 8>&-
	# a snapshot's prune cleans up too, not only a start
	save_now
	[ ! -e "$f" ]
}

@test "snapshot: /metrics reports the last snapshot's objects, time and failures" {
	start_master --http 127.0.0.1:0
	mc_start_peers 1
	mc-fill --prefix m/ -n 25 put
	save_now
	local url body
	url="$(grep -o 'http://[0-9.]*:[0-9]*/metrics' "$MC_DIR/master.log" | head -n 1)"
	[ -n "$url" ]
	body="$(mc_http_get "$url")"
	metric_is() {
		awk -v s="$1" -v v="$2" '$1 == s { found = 1; ok = ($2 + 0 == v + 0) }
			END { exit !(found && ok) }' <<<"$body"
	}
	metric_is mc_snapshot_objects 25
	metric_is mc_snapshot_failures_total 0
	metric_is mc_snapshot_last_success_timestamp $(($(clock_now) / 1000))
	grep -q '^mc_snapshot_duration_seconds ' <<<"$body"
}

# ---- bad files ----

# two_files: good/ in an older file, good/ and later/ in a newer one (the
# clock moves between them so the names differ). Sets OLD and NEW.
two_files() {
	start_cluster
	mc-fill --prefix good/ -n 100 put
	OLD="$(save_now)"
	advance_clock 1000
	mc-fill --prefix later/ -n 100 put
	NEW="$(save_now)"
	[ "$OLD" != "$NEW" ]
	run -0 mc-snapshot verify "$OLD"
	run -0 mc-snapshot verify "$NEW"
}

# restore_skips REASON: with no peer left to adopt anything, --restore
# latest must say why NEW failed, load OLD instead, and keep nothing of
# NEW (which held later/ too).
restore_skips() {
	mc_kill9 peer1
	mc_kill9 peer2
	restart_master --restore latest
	local log="$MC_DIR/master.log"
	grep -F "$(basename "$NEW")" "$log" | grep -E -q "$1" || {
		echo "# no line naming $(basename "$NEW") with '$1' in the log:" >&2
		sed 's/^/#   /' "$log" >&2
		return 1
	}
	grep -q -F "$(basename "$OLD")" "$log"
	mc-cli stat good/000000 >/dev/null
	mc-cli stat good/000099 >/dev/null
	mc_key_gone later/000000
	mc_key_gone later/000099
	mc-cli --json stat | jq -e '.objects == 100'
}

@test "snapshot: a truncated file fails verify with exit 65 naming the reason" {
	two_files
	truncate -s $(($(stat -c %s "$NEW") / 2)) "$NEW"
	run -65 mc-snapshot verify "$NEW"
	assert_output --partial "mc-snapshot: $NEW: "
	assert_output --regexp 'truncated'
}

@test "snapshot: --restore latest skips a truncated file to the previous good one" {
	two_files
	truncate -s $(($(stat -c %s "$NEW") / 2)) "$NEW"
	restore_skips 'truncated'
}

@test "snapshot: a flipped byte in the payload fails verify with exit 65 naming the reason" {
	two_files
	mc_flip_byte "$NEW" $(($(stat -c %s "$NEW") / 2))
	run -65 mc-snapshot verify "$NEW"
	assert_output --partial "mc-snapshot: $NEW: "
	assert_output --regexp 'checksum mismatch|corrupt|zstd|record'
}

@test "snapshot: a flipped byte at the end of the trailer fails verify with exit 65" {
	two_files
	mc_flip_byte "$NEW" $(($(stat -c %s "$NEW") - 1))
	run -65 mc-snapshot verify "$NEW"
	assert_output --regexp 'checksum mismatch|record count mismatch'
}

@test "snapshot: --restore latest skips a file with a flipped byte to the previous good one" {
	two_files
	mc_flip_byte "$NEW" $(($(stat -c %s "$NEW") / 2))
	restore_skips 'checksum mismatch|corrupt|zstd|record'
}

@test "snapshot: a file of another format fails verify with exit 65: not an mc-snapshot file" {
	two_files
	printf '{"format":"mc-candidates","version":1}\n' >"$NEW"
	run -65 mc-snapshot verify "$NEW"
	assert_output --partial "mc-snapshot: $NEW: not an mc-snapshot file"
}

@test "snapshot: --restore latest skips a file of another format to the previous good one" {
	two_files
	printf '\211PNG\r\n\032\n\0\0\0\rIHDR' >"$NEW"
	restore_skips 'not an mc-snapshot file'
}

@test "snapshot: --restore latest with no loadable file starts empty and says so" {
	start_master
	printf 'junk' >"$SNAPDIR/mc-snapshot-1700000000000.mcs"
	restart_master --restore latest
	grep -q 'mc-snapshot-1700000000000.mcs' "$MC_DIR/master.log"
	mc-cli --json stat | jq -e '.objects == 0'
}

# ---- soft pins (a crafted snapshot: soft pins have no write path yet) ----

# softpin_restart: expired/ pinned until now+5 s, active/ until now+1 h,
# both written into a copy of a real snapshot; the master restarts from
# it 10 s later. Sets ACTIVE_DEADLINE.
softpin_restart() {
	start_cluster
	mc-fill --prefix expired/ -n 50 put
	mc-fill --prefix active/ -n 50 put
	local plain now t="$BATS_TEST_TMPDIR"
	plain="$(save_now)"
	now="$(clock_now)"
	ACTIVE_DEADLINE=$((now + 3600000))
	mc-fill --prefix expired/ --deadline $((now + 5000)) softpin "$plain" "$t/step.mcs"
	mc-fill --prefix active/ --deadline "$ACTIVE_DEADLINE" softpin "$t/step.mcs" \
		"$t/pinned.mcs"
	mc-snapshot verify "$t/pinned.mcs"
	mc_kill9 master
	advance_clock 10000
	start_master --restore "$t/pinned.mcs"
	wait_until 20 mc_live_peer_count_is 2
}

@test "snapshot: a soft pin whose deadline passed while the master was down restores as ordinary cache" {
	softpin_restart
	local rec
	rec="$(mc_stat_json expired/000000)"
	assert_equal "$(jq -r .soft_pin <<<"$rec")" disabled
	# cache, not garbage: a live peer confirms it, so it stays readable
	wait_until 20 mc-fill --prefix expired/ -n 50 check
}

@test "snapshot: an active soft pin restores with its deadline" {
	softpin_restart
	local rec
	rec="$(mc_stat_json active/000010)"
	assert_equal "$(jq -r .soft_pin <<<"$rec")" active
	assert_equal "$(jq -r .soft_pin_deadline <<<"$rec")" "$ACTIVE_DEADLINE"
	wait_until 20 mc-fill --prefix active/ -n 50 check
}

# ---- mc-snapshot save -o, restore ----

@test "snapshot: save -o FILE streams a file that verify accepts" {
	start_cluster
	mc-fill --prefix s/ -n 300 put
	local f="$BATS_TEST_TMPDIR/streamed.mcs"
	run -0 mc-snapshot save -o "$f"
	[ -s "$f" ]
	run -0 mc-snapshot verify "$f"
	assert_output --partial "ok"
	# nothing left behind next to FILE
	[ "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '*streamed*' | grep -c .)" -eq 1 ]
}

@test "snapshot: a master killed while its child writes a streamed snapshot leaves no file in TMPDIR" {
	mc_require_bins mc-snapgen
	export TMPDIR="$MC_DIR/tmp" MC_FAULT_DIR="$MC_DIR/fault"
	mkdir -p "$TMPDIR" "$MC_FAULT_DIR"
	mc-snapgen --count 2000 -o "$BATS_TEST_TMPDIR/many.mcs"
	# the child is held in the middle of its write, its temporary file made
	MC_FAULT=snapshot.write:pause mc_start_master --restore "$BATS_TEST_TMPDIR/many.mcs" \
		--reconcile-timeout 1h
	mc-snapshot save -o "$BATS_TEST_TMPDIR/out.mcs" 2>/dev/null &
	local saver=$! writer
	wait_until 20 test -e "$MC_FAULT_DIR/snapshot.write.paused"
	mc-rpc "$MC_MASTER" snapshot_status | jq -e '.in_progress' >/dev/null
	writer="$(pgrep -P "$(mc_pid master)")"
	[ -n "$writer" ]
	kill -9 "$writer"
	mc_kill9 master
	wait_until 10 mc_gone "$writer"
	wait "$saver" || true
	run find "$TMPDIR" -name 'mc-snapshot-*'
	assert_output ''
}

@test "snapshot: save -o - writes the file to stdout" {
	start_cluster
	mc-fill --prefix s/ -n 100 put
	local f="$BATS_TEST_TMPDIR/stdout.mcs"
	mc-snapshot save -o - >"$f"
	run -0 mc-snapshot verify "$f"
}

@test "snapshot: restore FILE loads a streamed snapshot into an empty master" {
	start_cluster
	mc-fill --prefix s/ -n 300 put
	local f="$BATS_TEST_TMPDIR/streamed.mcs" want
	mc-snapshot save -o "$f"
	want="$(mc_stat_json s/000010 | jq -S -c '{size, version, checksum, type}')"

	mc_start_daemon master2 mc-master --listen "unix:$MC_DIR/master2.sock" \
		"${master_flags[@]}"
	local m2="$MC_LAST_ADDR"
	run -0 mc-snapshot -m "$m2" restore "$f"
	MC_MASTER="$m2" mc-cli --json stat | jq -e '.objects == 300'
	assert_equal "$(MC_MASTER="$m2" mc_stat_json s/000010 |
		jq -S -c '{size, version, checksum, type}')" "$want"
}

@test "snapshot: restore FILE into a master holding objects refuses without --force" {
	start_cluster
	mc-fill --prefix s/ -n 100 put
	local f="$BATS_TEST_TMPDIR/streamed.mcs"
	mc-snapshot save -o "$f"
	mc-fill --prefix extra/ -n 10 put

	run -1 mc-snapshot restore "$f"
	refute_output ''
	# nothing changed
	mc-cli --json stat | jq -e '.objects == 110'

	run -0 mc-snapshot restore "$f" --force
	mc-cli stat s/000000 >/dev/null
	mc-cli stat s/000099 >/dev/null
}

@test "snapshot: restore of a file over --max-restore-bytes is refused and counted while other clients' requests go on" {
	mc_require_bins mc-snapgen
	start_master --http 127.0.0.1:0 --max-restore-bytes 4KiB
	mc_start_peers 1
	local f="$BATS_TEST_TMPDIR/big.mcs" fill
	mc-snapgen --count 500 -o "$f"
	[ "$(stat -c %s "$f")" -gt 4096 ]
	mc-fill --prefix during/ -n 3000 put &
	fill=$!
	run -1 mc-snapshot restore "$f"
	assert_output --partial 'over --max-restore-bytes (4096)'
	# the refused bytes are read past and dropped: the connection stays open
	run -69 mc-rpc --wait-close --timeout-ms 300 --bulk "$f" "$MC_MASTER" snapshot_restore
	assert_output --partial 'too_large: snapshot of'
	wait "$fill"
	mc-fill --prefix during/ -n 3000 check
	mc-cli --json stat | jq -e '.objects == 3000'
	assert_equal "$(mc_metric master mc_snapshot_restore_too_large_total)" 2
}

# ---- periodic snapshots ----

@test "snapshot: --snapshot-interval with --snapshot-keep 2 keeps taking snapshots and leaves 2 files" {
	# the interval runs on real time, and file names carry the creation
	# time: a frozen fake clock would give every snapshot the same name
	unset MC_FAKE_CLOCK
	start_master --snapshot-interval 200ms --snapshot-keep 2
	local seen f
	: >"$BATS_TEST_TMPDIR/seen"
	# seen_four: note the snapshot files there are now; four names seen yet
	seen_four() {
		local f
		for f in "$SNAPDIR"/mc-snapshot-*.mcs; do
			[ -e "$f" ] && echo "${f##*/}" >>"$BATS_TEST_TMPDIR/seen"
		done
		[ "$(sort -u "$BATS_TEST_TMPDIR/seen" | grep -c .)" -ge 4 ]
	}
	wait_until 15 seen_four
	seen="$(cat "$BATS_TEST_TMPDIR/seen")"
	wait_until 5 mc_snap_count_is "$SNAPDIR" 2
	# the oldest ones were pruned, and what is left is whole
	local first
	first="$(sort -u <<<"$seen" | grep . | sort -t- -k3 -n | head -n 1)"
	[ ! -e "$SNAPDIR/$first" ]
	for f in $(mc_snap_files "$SNAPDIR"); do
		mc-snapshot verify "$f" || [ ! -e "$f" ]
	done
	# no temporary file survives in the directory but the one in progress
	[ "$(find "$SNAPDIR" -name '.mc-snapshot-*' | grep -c .)" -le 1 ]
}
