#!/usr/bin/env bats
#
# The candidate view, the first stage of the eviction pipeline (hierarchical eviction seed):
# the master's `candidates` call through `mc-cli candidates`. One record
# per COMPLETE copy of an object's current version on a live peer, hard
# pins left out, soft pins and leases shown as attributes, and the
# --peer, --tier and --tenant filters.
#
# Most tests share one master, two peers and this set of objects:
#   default/hard   hard-pinned           (never a candidate)
#   default/two    2 replicas, type kv   (two records)
#   default/soft   soft pin enable:1h    (soft_pin_deadline set)
#   default/grp    group g1, type kv     (read by the lease test)
#   t2/other       tenant t2, hidden
# The shared clock is never moved; tests that need a clock of their own
# or kill a peer run their own cluster (own_cluster).

load helpers

MASTER_FLAGS=(--peer-ttl 1000h --put-timeout 1000h --lease-ttl 10s)
LEASE_MS=10000
HOUR_MS=3600000

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli
	mc_file_dir
	mc_start_master "${MASTER_FLAGS[@]}"
	mc_start_peers 2
	echo hard | mc-cli put hard --hard-pin --type kv
	echo twice | mc-cli put two --replicas 2 --type kv
	echo pinned | mc-cli put soft --soft-pin enable:1h --type hidden
	echo member | mc-cli put grp --group g1 --type kv
	echo other | mc-cli -t t2 put other --type hidden
}

teardown() {
	if [ "${CAND_OWN:-0}" = 1 ]; then
		mc_stop_all
	fi
}

teardown_file() {
	mc_stop_everything
}

# own_cluster N [MASTER ARGS...]: a master and N peers for this test alone.
own_cluster() {
	local n="$1"
	shift
	CAND_OWN=1
	mc_test_dir
	mc_start_master "$@"
	if [ "$n" -gt 0 ]; then
		mc_start_peers "$n"
	fi
}

# cand ARGS...: the view as JSON lines (header first).
cand() {
	mc-cli --json candidates "$@"
}

# records ARGS...: only the candidate records, one compact object a line.
records() {
	local out
	out="$(cand "$@")" || return 1
	jq -c 'select(has("key"))' <<<"$out"
}

# record_count ARGS...: how many records the view holds.
record_count() {
	local out
	out="$(records "$@")" || return 1
	[ -z "$out" ] && echo 0 || wc -l <<<"$out"
}

# header_count ARGS...: the count the header declares.
header_count() {
	local out
	out="$(cand "$@")" || return 1
	head -n 1 <<<"$out" | jq -r 'select(.format == "mc-candidates") | .count'
}

# key_records KEY: the records of KEY in the unfiltered view.
key_records() {
	records | jq -c --arg k "$1" 'select(.key == $k)'
}

# msgpack_bytes FILE: the file's bytes as decimal numbers, one a line.
msgpack_bytes() {
	od -An -tu1 -v "$1" | tr -s ' ' '\n' | grep .
}

# mp_header_count FILE: the header's count in a msgpack view. The fixstr
# "count" (0xa5 c o u n t) is only in the header ("access_count" carries
# another prefix); the counts here are small enough for a fixint.
mp_header_count() {
	msgpack_bytes "$1" | awk '{ b[NR] = $1 }
		END {
			for (i = 1; i + 6 <= NR; i++)
				if (b[i] == 165 && b[i+1] == 99 && b[i+2] == 111 &&
				    b[i+3] == 117 && b[i+4] == 110 && b[i+5] == 116) {
					print b[i+6]
					exit
				}
		}'
}

# mp_record_count FILE: records in a msgpack view, counted by their "key"
# field (0xa3 k e y); no key or name in these tests contains "key".
mp_record_count() {
	msgpack_bytes "$1" | awk '{ b[NR] = $1 }
		END {
			n = 0
			for (i = 1; i + 3 <= NR; i++)
				if (b[i] == 163 && b[i+1] == 107 && b[i+2] == 101 && b[i+3] == 121)
					n++
			print n
		}'
}

