#!/usr/bin/env bats
#
# Data-plane grants: the master signs one per replica in every put_start
# and get_replica_list answer, for exactly that copy at that peer; the
# peer checks each read and write against it and counts, by reason,
# those it does not cover (mc_peer_grants_refused_total). Keys rotate on
# SIGHUP; a grant outlives one rotation, not two. Time moves by the fake
# clock.

load helpers

GRANT_TTL_MS=5000

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_file_dir
	mc_start_master --grant-ttl "${GRANT_TTL_MS}ms" --peer-ttl 1000h --put-timeout 1000h
	mc_start_peer p1 --http 127.0.0.1:0 --grant-skew 1s
	mc_start_peer p2 --http 127.0.0.1:0 --grant-skew 1s
}

teardown_file() {
	mc_stop_everything
}

# refused PEER REASON: how many requests PEER counted under REASON.
refused() {
	local v
	v="$(mc_metric "$1" "mc_peer_grants_refused_total{reason=\"$2\"}")"
	echo "${v:-0}"
}

# refused_one_more PEER REASON BEFORE: PEER counted one more under REASON.
refused_one_more() {
	[ "$(refused "$1" "$2")" -eq $(($3 + 1)) ]
}

# start KEY FILE: a put_start of FILE's size on both peers; sets VERSION
# and G1 and G2, the grants for p1 and p2.
start() {
	local out
	out="$(mc-rpc "$MC_MASTER" put_start key="$1" size:="$(stat -c %s "$2")" replicas:=2 \
		checksum:=0)" || return 1
	VERSION="$(jq -r .version <<<"$out")"
	G1="$(jq -r --arg a "$(mc_addr p1)" '.replicas[] | select(.addr == $a) | .grant' <<<"$out")"
	G2="$(jq -r --arg a "$(mc_addr p2)" '.replicas[] | select(.addr == $a) | .grant' <<<"$out")"
	[ -n "$G1" ] && [ -n "$G2" ]
}

# put_on PEER GRANT KEY VERSION FILE [FIELDS...]: a raw write to PEER.
put_on() {
	local peer="$1" g="$2" key="$3" v="$4" f="$5"
	shift 5
	mc-rpc --bulk "$f" "$(mc_addr "$peer")" write tenant=default key="$key" version:="$v" \
		grant:=b64:"$g" "$@"
}

@test "grants: a put and a get through the client carry grants every peer accepts" {
	local before1 before2 got="$BATS_TEST_TMPDIR/got"
	before1="$(refused p1 missing)$(refused p1 forged)$(refused p1 expired)"
	before2="$(refused p2 missing)$(refused p2 forged)$(refused p2 expired)"
	mc_random_file "$BATS_TEST_TMPDIR/src" 100000
	mc-cli put --replicas 2 good <"$BATS_TEST_TMPDIR/src"
	mc-cli get good >"$got"
	cmp "$BATS_TEST_TMPDIR/src" "$got"
	[ "$(refused p1 missing)$(refused p1 forged)$(refused p1 expired)" = "$before1" ]
	[ "$(refused p2 missing)$(refused p2 forged)$(refused p2 expired)" = "$before2" ]
}

@test "grants: every replica entry carries a grant of 45 bytes" {
	echo abc >"$BATS_TEST_TMPDIR/f"
	mc-cli put --replicas 2 listed <"$BATS_TEST_TMPDIR/f"
	run -0 mc-rpc "$MC_MASTER" get_replica_list key=listed
	jq_true '(.replicas | length) == 2' <<<"$output"
	for g in $(jq -r '.replicas[].grant' <<<"$output"); do
		[ "$(base64 -d <<<"$g" | wc -c)" -eq 45 ]
	done
}

@test "grants: a write without a grant, or with a forged one, is counted" {
	local n f="$BATS_TEST_TMPDIR/f"
	echo abc >"$f"
	start forged "$f"
	n="$(refused p1 missing)"
	mc-rpc --bulk "$f" "$(mc_addr p1)" write tenant=default key=forged version:="$VERSION"
	refused_one_more p1 missing "$n"
	# the same grant with its last byte changed
	n="$(refused p1 forged)"
	local bad
	bad="$(base64 -d <<<"$G1" | head -c 44 | cat - <(printf 'x') | base64 -w0)"
	put_on p1 "$bad" forged "$VERSION" "$f"
	refused_one_more p1 forged "$n"
}

