#!/usr/bin/env bats
#
# Measuring a policy honestly: the live replay against a cluster and the
# offline simulator (mc-bench sim, the same planner over a model of the
# tier) agree on the same trace, capacity and policy; a run whose puts
# did not land fails instead of passing for a measurement; and a replay
# on the trace's own clock ranks like one as fast as possible, because
# policies age by logical access counts, not milliseconds.
#
# The policy measured is the master's (--evict-policy), so the peer
# leaves DRAM to the master's rounds (eviction mode master);
# modes-replay.bats replays the trace with peers that evict for
# themselves.
#
# slow: about two minutes on two cores. Four live replays of the whole
# trace (12,031 requests, about 254k puts each) beside the simulator, and
# four of its first 6,000 requests: the trace is what is measured, so
# make test does not cut it (the sanitizer pass replays 2,000 requests).

load helpers

# The trace is replayed far faster than its own clock, with the fake
# clock standing still, and what is checked is eviction at the
# watermarks as the simulation models it: copies are old the moment they
# commit (--young 0), as before young copies were kept
# (tests/cli/young.bats checks --young itself).
export MC_YOUNG=0

export MC_EVICTION_MODE=master

BLOCK=4096

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-bench
	TRACE="$BATS_FILE_TMPDIR/trace.jsonl"
	mc_trace "$TRACE"
	UNIQUE="$(jq -s '[.[].hash_ids[]] | unique | length' "$TRACE")"
	export TRACE UNIQUE
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# field NAME TEXT: the value of NAME=... in TEXT.
field() {
	sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<"$2" | head -n 1
}

# policy NAME TEXT: a policy file.
policy() {
	printf '%s\n' "$2" >"$BATS_TEST_TMPDIR/$1.policy"
	echo "$BATS_TEST_TMPDIR/$1.policy"
}

# The live cluster and the simulator run the same band, the wide one of
# watermarks 0.9 and 0.7, given on both sides: what is compared is the
# policy, under one set of rules (occupancy.bats checks the default band).
BAND_LIVE=(--evict-high-watermark 0.9 --evict-low-watermark 0.7)
BAND_SIM=(--high 0.9 --low 0.7)

# live POLICY PERCENT [REPLAY ARGS...]: a fresh cluster with one peer of
# PERCENT% of the trace's unique blocks, the master planning with POLICY;
# prints the replay's summary line.
live() {
	local pol="$1" pct="$2"
	shift 2
	mc_use_dir "$BATS_TEST_TMPDIR/live-$RANDOM$RANDOM"
	mc_start_master --evict-policy "$pol" "${BAND_LIVE[@]}" >&2 || return 1
	MC_PEER_DRAM=$((UNIQUE * pct / 100 * BLOCK)) mc_start_peers 1 >&2 || return 1
	mc-bench replay --block-bytes "$BLOCK" "$@" "$TRACE"
	local rc=$?
	mc_stop_all
	return $rc
}

# sim POLICY PERCENT: mc-bench sim's summary line for the same setting.
sim() {
	mc-bench sim --block-bytes "$BLOCK" --policy "$1" --capacity "$2%" "${BAND_SIM[@]}" "$TRACE" |
		grep '^sim '
}

# within_pp A B PP: |A - B| <= PP percentage points (A and B are ratios).
within_pp() {
	awk -v a="$1" -v b="$2" -v pp="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d * 100 <= pp) }'
}

agree() {
	local pol="$1" pct="$2" l s lh sh
	l="$(live "$pol" "$pct")"
	s="$(sim "$pol" "$pct")"
	lh="$(field prefix_hit_ratio "$l")"
	sh="$(field prefix_hit_ratio "$s")"
	echo "# $(basename "$pol") at $pct%: live $lh, sim $sh" >&3
	[ -n "$lh" ] && [ -n "$sh" ]
	within_pp "$lh" "$sh" 1
}

@test "policy-eval: live replay and sim agree within 1 point for lru at 2% and 10%" {
	local pol
	pol="$(policy lru 'evict lru')"
	agree "$pol" 2
	agree "$pol" 10
}

@test "policy-eval: live replay and sim agree within 1 point for the shipped example policy at 2% and 10%" {
	local pol="$MC_ROOT/examples/policies/tenant-type.policy"
	agree "$pol" 2
	agree "$pol" 10
}

