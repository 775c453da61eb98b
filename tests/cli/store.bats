#!/usr/bin/env bats
#
# The store core through mc-cli: put/get/exist/ls/stat/rm on one master and
# three peers shared by the whole file (each test uses its own keys).

load helpers

PUT_TIMEOUT_MS=10000

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-fill
	mc_file_dir
	# Only the --put-timeout test moves the clock, by less than --peer-ttl.
	mc_start_master --peer-ttl 1h --put-timeout "${PUT_TIMEOUT_MS}ms"
	mc_start_peers 3
}

teardown_file() {
	mc_stop_everything
}

@test "store: a 0 B object round-trips through put and get" {
	mc_roundtrip zero 0
	[ ! -s "$BATS_TEST_TMPDIR/zero.dst" ]
}

@test "store: a 1 B object round-trips byte-exact" {
	mc_roundtrip one 1
}

@test "store: a 1 MiB object round-trips byte-exact" {
	mc_roundtrip mib $((1 << 20))
}

@test "store: a 64 MiB object round-trips byte-exact" {
	mc_roundtrip big64 $((64 << 20))
}

@test "store: get -o FILE writes exactly the object's bytes to FILE" {
	local src="$BATS_TEST_TMPDIR/src" out="$BATS_TEST_TMPDIR/out.bin"
	mc_random_file "$src" 100000
	mc-cli put out-key "$src"
	run -0 mc-cli get out-key -o "$out"
	assert_output ''
	cmp "$src" "$out"
}

@test "store: get -o of an empty object creates an empty FILE" {
	local out="$BATS_TEST_TMPDIR/empty.out"
	mc-cli put empty-o /dev/null
	mc-cli get empty-o -o "$out"
	[ -f "$out" ] && [ ! -s "$out" ]
}

@test "store: get -o FILE leaves FILE untouched when the key is absent" {
	local out="$BATS_TEST_TMPDIR/keep.out"
	echo precious >"$out"
	run -1 mc-cli get no-such-key -o "$out"
	[ "$(cat "$out")" = precious ]
}

@test "store: put reads stdin when FILE is '-' or absent" {
	local src="$BATS_TEST_TMPDIR/src"
	mc_random_file "$src" 70000
	mc-cli put stdin-dash - <"$src"
	mc-cli put stdin-none <"$src"
	mc-cli get stdin-dash | cmp "$src" -
	mc-cli get stdin-none | cmp "$src" -
}

@test "store: exist exits 0 for a stored key and 1 for an absent one, printing nothing" {
	echo hi | mc-cli put exist-yes
	run -0 mc-cli exist exist-yes
	assert_output ''
	run -1 mc-cli exist exist-no
	assert_output ''
}

@test "store: get of an absent key exits 1 and says not found" {
	run -1 mc-cli get never-stored
	assert_output --partial "not found"
	assert_output --partial "never-stored"
}

@test "store: ls PREFIX lists exactly the keys under PREFIX, sorted" {
	local k
	for k in ls/b ls/a ls/c/1 lsx/a; do
		echo "$k" | mc-cli put "$k"
	done
	run -0 mc-cli ls ls/
	assert_output "$(printf 'ls/a\nls/b\nls/c/1')"
	run -0 mc-cli ls lsx/
	assert_output 'lsx/a'
	run -0 mc-cli ls ls-none/
	assert_output ''
}

@test "store: ls without PREFIX lists every key of the tenant" {
	echo x | mc-cli put ls-all-marker
	run -0 mc-cli ls
	assert_line 'ls-all-marker'
}

@test "store: ls --json prints one parseable object per key with key, size, version, type" {
	printf 'abcde' | mc-cli put lsj/one --type kv
	printf 'abc' | mc-cli put lsj/two
	run -0 mc-cli --json ls lsj/
	[ "${#lines[@]}" -eq 2 ]
	echo "${lines[0]}" | jq_true '.key == "lsj/one" and .size == 5 and .type == "kv" and (.version | type == "number")'
	echo "${lines[1]}" | jq_true '.key == "lsj/two" and .size == 3 and .type == "general"'
}

@test "store: ls pages past 1000 keys (the default page) without losing any" {
	# 1005 keys in batches (mc-fill), not a process a key
	run -0 mc-fill --prefix page/ -n 1005 --max-size 16 put
	run -0 mc-cli ls page/
	[ "${#lines[@]}" -eq 1005 ]
	[ "${lines[0]}" = page/000000 ]
	[ "${lines[1004]}" = page/001004 ]
	# every one in order, none twice
	printf '%s\n' "${lines[@]}" | sort -c
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -u | grep -c .)" 1005
}

@test "store: stat shows size, version and the replica's peer" {
	local src="$BATS_TEST_TMPDIR/src"
	mc_random_file "$src" 12345
	mc-cli put stat-key "$src"
	local addr
	addr="$(mc_replica_addrs stat-key)"
	run -0 mc-cli stat stat-key
	assert_output --partial 12345
	assert_output --regexp '[Vv]ersion'
	assert_output --partial "$addr"
}