@test "candidates: one record per complete copy, hard-pinned objects left out" {
	run record_count
	assert_success
	assert_output 5
	run header_count
	assert_output 5
	run key_records hard
	assert_success
	assert_output ""
}

@test "candidates: a 2-replica object gives one record on each of its peers" {
	run key_records two
	assert_success
	assert_equal "$(wc -l <<<"$output")" 2
	local peers
	peers="$(jq -r .peer <<<"$output" | sort | tr '\n' ' ')"
	assert_equal "$peers" "$(printf '%s\n' "$(mc_addr peer1)" "$(mc_addr peer2)" |
		sort | tr '\n' ' ')"
}

@test "candidates: soft_pin_deadline is set only for an active soft pin" {
	local now
	now="$(clock_now)"
	run key_records soft
	assert_success
	jq_true --argjson d $((now + HOUR_MS)) '.soft_pin_deadline == $d' <<<"$output"
	records | jq -c 'select(.key != "soft")' | jq_true '.soft_pin_deadline == 0'
}

@test "candidates: lease_expiry, last_access and access_count follow a get" {
	local now
	now="$(clock_now)"
	key_records grp | jq_true '.lease_expiry == 0 and .access_count == 0'
	mc_hold_lease grp
	run key_records grp
	assert_success
	jq_true --argjson n "$now" --argjson l $((now + LEASE_MS)) \
		'.lease_expiry == $l and .last_access == $n and .access_count == 1' <<<"$output"
	# an object that was never read holds no lease
	key_records two | jq_true '.lease_expiry == 0'
}

# view_seq: the view's seq, the master's access counter (absent: 0).
view_seq() {
	local out
	out="$(cand)" || return 1
	head -n 1 <<<"$out" | jq -r '.seq // 0'
}

@test "candidates: a read raises the object's access_seq above every other object's" {
	local seq0
	seq0="$(view_seq)"
	[ "$seq0" -gt 0 ]
	# no record is numbered past the view, nor accessed before it was created
	records | jq_true --argjson s "$seq0" \
		'.access_seq <= $s and .created_seq >= 1 and .created_seq <= .access_seq'
	local created
	created="$(key_records two | jq -r .created_seq | sort -u)"
	mc_hold_lease two
	# one read is one number: the counter moved by exactly one
	assert_equal "$(view_seq)" $((seq0 + 1))
	key_records two | jq_true --argjson s $((seq0 + 1)) --argjson c "$created" \
		'.access_seq == $s and .created_seq == $c'
	records | jq -c 'select(.key != "two")' | jq_true --argjson s $((seq0 + 1)) '.access_seq < $s'
	# the frozen clock stamps every read in the same millisecond; only the sequence tells
	records | jq_true --argjson n "$(clock_now)" '.created == $n'
}

@test "candidates: the header's seq is the master's counter: puts and batched reads number in order" {
	mc_require_bins mc-fill
	own_cluster 1 "${MASTER_FLAGS[@]}"
	run view_seq
	assert_output 0
	mc-fill --prefix s/ -n 3 --batch 3 put
	# a write that creates an object is its first access
	records | jq_true '.created_seq >= 1 and .access_seq == .created_seq'
	assert_equal "$(records | jq -s -c 'map(.created_seq) | sort')" "[1,2,3]"
	assert_equal "$(view_seq)" 3
	# one batched call of three keys: three numbers, one per key, in key order
	mc-fill --prefix s/ -n 3 --batch 3 check
	assert_equal "$(view_seq)" 6
	assert_equal "$(records | jq -s -c 'sort_by(.key) | map(.access_seq)')" "[4,5,6]"
	# an upsert's commit is a use: a new access, the creation stays
	echo again | mc-cli put s/000000 --upsert
	key_records s/000000 | jq_true '.access_seq == 7 and .created_seq <= 3'
	assert_equal "$(view_seq)" 7
	# a failed read is no access
	run mc-cli get nothing-here
	assert_failure
	assert_equal "$(view_seq)" 7
}

