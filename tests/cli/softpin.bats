#!/usr/bin/env bats
#
# Fixed-lifecycle soft pins (the soft pin seed) end to end: the write actions of
# put/upsert, Pending commit and revoke, deadlines that reads never touch,
# cleanup through the deadline index, the gauge, and restore. Every
# time-based case moves the fake clock (advance_clock), never sleeps.
#
# Most tests share one master and two peers, each with its own keys. The
# clock of that master is shared too, so a test computes every deadline
# from the clock as it finds it. Tests that count pins (the gauge, the
# index) or kill the master run their own cluster (own_cluster).
#
# slow: about 15 s alone on two cores, up to a minute beside the trace
# replays and under ASan: 36 tests of many short mc-cli and mc-rpc
# calls each, and a storm of 100k gets.

load helpers

# --put-timeout and --peer-ttl far beyond any clock move here: a PROCESSING
# write or a peer must never time out behind a test's back.
MASTER_FLAGS=(--peer-ttl 1000h --put-timeout 1000h --lease-ttl 1s)
MAX_TTL_MS=$((24 * 3600 * 1000))
DEFAULT_TTL_MS=$((30 * 60 * 1000))

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-bench mc-snapshot \
		mc-softpin-check
	mc_file_dir
	mc_start_master "${MASTER_FLAGS[@]}"
	mc_start_peers 2
}

teardown() {
	# only a test's own cluster: the file's cluster serves the next tests
	if [ "${SP_OWN:-0}" = 1 ]; then
		mc_stop_all
	fi
}

teardown_file() {
	mc_stop_everything
}

# own_cluster [MASTER ARGS...]: a master and one peer for this test alone.
own_cluster() {
	SP_OWN=1
	mc_test_dir
	mc_start_master "${MASTER_FLAGS[@]}" "$@"
	mc_start_peer p1
}

# check ARGS...: mc-softpin-check against the master.
check() {
	mc-softpin-check "$MC_MASTER" "$@"
}

# expire_spares KEY: run one cleanup cycle; it must not clear KEY.
expire_spares() {
	local out
	out="$(sp_rpc softpin_expire)" || return 1
	! jq -e --arg k "$1" 'any(.items[]; .key == $k)' <<<"$out" >/dev/null
}

# active_is N: the gauge, both in softpin_stats and on /metrics.
active_is() {
	[ "$(sp_stat active)" = "$1" ] || {
		echo "# softpin_stats.active is $(sp_stat active), want $1" >&2
		return 1
	}
	if [ -n "$(mc_metrics_url master)" ]; then
		[ "$(mc_metric master mc_softpin_active)" = "$1" ] || {
			echo "# mc_softpin_active is $(mc_metric master mc_softpin_active), want $1" >&2
			return 1
		}
	fi
}

# ---- the seed's ten semantics ----

@test "softpin: seed 1: the pin commits when the write first makes the object readable, not at put_start" {
	run -0 sp_start s1 10 1 soft_pin=enable soft_pin_ttl_ms:=60000
	local v
	v="$(jq -r .version <<<"$output")"
	[ "$(sp_state s1)" = pending ]
	[ "$(sp_deadline s1)" = 0 ]
	local now
	now="$(clock_now)"
	sp_rpc put_end key=s1 version:="$v"
	[ "$(sp_state s1)" = active ]
	[ "$(sp_deadline s1)" = $((now + 60000)) ]
}

@test "softpin: seed 2: enable(ttl) counts the deadline from the completion time, not from put_start" {
	run -0 sp_start s2 10 1 soft_pin=enable soft_pin_ttl_ms:=60000
	local v
	v="$(jq -r .version <<<"$output")"
	advance_clock 5000
	local done_at
	done_at="$(clock_now)"
	sp_rpc put_end key=s2 version:="$v"
	[ "$(sp_deadline s2)" = $((done_at + 60000)) ]
	run -0 sp_show s2
	[ "$(jq -r .remaining_ms <<<"$output")" = 60000 ]
}