@test "store: stat --json parses and carries key, size, version, checksum, type and complete replicas" {
	mc_random_file "$BATS_TEST_TMPDIR/src" 4096
	mc-cli put statj "$BATS_TEST_TMPDIR/src" --type hidden --group g-statj
	run -0 mc_stat_json statj
	echo "$output" | jq_true '.key == "statj" and .size == 4096 and .type == "hidden"'
	echo "$output" | jq_true '(.version | type == "number") and .version >= 1'
	echo "$output" | jq_true '.checksum != null'
	echo "$output" | jq_true '.group == "g-statj" and .hard_pin == false'
	echo "$output" | jq_true '(.replicas | length) == 1 and .replicas[0].state == "complete"'
	echo "$output" | jq_true '.replicas[0].tier == "dram"'
}

@test "store: put --hard-pin is recorded in stat" {
	echo pinned | mc-cli put pinned-key --hard-pin
	mc_stat_json pinned-key | jq_true '.hard_pin == true'
}

@test "store: put --json prints key, version and replicas" {
	run -0 mc-cli --json put putj - <<<"payload"
	echo "$output" | jq_true '.key == "putj" and (.version | type == "number")'
	# replicas: the count or the list (the client API reports a count)
	echo "$output" | jq_true '(.replicas | type) as $t | $t == "array" or $t == "number"'
}

@test "store: stat without KEY prints the cluster stats (--json parses)" {
	echo x | mc-cli put stats-probe
	run -0 mc-cli --json stat
	echo "$output" | jq_true '.objects >= 1 and .peers == 3'
	echo "$output" | jq_true '[.tenants[] | select(.tenant == "default")] | length == 1'
}

@test "store: 3 replicas land on 3 distinct peers" {
	local src="$BATS_TEST_TMPDIR/src"
	mc_random_file "$src" 300000
	mc-cli put three "$src" --replicas 3
	run -0 mc_stat_json three
	echo "$output" | jq_true '(.replicas | length) == 3'
	echo "$output" | jq_true '[.replicas[].peer_id] | unique | length == 3'
	echo "$output" | jq_true '[.replicas[].addr] | unique | length == 3'
	# and the addresses are the peers we started
	local a
	for a in $(mc_replica_addrs three); do
		[[ "$a" == "$(mc_addr peer1)" || "$a" == "$(mc_addr peer2)" || "$a" == "$(mc_addr peer3)" ]]
	done
	mc-cli get three | cmp "$src" -
}

@test "store: 2 replicas land on 2 distinct peers" {
	echo two | mc-cli put two-rep --replicas 2
	mc_stat_json two-rep | jq_true '[.replicas[].peer_id] | unique | length == 2'
}

@test "store: put of an existing key fails with exit 1 and keeps the old bytes" {
	echo first | mc-cli put dup
	run -1 mc-cli put dup - <<<"second"
	assert_output --partial exists
	[ "$(mc-cli get dup)" = first ]
}

@test "store: put --upsert of the same size replaces the bytes and bumps the version" {
	printf 'aaaa' | mc-cli put ups
	local v1
	v1="$(mc_version ups)"
	printf 'bbbb' | mc-cli put ups --upsert
	[ "$(mc-cli get ups)" = bbbb ]
	[ "$(mc_version ups)" -gt "$v1" ]
	mc_stat_json ups | jq_true '.size == 4 and (.replicas | length) == 1'
}

@test "store: put --upsert of another size replaces the bytes and bumps the version" {
	printf 'short' | mc-cli put ups2
	local v1
	v1="$(mc_version ups2)"
	local src="$BATS_TEST_TMPDIR/src"
	mc_random_file "$src" 200000
	mc-cli put ups2 "$src" --upsert
	mc-cli get ups2 | cmp "$src" -
	[ "$(mc_version ups2)" -gt "$v1" ]
	mc_stat_json ups2 | jq_true '.size == 200000 and (.replicas | length) == 1'
}

@test "store: put --upsert of a new key creates it" {
	echo fresh | mc-cli put ups-new --upsert
	[ "$(mc-cli get ups-new)" = fresh ]
}

@test "store: rm then get exits 1 with not found" {
	echo doomed | mc-cli put doomed
	mc-cli rm doomed
	run -1 mc-cli get doomed
	assert_output --partial "not found"
	run -1 mc-cli exist doomed
}

@test "store: rm of an absent key exits 1 with not found" {
	run -1 mc-cli rm never-there
	assert_output --partial "not found"
}

@test "store: rm frees the key for a plain put" {
	echo one | mc-cli put reuse
	mc-cli rm reuse
	echo two | mc-cli put reuse
	[ "$(mc-cli get reuse)" = two ]
}