@test "grants: another copy's grant (key, version or length) or another peer's is counted" {
	local n f="$BATS_TEST_TMPDIR/f" g="$BATS_TEST_TMPDIR/g"
	echo abc >"$f"
	echo abcd >"$g"
	start copy "$f"
	n="$(refused p1 forged)"
	put_on p1 "$G1" other-key "$VERSION" "$f"
	refused_one_more p1 forged "$n"
	n="$(refused p1 forged)"
	put_on p1 "$G1" copy "$VERSION" "$g"
	refused_one_more p1 forged "$n"
	# p2's grant shown to p1
	n="$(refused p1 forged)"
	put_on p1 "$G2" copy "$VERSION" "$f"
	refused_one_more p1 forged "$n"
	# the right one is not counted
	n="$(refused p1 forged)"
	put_on p1 "$G1" copy "$VERSION" "$f"
	[ "$(refused p1 forged)" -eq "$n" ]
	# nor does it cover the next version
	put_on p1 "$G1" copy $((VERSION + 1)) "$f"
	refused_one_more p1 forged "$n"
}

@test "grants: a read grant does not write, and a read is checked too" {
	local n out f="$BATS_TEST_TMPDIR/f" rg
	echo abc >"$f"
	mc-cli put --replicas 2 rd <"$f"
	out="$(mc-rpc "$MC_MASTER" get_replica_list key=rd)"
	rg="$(jq -r --arg a "$(mc_addr p1)" '.replicas[] | select(.addr == $a) | .grant' <<<"$out")"
	n="$(refused p1 forged)"
	put_on p1 "$rg" rd "$(jq -r .version <<<"$out")" "$f"
	refused_one_more p1 forged "$n"
	n="$(refused p1 missing)"
	mc-rpc "$(mc_addr p1)" read tenant=default key=rd >/dev/null
	refused_one_more p1 missing "$n"
	n="$(refused p1 forged)"
	mc-rpc "$(mc_addr p1)" read tenant=default key=rd grant:=b64:"$rg" >/dev/null
	[ "$(refused p1 forged)" -eq "$n" ]
}

@test "grants: a grant past its ttl and the peer's skew is expired" {
	local n f="$BATS_TEST_TMPDIR/f"
	echo abc >"$f"
	start late "$f"
	advance_clock $((GRANT_TTL_MS + 500))
	# within the skew: still good
	n="$(refused p1 expired)"
	put_on p1 "$G1" late "$VERSION" "$f"
	[ "$(refused p1 expired)" -eq "$n" ]
	advance_clock 1000
	n="$(refused p2 expired)"
	put_on p2 "$G2" late "$VERSION" "$f"
	refused_one_more p2 expired "$n"
}

@test "grants: after one SIGHUP an old grant is good; after two it is refused" {
	local n f="$BATS_TEST_TMPDIR/f"
	echo abc >"$f"
	start rot1 "$f"
	local g_old="$G1" v_old="$VERSION"
	kill -HUP "$(mc_pid master)"
	wait_until 10 grep -q 'took grant key generation 2' "$MC_DIR/p1.log"
	start rot2 "$f"
	n="$(refused p1 unknown_key)$(refused p1 forged)"
	put_on p1 "$g_old" rot1 "$v_old" "$f"
	put_on p1 "$G1" rot2 "$VERSION" "$f"
	[ "$(refused p1 unknown_key)$(refused p1 forged)" = "$n" ]
	kill -HUP "$(mc_pid master)"
	wait_until 10 grep -q 'took grant key generation 3' "$MC_DIR/p1.log"
	n="$(refused p1 unknown_key)"
	put_on p1 "$g_old" rot1 "$v_old" "$f"
	refused_one_more p1 unknown_key "$n"
}