@test "softpin: seed 3: gets, exists and stats never extend a pin nor reactivate an expired one" {
	sp_put s3 64 --soft-pin enable:10s
	local d
	d="$(sp_deadline s3)"
	[ "$d" = $(($(clock_now) + 10000)) ]
	advance_clock 4000
	mc-cli get s3 >/dev/null
	mc-cli exist s3
	mc-cli stat s3 >/dev/null
	[ "$(sp_deadline s3)" = "$d" ]
	advance_clock 7000
	# past the deadline, a read storm before cleanup must not bring it back
	mc-cli get s3 >/dev/null
	mc-cli get s3 >/dev/null
	mc-cli exist s3
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state s3)" = disabled ]
	advance_clock 2000
	mc-cli get s3 >/dev/null
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state s3)" = disabled ]
	[ "$(sp_deadline s3)" = 0 ]
}

@test "softpin: seed 3: batch reads and group lease refresh never extend nor revive a member's pin" {
	sp_put gm1 8 --group sp-grp --soft-pin enable:10s
	sp_put gm2 8 --group sp-grp --soft-pin enable:20s
	local d2
	d2="$(sp_deadline gm2)"
	advance_clock 5000
	# a get of gm1 grants the read lease to gm2 as well
	mc-cli get gm1 >/dev/null
	check batch gm1 gm2 absent-key
	[ "$(sp_deadline gm2)" = "$d2" ]
	advance_clock 5000
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state gm1)" = disabled ]
	mc-cli get gm2 >/dev/null
	check batch gm1 gm2
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state gm1)" = disabled ]
	[ "$(sp_deadline gm1)" = 0 ]
	[ "$(sp_deadline gm2)" = "$d2" ]
}

@test "softpin: seed 4: at now >= deadline the object is ordinary cache (deadline - 1 ms still pinned)" {
	sp_put s4 8 --soft-pin enable:10s
	advance_clock 9999
	expire_spares s4
	[ "$(sp_state s4)" = active ]
	advance_clock 1
	# the background sweep may beat this call; either way it is cleared
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state s4)" = disabled ]
	[ "$(mc_stat_json s4 | jq -r .soft_pin)" = disabled ]
}

@test "softpin: seed 5: a later explicit enable starts a new lifetime after expiry" {
	sp_put s5 8 --soft-pin enable:10s
	advance_clock 10000
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state s5)" = disabled ]
	advance_clock 3000
	local now
	now="$(clock_now)"
	sp_put s5 8 --upsert --soft-pin enable:20s
	[ "$(sp_state s5)" = active ]
	[ "$(sp_deadline s5)" = $((now + 20000)) ]
}

@test "softpin: seed 6: disable removes the committed pin only when its write becomes readable" {
	sp_put s6 8 --soft-pin enable:1h
	local d
	d="$(sp_deadline s6)"
	run -0 sp_start s6 8 1 upsert:=true soft_pin=disable
	local v
	v="$(jq -r .version <<<"$output")"
	# the old version is still the readable one: its pin holds
	run -0 sp_show s6
	[ "$(jq -r .deadline <<<"$output")" = "$d" ]
	sp_rpc put_end key=s6 version:="$v"
	[ "$(sp_state s6)" = disabled ]
	[ "$(sp_deadline s6)" = 0 ]
}

@test "softpin: seed 7: preserve keeps an unexpired deadline across upsert but not an expired one" {
	sp_put s7a 8 --soft-pin enable:60s
	sp_put s7b 8 --soft-pin enable:10s
	local da
	da="$(sp_deadline s7a)"
	advance_clock 11000
	# upsert with the default action (preserve) and explicitly
	sp_put s7a 8 --upsert
	[ "$(sp_state s7a)" = active ]
	[ "$(sp_deadline s7a)" = "$da" ]
	sp_put s7a 8 --upsert --soft-pin preserve
	[ "$(sp_deadline s7a)" = "$da" ]
	sp_put s7b 8 --upsert --soft-pin preserve
	[ "$(sp_state s7b)" = disabled ]
	[ "$(sp_deadline s7b)" = 0 ]
}