@test "candidates: mc-evict-plan with lru evicts the least recently read first when every ms stamp ties" {
	mc_require_bins mc-evict-plan
	own_cluster 1 "${MASTER_FLAGS[@]}"
	local k
	for k in a b c d e f; do
		echo "$k" | mc-cli put "k-$k"
	done
	# read them in the reverse of the view's order: were the tie on the
	# (frozen) milliseconds broken by index, lru would give the view's order
	local order
	order="$(records | jq -r .key)"
	for k in $(tac <<<"$order"); do
		mc_hold_lease "$k"
	done
	records | jq_true --argjson n "$(clock_now)" '.last_access == $n'
	local policy="$BATS_TEST_TMPDIR/lru.policy"
	echo "evict lru" >"$policy"
	# the leases just taken would keep every copy: plan past them
	advance_clock $((LEASE_MS + 1))
	mc-cli candidates >"$BATS_TEST_TMPDIR/view.mcc"
	run mc-evict-plan -p "$policy" --target 100% --json -i "$BATS_TEST_TMPDIR/view.mcc"
	assert_success
	local got
	got="$(jq -r 'select(.t == "stage") | .victims[].key' <<<"$output")"
	assert_equal "$got" "$(tac <<<"$order")"
	# the least recently read goes first: the one read first
	assert_equal "$(head -n 1 <<<"$got")" "$(tail -n 1 <<<"$order")"
}

@test "candidates: records carry tenant, type, group, tier, domain, bytes and version" {
	run key_records grp
	assert_success
	jq_true '.tenant == "default" and .type == "kv" and .group == "g1" and
		.tier == "dram" and .domain == "default" and .bytes == 7 and
		.version >= 1 and (has("cost") | not)' <<<"$output"
	# no group: the field is absent, not empty
	key_records other | jq_true '.tenant == "t2" and .type == "hidden" and
		(has("group") | not) and .bytes == 6'
	# the version is the object's current one
	assert_equal "$(key_records two | jq -r .version | sort -u)" "$(mc_version two)"
}

@test "candidates: --tenant keeps only that tenant's copies" {
	run records --tenant t2
	assert_success
	assert_equal "$(wc -l <<<"$output")" 1
	jq_true '.key == "other" and .tenant == "t2"' <<<"$output"
	run record_count --tenant default
	assert_output 4
}

@test "candidates: an unknown tenant gives an empty view, header only" {
	run cand --tenant nobody
	assert_success
	assert_equal "$(wc -l <<<"$output")" 1
	jq_true '.format == "mc-candidates" and .version == 1 and .count == 0' <<<"$output"
}

@test "candidates: --peer by id or by address keeps only that peer's copies" {
	local addr id
	addr="$(mc_addr peer1)"
	id="$(mc_peer_id "$addr")"
	run records --peer "$id"
	assert_success
	[ -n "$output" ]
	jq_true --arg a "$addr" '.peer == $a' <<<"$output"
	local by_id="$output"
	run records --peer "$addr"
	assert_success
	assert_equal "$output" "$by_id"
	# together the two peers hold every copy
	local n1 n2
	n1="$(record_count --peer "$id")"
	n2="$(record_count --peer "$(mc_peer_id "$(mc_addr peer2)")")"
	assert_equal $((n1 + n2)) 5
}

@test "candidates: --peer naming no peer fails, naming an unknown id is empty" {
	run mc-cli --json candidates --peer unix:/nonexistent.sock
	assert_failure 1
	assert_output --partial "no peer 'unix:/nonexistent.sock'"
	run record_count --peer 999
	assert_output 0
}

@test "candidates: --tier keeps only copies in that tier" {
	run record_count --tier dram
	assert_output 5
	run records --tier dram
	jq_true '.tier == "dram"' <<<"$output"
	run record_count --tier ssd
	assert_output 0
}