@test "store: rm --prefix removes exactly the keys under the prefix" {
	local k
	for k in rmp/a rmp/b rmp/c/d rmpx/keep other/rmp/keep; do
		echo "$k" | mc-cli put "$k"
	done
	mc-cli rm --prefix rmp/
	run -0 mc-cli ls rmp/
	assert_output ''
	mc-cli exist rmpx/keep
	mc-cli exist other/rmp/keep
}

@test "store: an object stored with --replicas 2 reads back after the other objects' removal" {
	# removal of one key never touches another key's replicas on the same peers
	echo keep | mc-cli put iso/keep --replicas 2
	echo gone | mc-cli put iso/gone --replicas 2
	mc-cli rm iso/gone
	[ "$(mc-cli get iso/keep)" = keep ]
}

# put_y KEY: a plain put of "y" (for wait_until)
put_y() {
	echo y | mc-cli put "$1"
}

@test "store: a put whose writer vanished before put_end is discarded after --put-timeout" {
	# put_start alone, then the writer goes away: replicas stay PROCESSING
	mc-rpc "$MC_MASTER" put_start key=vanish size:=1000 replicas:=1 checksum:=1
	run -1 mc-cli exist vanish
	run -1 mc-cli get vanish
	run -1 mc-cli put vanish - <<<"x"
	advance_clock $((PUT_TIMEOUT_MS + 1))
	wait_until 5 put_y vanish
	[ "$(mc-cli get vanish)" = y ]
}

@test "store: put_revoke discards a started put at once" {
	run -0 mc-rpc "$MC_MASTER" put_start key=revoked size:=10 replicas:=2 checksum:=1
	local v
	v="$(jq -r .version <<<"$output")"
	mc-rpc "$MC_MASTER" put_revoke key=revoked version:="$v"
	run -1 mc-cli exist revoked
	put_y revoked
	[ "$(mc-cli get revoked)" = y ]
}

@test "store: a started put is not readable before put_end" {
	mc-rpc "$MC_MASTER" put_start key=unfinished size:=5 replicas:=1 checksum:=1
	run -1 mc-cli get unfinished
	assert_output --partial "not found"
	run -1 mc-cli exist unfinished
}

@test "store: a 64 MiB object piped through stdin (not seekable) round-trips" {
	local src="$BATS_TEST_TMPDIR/src"
	mc_random_file "$src" $((64 << 20))
	cat "$src" | mc-cli put piped64
	mc-cli get piped64 | cmp "$src" -
	mc-cli rm piped64 --force
}

@test "store: keys with spaces, slashes, dots and UTF-8 round-trip and list" {
	local k
	for k in "with space" "a/b/../c" "ключ-ü-😀" "tab	in" "x=y:z"; do
		printf '%s' "$k" | mc-cli put "$k"
		[ "$(mc-cli get "$k")" = "$k" ]
	done
	run -0 mc-cli ls "with "
	assert_output "with space"
	mc-cli --json ls "ключ" | jq_true '.key == "ключ-ü-😀"'
}

@test "store: a key of MC_KEY_MAX (4096) bytes works and one byte more is refused" {
	local k4096 k4097
	k4096="$(head -c 4096 /dev/zero | tr '\0' k)"
	k4097="${k4096}k"
	echo max | mc-cli put "$k4096"
	[ "$(mc-cli get "$k4096")" = max ]
	run mc-cli put "$k4097" - <<<"over"
	[ "$status" -eq 1 ] || [ "$status" -eq 64 ]
	run mc-cli exist "$k4097"
	[ "$status" -ne 0 ]
}

@test "store: a tenant name over MC_NAME_MAX (128) is refused" {
	local t129
	t129="$(head -c 129 /dev/zero | tr '\0' t)"
	run mc-cli -t "$t129" put long-tenant - <<<"x"
	[ "$status" -eq 1 ] || [ "$status" -eq 64 ]
}

@test "store: --replicas 0 and --replicas 17 (over MC_REPLICAS_MAX) are refused" {
	run mc-cli put rep0 - --replicas 0 <<<"x"
	[ "$status" -eq 1 ] || [ "$status" -eq 64 ]
	run mc-cli put rep17 - --replicas 17 <<<"x"
	[ "$status" -eq 1 ] || [ "$status" -eq 64 ]
	run -1 mc-cli exist rep0
	run -1 mc-cli exist rep17
}

@test "store: 8 concurrent clients putting and getting their own keys all succeed byte-exact" {
	local c
	local -a pids
	for c in 1 2 3 4 5 6 7 8; do
		(
			set -e
			f="$BATS_TEST_TMPDIR/conc.$c"
			for r in 1 2 3 4 5; do
				head -c $((c * 30011 + r)) /dev/urandom >"$f"
				mc-cli put "conc/$c/$r" "$f" --replicas 2
				mc-cli get "conc/$c/$r" | cmp "$f" -
			done
		) &
		pids+=($!)
	done
	for c in "${pids[@]}"; do
		wait "$c"
	done
	run -0 mc-cli ls conc/
	[ "${#lines[@]}" -eq 40 ]
}