@test "softpin: seed 8: enable with TTL 0 commits ordinary cache, also over an active pin" {
	run -0 sp_start s8 8 1 soft_pin=enable soft_pin_ttl_ms:=0
	sp_rpc put_end key=s8 version:="$(jq -r .version <<<"$output")"
	[ "$(sp_state s8)" = disabled ]
	sp_put s8b 8 --soft-pin enable:1h
	[ "$(sp_state s8b)" = active ]
	sp_put s8b 8 --upsert --soft-pin enable:0s
	[ "$(sp_state s8b)" = disabled ]
	[ "$(sp_deadline s8b)" = 0 ]
}

@test "softpin: seed 9: --allow-evict-soft-pinned is stored and shown in softpin_stats (eviction itself: evict.bats)" {
	[ "$(sp_stat allow_evict)" = false ]
	own_cluster --allow-evict-soft-pinned
	[ "$(sp_stat allow_evict)" = true ]
}

@test "softpin: seed 10: rm and rm --force remove active soft-pinned objects" {
	sp_put s10a 8 --soft-pin enable:1h
	sp_put s10b 8 --soft-pin enable:1h
	mc-cli rm s10a
	mc_key_gone s10a
	# a read lease makes a plain rm refuse; --force removes it pinned or not
	mc-cli get s10b >/dev/null
	mc-cli rm --force s10b
	mc_key_gone s10b
	run -1 sp_show s10a
	assert_output --partial not_found
}

# ---- request rules ----

@test "softpin: preserve and disable with a TTL are rejected as invalid" {
	run -1 sp_start r1 8 1 soft_pin=preserve soft_pin_ttl_ms:=1000
	assert_output --partial invalid
	assert_output --partial soft_pin_ttl_ms
	run -1 sp_start r1 8 1 soft_pin=disable soft_pin_ttl_ms:=1000
	assert_output --partial invalid
	# a TTL without any action is a preserve with a TTL
	run -1 sp_start r1 8 1 soft_pin_ttl_ms:=1000
	assert_output --partial invalid
	mc_key_gone r1
}

@test "softpin: an unknown soft_pin action is rejected as invalid" {
	run -1 sp_start r2 8 1 soft_pin=forever
	assert_output --partial invalid
	run -1 sp_start r2 8 1 soft_pin=ENABLE
	assert_output --partial invalid
	mc_key_gone r2
}

@test "softpin: a TTL above --max-soft-pin-ttl is rejected; exactly the max is accepted" {
	run -1 sp_start r3 8 1 soft_pin=enable soft_pin_ttl_ms:=$((MAX_TTL_MS + 1))
	assert_output --partial invalid
	mc_key_gone r3
	run -0 sp_start r3 8 1 soft_pin=enable soft_pin_ttl_ms:="$MAX_TTL_MS"
	local now
	now="$(clock_now)"
	sp_rpc put_end key=r3 version:="$(jq -r .version <<<"$output")"
	[ "$(sp_deadline r3)" = $((now + MAX_TTL_MS)) ]
}

@test "softpin: enable without a TTL uses --default-soft-pin-ttl (30m by default)" {
	local now
	now="$(clock_now)"
	sp_put r4 8 --soft-pin enable
	[ "$(sp_deadline r4)" = $((now + DEFAULT_TTL_MS)) ]
	[ "$(sp_stat default_ttl_ms)" = "$DEFAULT_TTL_MS" ]
	[ "$(sp_stat max_ttl_ms)" = "$MAX_TTL_MS" ]
}