@test "candidates: an unknown tier is a usage error" {
	run mc-cli --json candidates --tier floppy
	assert_failure 64
	assert_output "mc-cli: cannot list candidates: unknown tier 'floppy'"
}

@test "candidates: the filters combine" {
	run record_count --tenant default --tier dram --peer "$(mc_addr peer2)"
	assert_success
	local want
	want="$(records --peer "$(mc_addr peer2)" | jq -s '[.[] | select(.tenant == "default")] | length')"
	assert_output "$want"
}

@test "candidates: the msgpack stream declares and holds as many records as --json" {
	local f="$BATS_TEST_TMPDIR/view.mcc"
	mc-cli candidates >"$f"
	# it starts with the header map {format: "mc-candidates", ...}
	assert_equal "$(head -c 22 "$f" | LC_ALL=C tr -cd '[:print:]')" "formatmc-candidates"
	assert_equal "$(mp_header_count "$f")" 5
	assert_equal "$(mp_record_count "$f")" 5
	assert_equal "$(header_count)" 5
	# a filter applies to the msgpack form the same way
	mc-cli candidates --tenant t2 >"$f"
	assert_equal "$(mp_header_count "$f")" "$(header_count --tenant t2)"
	assert_equal "$(mp_record_count "$f")" 1
}

@test "candidates: the stream is the same bytes on every call while nothing changes" {
	mc-cli candidates >"$BATS_TEST_TMPDIR/a"
	mc-cli candidates >"$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
}

@test "candidates: the view's created time is the master's clock" {
	run cand
	assert_success
	head -n 1 <<<"$output" | jq_true --argjson n "$(clock_now)" '.created == $n'
}

@test "candidates: an empty cluster gives a header only" {
	own_cluster 0
	run cand
	assert_success
	assert_equal "$(wc -l <<<"$output")" 1
	jq_true '.format == "mc-candidates" and .count == 0' <<<"$output"
	# and so does a cluster with peers but no objects
	mc_start_peer p1
	run cand
	assert_success
	assert_equal "$(wc -l <<<"$output")" 1
	jq_true '.count == 0' <<<"$output"
	# the msgpack form of an empty view is the header alone
	mc-cli candidates >"$BATS_TEST_TMPDIR/empty.mcc"
	assert_equal "$(mp_header_count "$BATS_TEST_TMPDIR/empty.mcc")" 0
	assert_equal "$(mp_record_count "$BATS_TEST_TMPDIR/empty.mcc")" 0
}

# only_on ADDR KEY: KEY has exactly one record and it is on ADDR.
only_on() {
	local out
	out="$(key_records "$2")" || return 1
	[ "$(wc -l <<<"$out")" -eq 1 ] && jq_true --arg a "$1" '.peer == $a' <<<"$out"
}

@test "candidates: copies on a peer that is no longer live are left out" {
	own_cluster 2 --peer-ttl 2s --put-timeout 1000h --lease-ttl 10s
	echo twice | mc-cli put both --replicas 2
	run key_records both
	assert_equal "$(wc -l <<<"$output")" 2
	mc_kill9 peer2
	# liveness is on the monotonic clock: peer2 goes silent for real
	wait_until 10 only_on "$(mc_addr peer1)" both
}

@test "candidates: replicas still being written are not candidates" {
	mc_require_bins mc-rpc
	own_cluster 1 "${MASTER_FLAGS[@]}"
	mc-rpc "$MC_MASTER" put_start key=pending size:=4 replicas:=1 checksum:=1 >/dev/null
	run record_count
	assert_output 0
}

@test "candidates: mc-cli refuses to write the msgpack view to a terminal" {
	# script(1) is in bsdutils, which every Debian system has: a missing one fails
	command -v script >/dev/null || {
		echo "# script(1) is not installed (bsdutils)" >&2
		return 1
	}
	run script -qec "mc-cli candidates" /dev/null
	assert_failure
	assert_output --partial "refusing to write a candidate view to a terminal"
}
