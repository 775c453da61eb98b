#!/usr/bin/env bats
#
# mc-snapshot: the offline commands (verify, inspect, ls, prune) on files
# that mc-snapgen writes, and save/restore against a real master.

load helpers

setup_file() {
	# The files the tests share: good ones of two sizes, and the bad
	# ones are made from them per test.
	export SNAPS="$BATS_FILE_TMPDIR/files"
	mkdir -p "$SNAPS"
	mc-snapgen --count 200 --seed 7 -o "$SNAPS/good.mcs"
	mc-snapgen --count 0 -o "$SNAPS/empty.mcs"
}

setup() {
	mc_require_bins mc-snapshot mc-snapgen
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# flip_byte FILE OFFSET: xor one byte with 0x55, in place.
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\x$(printf %02x $((b ^ 0x55)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

file_size() {
	stat -c %s "$1"
}

# ---- conventions ----

@test "snapshot-tool: --version prints the program and version" {
	run -0 mc-snapshot --version
	assert_output "mc-snapshot $MC_VERSION"
}

@test "snapshot-tool: --help names every command" {
	run -0 mc-snapshot --help
	assert_output --partial save
	assert_output --partial restore
	assert_output --partial verify
	assert_output --partial inspect
	assert_output --partial prune
}

@test "snapshot-tool: --list-options lists options and commands" {
	run -0 mc-snapshot --list-options
	assert_line --regexp $'^--master\tADDR\t'
	assert_line --regexp $'^--keep\tN\t'
	assert_line --regexp $'^cmd\tverify\t'
	assert_line --regexp $'^cmd\tls\t'
}

@test "snapshot-tool: an unknown option or command exits 64" {
	run -64 mc-snapshot --frobnicate verify x
	assert_output --partial "unknown option '--frobnicate'"
	run -64 mc-snapshot frobnicate
	assert_output --partial "unknown command 'frobnicate'"
	run -64 mc-snapshot verify
	assert_output --partial "missing FILE"
}

@test "snapshot-tool: prune without --keep, or with --keep 0, exits 64" {
	run -64 mc-snapshot prune "$BATS_TEST_TMPDIR"
	assert_output --partial "missing --keep"
	run -64 mc-snapshot prune --keep 0 "$BATS_TEST_TMPDIR"
	assert_output --partial "invalid --keep '0'"
}

@test "snapshot-tool: an option of another command exits 64" {
	run -64 mc-snapshot verify --force "$SNAPS/good.mcs"
	assert_output --partial "'--force' belongs to 'restore'"
}

# ---- verify ----

@test "snapshot-tool: verify of a good file exits 0 with its record count" {
	# 200 objects, 3 tenants, 2 peers, 1 meta
	run -0 mc-snapshot verify "$SNAPS/good.mcs"
	assert_output "$SNAPS/good.mcs: ok, 206 records"
}

@test "snapshot-tool: verify of a snapshot without objects is good" {
	run -0 mc-snapshot verify "$SNAPS/empty.mcs"
	assert_output "$SNAPS/empty.mcs: ok, 6 records"
}

@test "snapshot-tool: verify reads a pipe on stdin" {
	run -0 bash -c 'mc-snapgen --count 3000 | mc-snapshot verify -'
	assert_output "-: ok, 3006 records"
}

@test "snapshot-tool: verify --json says ok and the count" {
	run -0 mc-snapshot verify --json "$SNAPS/good.mcs"
	jq -e '.ok == true and .records == 206' <<<"$output"
}

@test "snapshot-tool: a file cut in its payload exits 65: truncated payload" {
	local f="$BATS_TEST_TMPDIR/cut.mcs"
	head -c $(($(file_size "$SNAPS/good.mcs") / 2)) "$SNAPS/good.mcs" >"$f"
	run -65 mc-snapshot verify "$f"
	assert_output "mc-snapshot: $f: truncated payload"
}

@test "snapshot-tool: a file cut in its trailer exits 65: truncated trailer" {
	local f="$BATS_TEST_TMPDIR/cut.mcs"
	head -c $(($(file_size "$SNAPS/good.mcs") - 3)) "$SNAPS/good.mcs" >"$f"
	run -65 mc-snapshot verify "$f"
	assert_output "mc-snapshot: $f: truncated trailer"
}

@test "snapshot-tool: a flipped payload byte exits 65 naming the damage" {
	local f="$BATS_TEST_TMPDIR/flip.mcs"
	cp "$SNAPS/good.mcs" "$f"
	flip_byte "$f" $(($(file_size "$f") / 2))
	run -65 mc-snapshot verify "$f"
	assert_output --regexp "^mc-snapshot: $f: (checksum mismatch|bad payload: .+)$"
}

@test "snapshot-tool: a flipped header byte exits 65: header checksum mismatch" {
	local f="$BATS_TEST_TMPDIR/flip.mcs" off
	cp "$SNAPS/good.mcs" "$f"
	# a byte of the master_id's value: structure intact, content wrong
	off=$(grep -obUa 'snapgen-7' "$f" | head -n 1 | cut -d: -f1)
	flip_byte "$f" "$off"
	run -65 mc-snapshot verify "$f"
	assert_output "mc-snapshot: $f: header checksum mismatch"
}

@test "snapshot-tool: a flipped trailer byte exits 65" {
	local f="$BATS_TEST_TMPDIR/flip.mcs"
	cp "$SNAPS/good.mcs" "$f"
	flip_byte "$f" $(($(file_size "$f") - 2))
	run -65 mc-snapshot verify "$f"
	assert_output --regexp "^mc-snapshot: $f: (checksum mismatch|header checksum mismatch|bad trailer: .+)$"
}

@test "snapshot-tool: bytes after the trailer exit 65" {
	local f="$BATS_TEST_TMPDIR/long.mcs"
	{ cat "$SNAPS/good.mcs"; echo; } >"$f"
	run -65 mc-snapshot verify "$f"
	assert_output "mc-snapshot: $f: trailing bytes after the trailer"
}

@test "snapshot-tool: files of other formats exit 65: not an mc-snapshot file" {
	local png="$BATS_TEST_TMPDIR/x.png" json="$BATS_TEST_TMPDIR/x.json" e="$BATS_TEST_TMPDIR/e"
	printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0' >"$png"
	echo '{"format":"mc-snapshot","version":1}' >"$json"
	: >"$e"
	run -65 mc-snapshot verify "$png"
	assert_output "mc-snapshot: $png: not an mc-snapshot file"
	run -65 mc-snapshot verify "$json"
	assert_output "mc-snapshot: $json: not an mc-snapshot file"
	run -65 mc-snapshot verify "$e"
	assert_output "mc-snapshot: $e: not an mc-snapshot file"
}

@test "snapshot-tool: verify of a missing file exits 1" {
	run -1 mc-snapshot verify "$BATS_TEST_TMPDIR/nope.mcs"
	assert_output "mc-snapshot: cannot open '$BATS_TEST_TMPDIR/nope.mcs': no such file or directory"
}

@test "snapshot-tool: verify prints no progress when stderr is not a terminal" {
	run -0 --separate-stderr mc-snapshot verify "$SNAPS/good.mcs"
	[ -z "$stderr" ]
}

# ---- inspect ----

@test "snapshot-tool: inspect --json parses and its counts add up" {
	run -0 mc-snapshot inspect --json "$SNAPS/good.mcs"
	jq -e '.header.format == "mc-snapshot" and .header.version == 1' <<<"$output"
	jq -e '.records == 206 and .kinds.object == 200 and .kinds.tenant == 3 and
		.kinds.peer == 2 and .kinds.meta == 1' <<<"$output"
	jq -e '([.tenants[].objects] | add) == 200 and ([.types[].objects] | add) == 200' \
		<<<"$output"
	jq -e '([.tenants[].bytes] | add) == .bytes and .bytes == .header.bytes' <<<"$output"
	jq -e --argjson size "$(file_size "$SNAPS/good.mcs")" '.size == $size' <<<"$output"
	# mc-snapgen gives tenant "default" the type "kv" only
	jq -e '.tenants.default.objects == .types.kv.objects' <<<"$output"
}

@test "snapshot-tool: inspect prints the header and the tables as text" {
	run -0 mc-snapshot inspect "$SNAPS/good.mcs"
	assert_line --regexp '^format: +mc-snapshot version 1$'
	assert_line --regexp '^master_id: +snapgen-7$'
	assert_line --regexp '^created: +2023-11-14T22:13:20.000Z \(1700000000000\)$'
	assert_line "tenants:"
	assert_line --regexp '^  default +[0-9]+ objects '
}

@test "snapshot-tool: inspect of a bad file exits 65" {
	local f="$BATS_TEST_TMPDIR/cut.mcs"
	head -c 100 "$SNAPS/good.mcs" >"$f"
	run -65 mc-snapshot inspect "$f"
	assert_output --partial "mc-snapshot: $f: "
}

# ---- ls and prune ----

make_dir() {
	local d="$BATS_TEST_TMPDIR/snaps" t
	mkdir -p "$d"
	for t in 1700000000000 1700000300000 1700000100000 1700000200000; do
		mc-snapgen --count 5 --created "$t" -o "$d/mc-snapshot-$t.mcs"
	done
	touch "$d/.mc-snapshot-Ab12Cd" "$d/notes.txt" "$d/mc-snapshot-x.mcs"
	echo "$d"
}

@test "snapshot-tool: ls lists snapshots newest first and nothing else" {
	local d
	d=$(make_dir)
	run -0 mc-snapshot ls "$d"
	assert_equal "${#lines[@]}" 4
	assert_line --index 0 --regexp '^2023-11-14T22:18:20.000Z +[0-9.]+[KMG]?i?B +mc-snapshot-1700000300000.mcs$'
	assert_line --index 1 --partial mc-snapshot-1700000200000.mcs
	assert_line --index 2 --partial mc-snapshot-1700000100000.mcs
	assert_line --index 3 --partial mc-snapshot-1700000000000.mcs
}

@test "snapshot-tool: ls --json gives one object per file" {
	local d
	d=$(make_dir)
	run -0 mc-snapshot ls --json "$d"
	jq -s -e 'length == 4 and .[0].created == 1700000300000 and
		(map(.size > 0) | all) and .[3].name == "mc-snapshot-1700000000000.mcs"' \
		<<<"$output"
}

@test "snapshot-tool: ls defaults to MC_SNAPSHOT_DIR" {
	local d
	d=$(make_dir)
	MC_SNAPSHOT_DIR="$d" run -0 mc-snapshot ls
	assert_equal "${#lines[@]}" 4
}

@test "snapshot-tool: ls of a missing directory exits 1" {
	run -1 mc-snapshot ls "$BATS_TEST_TMPDIR/none"
	assert_output --partial "cannot list '$BATS_TEST_TMPDIR/none'"
}

@test "snapshot-tool: prune --keep 2 keeps the two newest and nothing else goes" {
	local d
	d=$(make_dir)
	run -0 mc-snapshot prune --keep 2 "$d"
	assert_output ""
	[ -f "$d/mc-snapshot-1700000300000.mcs" ]
	[ -f "$d/mc-snapshot-1700000200000.mcs" ]
	[ ! -e "$d/mc-snapshot-1700000100000.mcs" ]
	[ ! -e "$d/mc-snapshot-1700000000000.mcs" ]
	[ -f "$d/.mc-snapshot-Ab12Cd" ] && [ -f "$d/notes.txt" ] && [ -f "$d/mc-snapshot-x.mcs" ]
	run -0 mc-snapshot prune --keep 2 "$d"
	run -0 mc-snapshot ls "$d"
	assert_equal "${#lines[@]}" 2
}

@test "snapshot-tool: prune -v names each file it removes" {
	local d
	d=$(make_dir)
	run -0 mc-snapshot prune -v --keep 3 "$d"
	assert_output "removing $d/mc-snapshot-1700000000000.mcs"
}

# ---- against a master ----

@test "snapshot-tool: save with the master unreachable exits 69" {
	run -69 mc-snapshot -m "unix:$BATS_TEST_TMPDIR/none.sock" save
	assert_output --partial "cannot connect to unix:$BATS_TEST_TMPDIR/none.sock"
}

@test "snapshot-tool: save, save -o and restore move a master's objects to another" {
	mc_require_bins mc-master mc-peer mc-cli
	mc_test_dir
	mkdir -p "$MC_DIR/snaps"
	mc_start_master --snapshot-dir "$MC_DIR/snaps"
	mc_start_peer peer1
	local k
	for k in a b c; do
		mc_random_file "$BATS_TEST_TMPDIR/$k" 1000
		mc-cli put "snap/$k" "$BATS_TEST_TMPDIR/$k"
	done

	run -0 mc-snapshot save
	assert_output --regexp "^$MC_DIR/snaps/mc-snapshot-[0-9]+\\.mcs$"
	run -0 mc-snapshot verify "$output"
	assert_output --partial ": ok, "

	run -0 mc-snapshot save -o "$BATS_TEST_TMPDIR/out.mcs"
	assert_output "$BATS_TEST_TMPDIR/out.mcs: 3 objects, $(file_size "$BATS_TEST_TMPDIR/out.mcs")B"
	run -0 mc-snapshot inspect --json "$BATS_TEST_TMPDIR/out.mcs"
	jq -e '.kinds.object == 3 and .tenants.default.objects == 3' <<<"$output"
	[ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.mc-snapshot-*')" ]

	run -0 bash -c 'mc-snapshot save -o - | mc-snapshot verify -'

	mc_start_daemon master2 mc-master --listen "unix:$MC_DIR/master2.sock"
	run -0 mc-snapshot -m "$(mc_addr master2)" restore "$BATS_TEST_TMPDIR/out.mcs"
	assert_output "restored $BATS_TEST_TMPDIR/out.mcs: 3 objects, 1 peers, 1 tenants"
	run -1 mc-snapshot -m "$(mc_addr master2)" restore "$BATS_TEST_TMPDIR/out.mcs"
	assert_output --partial "use --force"
	run -0 mc-snapshot -m "$(mc_addr master2)" restore --force --json \
		"$BATS_TEST_TMPDIR/out.mcs"
	jq -e '.objects == 3' <<<"$output"
}

@test "snapshot-tool: save -o only streams: the master's --snapshot-dir stays as it was" {
	mc_require_bins mc-master mc-peer mc-cli
	mc_test_dir
	mkdir -p "$MC_DIR/snaps"
	mc_start_master --snapshot-dir "$MC_DIR/snaps" --snapshot-keep 1
	mc_start_peer peer1
	echo one | mc-cli put k1
	run -0 mc-snapshot save
	local kept="$output"
	local before
	before="$(ls -la --time-style=full-iso "$MC_DIR/snaps")"
	echo two | mc-cli put k2
	run -0 mc-snapshot save -o "$BATS_TEST_TMPDIR/a.mcs"
	mc-snapshot save -o - >"$BATS_TEST_TMPDIR/b.mcs"
	local f
	for f in a b; do
		run -0 mc-snapshot inspect --json "$BATS_TEST_TMPDIR/$f.mcs"
		jq -e '.kinds.object == 2' <<<"$output"
	done
	# the directory: the same one file, untouched, and no temporary left
	assert_equal "$(ls -la --time-style=full-iso "$MC_DIR/snaps")" "$before"
	assert_equal "$(mc_snap_files "$MC_DIR/snaps")" "$kept"
	# a save into the directory still lands there (and prunes to --snapshot-keep)
	run -0 mc-snapshot save
	refute_output "$kept"
	assert_equal "$(mc_snap_files "$MC_DIR/snaps")" "$output"
}

@test "snapshot-tool: a save into the directory during a save -o gets the next snapshot" {
	mc_require_bins mc-master mc-peer mc-cli
	mc_test_dir
	mkdir -p "$MC_DIR/snaps" "$MC_DIR/f"
	MC_FAULT=snapshot.write:pause MC_FAULT_DIR="$MC_DIR/f" \
		mc_start_master --snapshot-dir "$MC_DIR/snaps" --http 127.0.0.1:0
	mc_start_peer peer1
	echo one | mc-cli put k1
	mc-snapshot save -o "$BATS_TEST_TMPDIR/a.mcs" >/dev/null &
	local streamer=$!
	wait_until 10 test -e "$MC_DIR/f/snapshot.write.paused"
	# written after the streamed snapshot began: only the next one has it
	echo two | mc-cli put k2
	mc-snapshot save >"$BATS_TEST_TMPDIR/dir.out" &
	local saver=$!
	wait_until 10 mc_metric_at_least master 'mc_requests_total{method="snapshot_save"}' 2
	touch "$MC_DIR/f/snapshot.write"
	wait "$streamer"
	wait "$saver"
	run -0 mc-snapshot inspect --json "$BATS_TEST_TMPDIR/a.mcs"
	jq -e '.kinds.object == 1' <<<"$output"
	assert_equal "$(mc_snap_files "$MC_DIR/snaps")" "$(cat "$BATS_TEST_TMPDIR/dir.out")"
	run -0 mc-snapshot inspect --json "$(cat "$BATS_TEST_TMPDIR/dir.out")"
	jq -e '.kinds.object == 2' <<<"$output"
}

@test "snapshot-tool: stream_only without stream is refused as invalid" {
	mc_require_bins mc-master mc-rpc
	mc_test_dir
	mkdir -p "$MC_DIR/snaps"
	mc_start_master --snapshot-dir "$MC_DIR/snaps"
	run mc-rpc "$MC_MASTER" snapshot_save stream_only:=true
	assert_failure
	assert_output --partial "stream_only: needs stream"
	mc_snap_count_is "$MC_DIR/snaps" 0
}

@test "snapshot-tool: restore refuses a bad file before sending it" {
	local f="$BATS_TEST_TMPDIR/cut.mcs"
	head -c 300 "$SNAPS/good.mcs" >"$f"
	# no master at this address: the file is refused first
	run -65 mc-snapshot -m "unix:$BATS_TEST_TMPDIR/none.sock" restore "$f"
	assert_output "mc-snapshot: $f: truncated payload"
}