@test "softpin: a deadline past the end of time saturates instead of wrapping around" {
	SP_OWN=1
	mc_test_dir
	# 2^64 - 1 - 1000 from the start: an enable of 1h cannot be represented
	echo 18446744073709550615 >"$MC_FAKE_CLOCK"
	mc_start_master "${MASTER_FLAGS[@]}"
	mc_start_peer p1
	run -0 sp_start sat 8 1 soft_pin=enable soft_pin_ttl_ms:=3600000
	sp_rpc put_end key=sat version:="$(jq -r .version <<<"$output")"
	[ "$(sp_state sat)" = active ]
	# past 2^53 the JSON gives the digits as a string, which jq keeps whole
	run -0 sp_show sat
	assert_equal "$(jq -r .deadline <<<"$output")" 18446744073709551615
	assert_output --partial '"remaining_ms":1000'
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state sat)" = active ]
}

@test "softpin: --default-soft-pin-ttl and --max-soft-pin-ttl set the limits" {
	own_cluster --default-soft-pin-ttl 2m --max-soft-pin-ttl 5m
	[ "$(sp_stat default_ttl_ms)" = 120000 ]
	[ "$(sp_stat max_ttl_ms)" = 300000 ]
	local now
	now="$(clock_now)"
	sp_put d1 8 --soft-pin enable
	[ "$(sp_deadline d1)" = $((now + 120000)) ]
	run ! sp_put d2 8 --soft-pin enable:6m
	mc_key_gone d2
}

@test "softpin: start-up refuses a default TTL above the max (exit 64 naming both flags)" {
	run -64 timeout 10 mc-master --listen "unix:$BATS_TEST_TMPDIR/m.sock" \
		--default-soft-pin-ttl 2h --max-soft-pin-ttl 1h
	assert_output --partial -- --default-soft-pin-ttl
	assert_output --partial -- --max-soft-pin-ttl
	run -64 timeout 10 mc-master --listen "unix:$BATS_TEST_TMPDIR/m.sock" \
		--default-soft-pin-ttl 25h
	assert_output --partial -- --default-soft-pin-ttl
}

@test "softpin: mc-cli put rejects a bad --soft-pin value with exit 64 naming --soft-pin" {
	local bad
	for bad in forever preserve:10s disable:1m enable:soon enable:; do
		run -64 sp_put cli-bad 8 --soft-pin "$bad"
		assert_output --partial -- --soft-pin
	done
	mc_key_gone cli-bad
}

# ---- Pending: commit, duplicate ends, revoke, preemption ----

@test "softpin: a put whose replicas are PROCESSING shows pending in stat --json and softpin_show" {
	run -0 sp_start p1 8 2 soft_pin=enable soft_pin_ttl_ms:=45000
	local v
	v="$(jq -r .version <<<"$output")"
	run -0 mc_stat_json p1
	[ "$(jq -r .soft_pin <<<"$output")" = pending ]
	[ "$(jq -r '.soft_pin_deadline // 0' <<<"$output")" = 0 ]
	run -0 sp_show p1
	[ "$(jq -r .state <<<"$output")" = pending ]
	[ "$(jq -r .pending_action <<<"$output")" = enable ]
	[ "$(jq -r .pending_ttl_ms <<<"$output")" = 45000 ]
	advance_clock 2500
	local end_at
	end_at="$(clock_now)"
	sp_rpc put_end key=p1 version:="$v"
	run -0 mc_stat_json p1
	[ "$(jq -r .soft_pin <<<"$output")" = active ]
	[ "$(jq -r .soft_pin_deadline <<<"$output")" = $((end_at + 45000)) ]
}

@test "softpin: a duplicate put_end and the second replica's later completion do not refresh the deadline" {
	run -0 sp_start p2 8 2 soft_pin=enable soft_pin_ttl_ms:=60000
	local v ids
	v="$(jq -r .version <<<"$output")"
	mapfile -t ids < <(jq -r '.replicas[].replica_id' <<<"$output")
	[ "${#ids[@]}" -eq 2 ]
	advance_clock 1000
	local d
	d=$(($(clock_now) + 60000))
	check end p2 "$v" "${ids[0]}"
	[ "$(sp_deadline p2)" = "$d" ]
	advance_clock 1000
	check end p2 "$v" "${ids[1]}"
	[ "$(sp_deadline p2)" = "$d" ]
	advance_clock 1000
	# duplicates may be refused; they must not refresh either way
	check end p2 "$v" "${ids[0]}" || true
	sp_rpc put_end key=p2 version:="$v" || true
	[ "$(sp_state p2)" = active ]
	[ "$(sp_deadline p2)" = "$d" ]
}

