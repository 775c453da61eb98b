#!/usr/bin/env bats
#
# Data-plane grants, and commits that need the bytes.
#
# The master signs one per replica in every put_start
# and get_replica_list answer, for exactly that copy at that peer; the
# peer serves a read or a write only with a grant that covers it, and
# refuses the others with permission, counted by reason
# (mc_peer_grants_refused_total). Keys rotate on SIGHUP; a grant
# outlives one rotation, not two. Time moves by the fake clock. A
# put_end completes only the replicas whose peer confirmed the bytes on
# its own connection (write_ack), waiting up to --write-ack-wait.

load helpers

GRANT_TTL_MS=5000

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_file_dir
	mc_start_master --grant-ttl "${GRANT_TTL_MS}ms" --peer-ttl 1000h --put-timeout 1000h \
		--http 127.0.0.1:0 --write-ack-wait 2s
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

# refuses PEER REASON CMD...: CMD fails with permission for REASON, and
# PEER counts it.
refuses() {
	local peer="$1" reason="$2" n
	shift 2
	n="$(refused "$peer" "$reason")"
	run -1 "$@"
	assert_output --partial "permission denied"
	assert_output --partial "($reason)"
	refused_one_more "$peer" "$reason" "$n"
}

# metric_above DAEMON SERIES N: the series is above N now (read anew on each call).
metric_above() {
	[ "$(mc_metric "$1" "$2")" -gt "$3" ]
}