@test "policy-eval: a deliberately undersized run with --put-wait 0 exits non-zero and says why" {
	mc_use_dir "$BATS_TEST_TMPDIR/small"
	mc_start_master --put-wait 0
	# 16 blocks: one request's missing blocks fill it before any commits
	MC_PEER_DRAM=$((16 * BLOCK)) mc_start_peers 1
	run mc-bench replay --block-bytes "$BLOCK" --limit 300 "$TRACE"
	assert_failure 1
	assert_output --partial "puts failed"
	assert_output --partial "more than --max-put-failures 0.10%"
	# the figures are still printed, for the record
	assert_output --partial "replay requests=300"
}

@test "policy-eval: a replay on the trace's clock and one as fast as possible agree within 1 point for lfu and cost" {
	local r pol fast slow
	for r in lfu cost; do
		pol="$(policy "$r" "evict $r")"
		fast="$(live "$pol" 2 --limit 6000)"
		slow="$(live "$pol" 2 --limit 6000 --clock trace)"
		echo "# $r: fast $(field prefix_hit_ratio "$fast"), trace clock $(field prefix_hit_ratio "$slow")" >&3
		within_pp "$(field prefix_hit_ratio "$fast")" "$(field prefix_hit_ratio "$slow")" 1
	done
}

@test "policy-eval: sim prints the references, OPT and the gap closed, also as JSON" {
	local pol out
	pol="$(policy lru 'evict lru')"
	run -0 mc-bench sim --block-bytes "$BLOCK" --policy "$pol" --capacity 2% --limit 2000 "$TRACE"
	for r in lru fifo lfu lfu-restart s3fifo arc lru-leaf "opt (block hits)"; do
		assert_output --partial "$r "
	done
	assert_output --partial "gap closed by mc:"
	assert_output --partial "an upper bound"
	run -0 mc-bench sim --json --block-bytes "$BLOCK" --policy "$pol" --capacity 2% \
		--limit 2000 "$TRACE"
	out="$output"
	jq -e '.results | length == 8' <<<"$out" >/dev/null
	jq -e '.opt_block_hit_ratio >= (.results | map(.block_hit_ratio) | max)' <<<"$out" >/dev/null
	# 2% of the blocks of what was simulated, in payload bytes
	jq -e '.capacity_bytes == ((.unique_blocks * 2 / 100 | floor) * 4096)' <<<"$out" >/dev/null
	# mc's lru under the headroom band (a slice or two from full) is within a point of
	# the reference lru, which evicts on demand at full capacity
	jq -e '.band == "headroom" and ((.results[0].prefix_hit_ratio - (.results[] |
		select(.policy == "lru") | .prefix_hit_ratio)) | fabs < 0.01)' <<<"$out" >/dev/null
}

@test "policy-eval: sim refuses a missing capacity, a bad one and a bad policy, naming them" {
	run -64 mc-bench sim "$TRACE"
	assert_output --partial "sim needs --capacity"
	run -64 mc-bench sim --capacity lots "$TRACE"
	assert_output --partial "invalid --capacity 'lots'"
	printf 'evict lruu\n' >"$BATS_TEST_TMPDIR/bad.policy"
	run -65 mc-bench sim --capacity 2% --policy "$BATS_TEST_TMPDIR/bad.policy" "$TRACE"
	assert_output --partial "unknown ranker 'lruu'"
}

@test "policy-eval: a long request is replayed whole, not cut at 4096 blocks" {
	mc_use_dir "$BATS_TEST_TMPDIR/long"
	mc_start_master
	MC_PEER_DRAM=64MiB mc_start_peers 1
	jq -nc '{timestamp: 0, hash_ids: [range(0; 5000)]}' >"$BATS_TEST_TMPDIR/long.jsonl"
	run -0 mc-bench replay --block-bytes 1KiB --prefix long "$BATS_TEST_TMPDIR/long.jsonl"
	[ "$(field blocks "$output")" -eq 5000 ]
	[ "$(field puts "$output")" -eq 5000 ]
	mc-cli exist long-4999
	run -0 mc-bench replay --block-bytes 1KiB --prefix long "$BATS_TEST_TMPDIR/long.jsonl"
	[ "$(field prefix_hits "$output")" -eq 5000 ]
}