@test "softpin: a partial revoke keeps Pending while an eligible replica remains; its end commits" {
	run -0 sp_start p3 8 2 soft_pin=enable soft_pin_ttl_ms:=30000
	local v ids
	v="$(jq -r .version <<<"$output")"
	mapfile -t ids < <(jq -r '.replicas[].replica_id' <<<"$output")
	check revoke p3 "$v" "${ids[0]}"
	[ "$(sp_state p3)" = pending ]
	advance_clock 700
	local now
	now="$(clock_now)"
	check end p3 "$v" "${ids[1]}"
	[ "$(sp_state p3)" = active ]
	[ "$(sp_deadline p3)" = $((now + 30000)) ]
}

@test "softpin: revoking the last eligible replica clears Pending (an upsert falls back, unpinned)" {
	sp_put p4 8 --soft-pin disable
	# another size: placed anew on both peers, and revoked before any byte is written
	run -0 sp_start_bare p4 16 2 upsert:=true soft_pin=enable soft_pin_ttl_ms:=30000
	local v ids
	v="$(jq -r .version <<<"$output")"
	mapfile -t ids < <(jq -r '.replicas[].replica_id' <<<"$output")
	[ "${#ids[@]}" -eq 2 ]
	check revoke p4 "$v" "${ids[0]}"
	run -0 sp_show p4
	[ "$(jq -r .pending_action <<<"$output")" = enable ]
	check revoke p4 "$v" "${ids[1]}"
	run -0 sp_show p4
	[ "$(jq -r .state <<<"$output")" = disabled ]
	[ "$(jq -r '.pending_action // "none"' <<<"$output")" = none ]
	# the old version is the readable one again, bytes included: the
	# revoked version's drop must not free the old copy on a shared peer
	mc-cli exist p4
	[ "$(mc_version p4)" -lt "$v" ]
	run -0 mc-cli get p4 -o "$BATS_TEST_TMPDIR/p4"
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/p4")" -eq 8 ]
	# nothing left of the write can commit it
	check end p4 "$v" "${ids[1]}" || true
	[ "$(sp_state p4)" = disabled ]
}

@test "softpin: an upsert revoked before it became readable leaves the committed pin untouched" {
	sp_put p6 8 --soft-pin enable:1h
	local d
	d="$(sp_deadline p6)"
	run -0 sp_start p6 16 1 upsert:=true soft_pin=disable
	local v
	v="$(jq -r .version <<<"$output")"
	advance_clock 1000
	sp_rpc put_revoke key=p6 version:="$v"
	[ "$(sp_state p6)" = active ]
	[ "$(sp_deadline p6)" = "$d" ]
	run -0 sp_start p6 8 1 upsert:=true soft_pin=enable soft_pin_ttl_ms:=5000
	sp_rpc put_revoke key=p6 version:="$(jq -r .version <<<"$output")"
	[ "$(sp_deadline p6)" = "$d" ]
}

@test "softpin: delete clears Pending: a new put of the key starts unpinned" {
	run -0 sp_start p5 8 1 soft_pin=enable soft_pin_ttl_ms:=30000
	local v
	v="$(jq -r .version <<<"$output")"
	mc-cli rm --force p5
	sp_rpc put_end key=p5 version:="$v" || true
	sp_put p5 8
	[ "$(sp_state p5)" = disabled ]
}

# start_second: the preserving upsert of `pre`; its result in s2.
start_second() {
	sp_start pre 8 1 upsert:=true soft_pin=preserve >"$BATS_TEST_TMPDIR/s2"
}