# objects PEER: how many copies PEER holds.
objects() {
	mc-rpc "$(mc_addr "$1")" peer_stats | jq '[.tiers[].objects] | add'
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

@test "grants: a write without a grant, or with a forged one, is refused and stores nothing" {
	local n f="$BATS_TEST_TMPDIR/f" bad
	echo abc >"$f"
	start forged "$f"
	n="$(objects p1)"
	refuses p1 missing mc-rpc --bulk "$f" "$(mc_addr p1)" write tenant=default key=forged \
		version:="$VERSION"
	# the same grant with its last byte changed
	bad="$(base64 -d <<<"$G1" | head -c 44 | cat - <(printf 'x') | base64 -w0)"
	refuses p1 forged put_on p1 "$bad" forged "$VERSION" "$f"
	[ "$(objects p1)" -eq "$n" ]
	# a drop on the data port is refused too: drops come from the master
	run -1 mc-rpc "$(mc_addr p1)" drop tenant=default key=forged
	assert_output --partial "permission denied"
}

@test "grants: another copy's grant (key, version or length) or another peer's is refused" {
	local n f="$BATS_TEST_TMPDIR/f" g="$BATS_TEST_TMPDIR/g"
	echo abc >"$f"
	echo abcd >"$g"
	start copy "$f"
	refuses p1 forged put_on p1 "$G1" other-key "$VERSION" "$f"
	refuses p1 forged put_on p1 "$G1" copy "$VERSION" "$g"
	# p2's grant shown to p1
	refuses p1 forged put_on p1 "$G2" copy "$VERSION" "$f"
	# the right one is taken
	n="$(refused p1 forged)"
	put_on p1 "$G1" copy "$VERSION" "$f"
	[ "$(refused p1 forged)" -eq "$n" ]
	# but does not cover the next version
	refuses p1 forged put_on p1 "$G1" copy $((VERSION + 1)) "$f"
}

@test "grants: a read grant does not write, and a read needs its grant" {
	local out f="$BATS_TEST_TMPDIR/f" rg v got="$BATS_TEST_TMPDIR/got"
	echo abc >"$f"
	mc-cli put --replicas 2 rd <"$f"
	out="$(mc-rpc "$MC_MASTER" get_replica_list key=rd)"
	rg="$(jq -r --arg a "$(mc_addr p1)" '.replicas[] | select(.addr == $a) | .grant' <<<"$out")"
	v="$(jq -r .version <<<"$out")"
	refuses p1 forged put_on p1 "$rg" rd "$v" "$f"
	refuses p1 missing mc-rpc "$(mc_addr p1)" read tenant=default key=rd
	# without a grant, a stored key and an absent one get the same answer
	refuses p1 missing mc-rpc "$(mc_addr p1)" read tenant=default key=never-stored
	# another tenant guessing the key gets nothing with the default tenant's grant
	refuses p1 forged mc-rpc "$(mc_addr p1)" read tenant=other key=rd version:="$v" size:=4 \
		grant:=b64:"$rg"
	refuses p1 forged mc-rpc "$(mc_addr p1)" read tenant=default key=rd version:="$v" size:=5 \
		grant:=b64:"$rg"
	run -1 mc-rpc "$(mc_addr p1)" read tenant=default key=rd grant:=b64:"$rg"
	assert_output --partial "names its version and size"
	mc-rpc -o "$got" "$(mc_addr p1)" read tenant=default key=rd version:="$v" size:=4 \
		grant:=b64:"$rg" >/dev/null
	cmp "$f" "$got"
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
	# past the ttl rounded up to its epoch (an eighth of it) and the skew
	advance_clock $((GRANT_TTL_MS / 8 + 1000))
	refuses p2 expired put_on p2 "$G2" late "$VERSION" "$f"
}

@test "grants: readers of a copy within an epoch get one grant, signed once" {
	local s0 c0 out1 out2 out3
	echo abc | mc-cli put --replicas 2 shared
	s0="$(mc_metric master 'mc_grants_total{outcome="signed"}')"
	c0="$(mc_metric master 'mc_grants_total{outcome="cached"}')"
	out1="$(mc-rpc "$MC_MASTER" get_replica_list key=shared | jq -c '[.replicas[].grant]')"
	out2="$(mc-rpc "$MC_MASTER" get_replica_list key=shared | jq -c '[.replicas[].grant]')"
	[ "$out1" = "$out2" ]
	[ "$(mc_metric master 'mc_grants_total{outcome="cached"}')" -ge $((c0 + 2)) ]
	# the next epoch signs anew, with a later expiry
	advance_clock $((GRANT_TTL_MS / 8))
	out3="$(mc-rpc "$MC_MASTER" get_replica_list key=shared | jq -c '[.replicas[].grant]')"
	[ "$out3" != "$out1" ]
	[ "$(mc_metric master 'mc_grants_total{outcome="signed"}')" -ge $((s0 + 4)) ]
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
	refuses p1 unknown_key put_on p1 "$g_old" rot1 "$v_old" "$f"
}

@test "commit: a put_end for bytes nobody wrote commits nothing and erases the object" {
	local n f="$BATS_TEST_TMPDIR/f"
	echo abc >"$f"
	start phantom "$f"
	n="$(mc_metric master mc_replicas_unconfirmed_total)"
	run -69 mc-rpc "$MC_MASTER" put_end key=phantom version:="$VERSION"
	assert_output --partial "no peer confirmed the bytes"
	[ "$(mc_metric master mc_replicas_unconfirmed_total)" -eq $((n + 2)) ]
	run -1 mc-rpc "$MC_MASTER" get_replica_list key=phantom
	assert_output --partial not_found
}

@test "commit: only the replica whose peer confirmed its bytes becomes COMPLETE" {
	local f="$BATS_TEST_TMPDIR/f" got="$BATS_TEST_TMPDIR/got"
	echo abc >"$f"
	start half "$f"
	put_on p1 "$G1" half "$VERSION" "$f"
	mc-rpc "$MC_MASTER" put_end key=half version:="$VERSION"
	run -0 mc-rpc "$MC_MASTER" get_replica_list key=half
	jq_true --arg a "$(mc_addr p1)" '(.replicas | length) == 1 and .replicas[0].addr == $a' \
		<<<"$output"
	mc-rpc -o "$got" "$(mc_addr p1)" read tenant=default key=half version:="$VERSION" size:=4 \
		grant:=b64:"$(jq -r '.replicas[0].grant' <<<"$output")" >/dev/null
	cmp "$f" "$got"
}

@test "commit: a put_end that came before the confirmation waits for it" {
	local n f="$BATS_TEST_TMPDIR/f" out="$BATS_TEST_TMPDIR/end"
	echo abc >"$f"
	start late-ack "$f"
	n="$(mc_metric master mc_put_end_waits_total)"
	mc-rpc "$MC_MASTER" put_end key=late-ack version:="$VERSION" >"$out" 2>&1 &
	local ender=$!
	wait_until 10 metric_above master mc_put_end_waits_total "$n"
	put_on p1 "$G1" late-ack "$VERSION" "$f"
	put_on p2 "$G2" late-ack "$VERSION" "$f"
	wait "$ender"
	run -0 mc-rpc "$MC_MASTER" get_replica_list key=late-ack
	jq_true '(.replicas | length) == 2' <<<"$output"
}

@test "commit: a write_ack from a connection that is not that peer's is refused" {
	local f="$BATS_TEST_TMPDIR/f" id
	echo abc >"$f"
	start forged-ack "$f"
	id="$(mc-rpc "$MC_MASTER" peers | jq -r --arg a "$(mc_addr p1)" '.peers[] | select(.addr == $a) | .peer_id')"
	run -1 mc-rpc "$MC_MASTER" write_ack peer_id:="$id" tenant=default key=forged-ack \
		version:="$VERSION" size:=4
	assert_output --partial "permission denied"
	run -69 mc-rpc "$MC_MASTER" put_end key=forged-ack version:="$VERSION"
	assert_output --partial "no peer confirmed"
}

@test "grants: a write grant replayed after its version committed is refused, and the copy reads as written" {
	local f="$BATS_TEST_TMPDIR/f" zeros="$BATS_TEST_TMPDIR/zeros" got="$BATS_TEST_TMPDIR/got" n
	echo abc >"$f"
	head -c 4 /dev/zero >"$zeros"
	n="$(mc_metric p1 mc_peer_commit_notices_total)"
	start spent "$f"
	put_on p1 "$G1" spent "$VERSION" "$f"
	put_on p2 "$G2" spent "$VERSION" "$f"
	mc-rpc "$MC_MASTER" put_end key=spent version:="$VERSION"
	wait_until 10 mc_metric_at_least p1 mc_peer_commit_notices_total $((${n:-0} + 1))
	# the same grant, the same version, other bytes: an overwrite in place if it were let in
	run -1 put_on p1 "$G1" spent "$VERSION" "$zeros"
	assert_output --partial "is committed here: its write grant is spent"
	run -0 mc-rpc "$MC_MASTER" get_replica_list key=spent
	mc-rpc -o "$got" "$(mc_addr p1)" read tenant=default key=spent version:="$VERSION" size:=4 \
		grant:=b64:"$(jq -r --arg a "$(mc_addr p1)" '.replicas[] | select(.addr == $a) | .grant' \
			<<<"$output")" >/dev/null
	cmp "$f" "$got"
}