@test "softpin: a newer upsert that takes over the write clears the older Pending" {
	own_cluster --put-timeout 10s
	sp_put pre 8 --soft-pin disable
	run -0 sp_start pre 8 1 upsert:=true soft_pin=enable soft_pin_ttl_ms:=60000
	local v1
	v1="$(jq -r .version <<<"$output")"
	# Preemption while the first write is live, or (if the master answers
	# busy) once --put-timeout discarded it: the same rule either way.
	if ! start_second; then
		advance_clock 11000
		wait_until 5 start_second
	fi
	local v2
	v2="$(jq -r .version "$BATS_TEST_TMPDIR/s2" | tail -n 1)"
	[ -n "$v2" ] && [ "$v2" != null ]
	run -0 sp_show pre
	[ "$(jq -r '.pending_action // "none"' <<<"$output")" != enable ]
	sp_rpc put_end key=pre version:="$v1" || true
	sp_rpc put_end key=pre version:="$v2"
	[ "$(sp_state pre)" = disabled ]
}

# ---- size-changing upsert ----

@test "softpin: a size-changing upsert carries an unexpired deadline, exactly, also while PROCESSING" {
	sp_put u1 8 --soft-pin enable:60s
	local d
	d="$(sp_deadline u1)"
	advance_clock 1000
	run -0 sp_start u1 4096 1 upsert:=true
	local v
	v="$(jq -r .version <<<"$output")"
	run -0 sp_show u1
	[ "$(jq -r .state <<<"$output")" != disabled ]
	advance_clock 1000
	sp_rpc put_end key=u1 version:="$v"
	[ "$(sp_state u1)" = active ]
	[ "$(sp_deadline u1)" = "$d" ]
	[ "$(mc_stat_json u1 | jq -r .size)" = 4096 ]
	# and the carried deadline still ends the pin when it is due
	advance_clock 58000
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state u1)" = disabled ]
}

@test "softpin: a size-changing upsert does not carry an expired deadline" {
	sp_put u2 8 --soft-pin enable:10s
	advance_clock 10000
	sp_put u2 100 --upsert
	[ "$(sp_state u2)" = disabled ]
	[ "$(sp_deadline u2)" = 0 ]
}

# ---- the deadline index ----

@test "softpin: an old heap entry never clears a pin re-enabled with a later deadline (exact-deadline guard)" {
	sp_put g1 8 --soft-pin enable:10s
	local now
	now="$(clock_now)"
	sp_put g1 8 --upsert --soft-pin enable:60s
	[ "$(sp_deadline g1)" = $((now + 60000)) ]
	advance_clock 10001
	expire_spares g1
	[ "$(sp_state g1)" = active ]
	[ "$(sp_deadline g1)" = $((now + 60000)) ]
}

@test "softpin: the gauge moves once per transition: +1 enable, 0 new deadline, -1 disable, expiry and rm, never twice" {
	own_cluster --http 127.0.0.1:0
	active_is 0
	sp_put a 8 --soft-pin enable:10s
	active_is 1
	sp_put a 8 --upsert --soft-pin enable:20s
	active_is 1
	sp_put b 8 --soft-pin enable:5s
	active_is 2
	sp_put c 8 --soft-pin enable:1h
	active_is 3
	sp_put c 8 --upsert --soft-pin disable
	active_is 2
	# b expires; a's stale 10 s entry and its live 20 s one stay apart
	advance_clock 6000
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state b)" = disabled ]
	active_is 1
	advance_clock 5000
	expire_spares a
	active_is 1
	# rm of an expired pin: no second decrement; of an active one: -1
	mc-cli rm --force b
	active_is 1
	mc-cli rm --force a
	active_is 0
	sp_put d 8 --soft-pin enable:1s
	active_is 1
	advance_clock 1000
	sp_rpc softpin_expire >/dev/null
	active_is 0
	mc-cli rm --force d
	active_is 0
	[ "$(sp_stat live)" = 0 ]
	[ "$(sp_stat expired)" -ge 2 ]
	[ "$(sp_stat cleanup_runs)" -ge 3 ]
	local name
	for name in mc_softpin_heap_entries mc_softpin_live mc_softpin_cleanup_runs_total \
		mc_softpin_expired_total mc_softpin_rebuilds_total; do
		[ -n "$(mc_metric master "$name")" ] || {
			echo "# /metrics has no $name" >&2
			return 1
		}
	done
}

@test "softpin: 5000 re-enables of one key rebuild the index and keep heap <= max(4096, 2 x live)" {
	own_cluster
	check pin rb 0 3 0 enable:3600000
	[ "$(sp_stat live)" = 3 ]
	[ "$(sp_stat rebuilds)" = 0 ]
	run -0 check reenable rb-0 5000 3600000
	[ "$(sp_stat rebuilds)" -ge 1 ]
	[ "$(sp_stat heap)" -le 4097 ]
	[ "$(sp_stat live)" = 3 ]
	[ "$(sp_stat active)" = 3 ]
	# the last re-enable's deadline is the one that counts
	[ "$(sp_deadline rb-0)" = $(($(clock_now) + 3600000 + 4999)) ]
	run -0 sp_rpc softpin_list
	[ "$(jq '.items | length' <<<"$output")" = 3 ]
}

@test "softpin: softpin_list shows active pins by deadline; due_within_ms bounds it" {
	own_cluster
	sp_put l3 8 --soft-pin enable:30s
	sp_put l1 8 --soft-pin enable:10s
	sp_put l2 8 --soft-pin enable:20s
	sp_put l0 8
	run -0 sp_rpc softpin_list
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = l1,l2,l3 ]
	run -0 sp_rpc softpin_list due_within_ms:=20000
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = l1,l2 ]
	run -0 sp_rpc softpin_list limit:=1
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = l1 ]
	[ "$(jq -r .more <<<"$output")" = true ]
}

# ---- restore ----

@test "softpin: restore keeps an unexpired pin with its deadline and normalises an expired one to disabled" {
	SP_OWN=1
	mc_test_dir
	local snap="$MC_DIR/snap"
	mkdir -p "$snap"
	mc_start_master "${MASTER_FLAGS[@]}" --snapshot-dir "$snap"
	mc_start_peer p1
	sp_put keep 8 --soft-pin enable:1h
	sp_put soon 8 --soft-pin enable:10s
	local dk
	dk="$(sp_deadline keep)"
	[ "$(sp_stat live)" = 2 ]
	mc-snapshot save >/dev/null
	mc_kill9 master
	advance_clock 20000
	mc_start_master "${MASTER_FLAGS[@]}" --snapshot-dir "$snap" --restore latest
	[ "$(sp_state keep)" = active ]
	[ "$(sp_deadline keep)" = "$dk" ]
	[ "$(sp_state soon)" = disabled ]
	[ "$(sp_deadline soon)" = 0 ]
	[ "$(sp_stat live)" = 1 ]
	[ "$(sp_stat active)" = 1 ]
	run -0 sp_rpc softpin_list
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = keep ]
	# the peer's inventory confirms the copies: that touches no pin either
	wait_until 10 confirmed keep
	wait_until 10 confirmed soon
	[ "$(sp_deadline keep)" = "$dk" ]
	[ "$(sp_state soon)" = disabled ]
	# the rebuilt index still expires the surviving pin on time
	advance_clock $((dk - $(clock_now)))
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state keep)" = disabled ]
	[ "$(sp_stat active)" = 0 ]
}

# confirmed KEY: every replica of KEY is confirmed by its peer.
confirmed() {
	mc_stat_json "$1" | jq_true '.replicas | length > 0 and all(.confirmed == true)'
}

@test "softpin: a restore that falls back from a bad newest file keeps none of its pins in the index" {
	SP_OWN=1
	mc_test_dir
	local snap="$MC_DIR/snap" flags
	mkdir -p "$snap"
	flags=("${MASTER_FLAGS[@]}" --snapshot-dir "$snap" --reconcile-timeout 1000h)
	mc_start_master "${flags[@]}"
	mc_start_peer p1
	sp_put old-pin 8 --soft-pin enable:1h
	mc-snapshot save >/dev/null
	local old new
	old="$(mc_snap_files "$snap" | head -n 1)"
	advance_clock 1000
	check pin later 0 2000 0 enable:7200000
	[ "$(sp_stat live)" = 2001 ]
	mc-snapshot save >/dev/null
	new="$(mc_snap_files "$snap" | head -n 1)"
	[ -n "$old" ] && [ "$new" != "$old" ]
	# late in the file, so that much of it is loaded before it fails
	mc_flip_byte "$new" $(($(stat -c %s "$new") * 9 / 10))
	mc_kill9 p1
	mc_kill9 master
	mc_start_master "${flags[@]}" --restore latest
	mc_key_gone later-0
	[ "$(sp_state old-pin)" = active ]
	[ "$(sp_stat live)" = 1 ]
	[ "$(sp_stat active)" = 1 ]
	[ "$(sp_stat heap)" -le 1 ]
	run -0 sp_rpc softpin_list
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = old-pin ]
	# a leaked registration would name a freed object here
	advance_clock $((3 * 3600 * 1000))
	run -0 sp_rpc softpin_expire
	# (unless the background sweep got there first)
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = old-pin ] ||
		[ "$(jq -r .expired <<<"$output")" = 0 ]
	[ "$(sp_state old-pin)" = disabled ]
	[ "$(sp_stat active)" = 0 ]
	[ "$(sp_stat live)" = 0 ]
}

@test "softpin: a live restore replaces the index with the file's pins; a failed one keeps the current pins" {
	own_cluster
	local good="$BATS_TEST_TMPDIR/good.mcs" bad="$BATS_TEST_TMPDIR/bad.mcs"
	sp_put ra 8 --soft-pin enable:1h
	mc-snapshot save -o "$good" >/dev/null
	sp_put rb 8 --soft-pin enable:2h
	cp "$good" "$bad"
	mc_flip_byte "$bad" $(($(stat -c %s "$bad") / 2))
	run -65 mc-snapshot restore --force "$bad"
	[ "$(sp_stat live)" = 2 ]
	[ "$(sp_stat active)" = 2 ]
	run -0 sp_rpc softpin_list
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = ra,rb ]
	mc-snapshot restore --force "$good" >/dev/null
	mc_key_gone rb
	[ "$(sp_stat live)" = 1 ]
	[ "$(sp_stat active)" = 1 ]
	run -0 sp_rpc softpin_list
	[ "$(jq -r '[.items[].key] | join(",")' <<<"$output")" = ra ]
	# rb's registration, had it survived, would name a freed object
	advance_clock $((3 * 3600 * 1000))
	sp_rpc softpin_expire >/dev/null
	[ "$(sp_state ra)" = disabled ]
	[ "$(sp_stat active)" = 0 ]
	[ "$(sp_stat live)" = 0 ]
}

# ---- reads ----

@test "softpin: a storm of 100k gets leaves the deadline unchanged to the millisecond" {
	sp_put storm-0 64 --soft-pin enable:1h
	local d
	d="$(sp_deadline storm-0)"
	# mc-bench first upserts storm-0 with the default action (preserve);
	# four readers at once, 25k gets each
	run -0 mc-bench get --prefix storm --keys 1 --clients 4 --requests 25000 --size 64
	assert_output --partial "ops=100000 failures=0 "
	[ "$(sp_deadline storm-0)" = "$d" ]
	[ "$(sp_state storm-0)" = active ]
	mc-cli exist storm-0
	run -0 sp_show storm-0
	[ "$(jq -r .deadline <<<"$output")" = "$d" ]
}
