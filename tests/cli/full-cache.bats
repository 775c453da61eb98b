#!/usr/bin/env bats
#
# slow: about 30 s on two cores: the whole trace, 288,500 blocks, is replayed
#
# A full cache keeps accepting writes. The whole conversation trace is
# replayed (mc-bench replay: a batch get of each request's prefix
# blocks, a batch put of the blocks after the first miss) against one
# master and one peer with default flags, the peer sized to 2% of the
# trace's unique blocks, so it sits at the top of its band nearly all
# the time. The master logs each round at debug level; the log level changes
# no behaviour. The rounds are the master's (the peer's eviction mode is
# master); modes-replay.bats replays the trace in every mode.

load helpers

# The puts here cross the watermarks while the fake clock stands still,
# and what is checked is the eviction ahead of need that follows: their
# copies are old the moment they commit (--young 0), as before young
# copies were kept (tests/cli/young.bats checks --young itself).
export MC_YOUNG=0

export MC_EVICTION_MODE=master

BLOCK=4096

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-bench
	mc_file_dir
	TRACE="$BATS_FILE_TMPDIR/trace.jsonl"
	mc_trace "$TRACE"
	local unique
	unique="$(jq -s '[.[].hash_ids[]] | unique | length' "$TRACE")"
	MC_PEER_DRAM=$((unique * 2 / 100 * BLOCK))
	echo "$unique" >"$BATS_FILE_TMPDIR/unique"
	mc_start_master --http 127.0.0.1:0 --log-level debug
	MC_PEER_DRAM=$MC_PEER_DRAM mc_start_peers 1
	mc-bench replay --block-bytes "$BLOCK" "$TRACE" >"$BATS_FILE_TMPDIR/replay.out"
	export TRACE MC_PEER_DRAM
}

teardown_file() {
	mc_stop_everything
}

# replay_field NAME: one key=value of the replay's summary line.
replay_field() {
	grep -o "\b$1=[0-9.]*" "$BATS_FILE_TMPDIR/replay.out" | head -n 1 | cut -d= -f2
}

@test "full cache: the replay ran the whole trace and the tier really filled" {
	cat "$BATS_FILE_TMPDIR/replay.out" >&3
	[ "$(replay_field requests)" -eq "$(wc -l <"$TRACE")" ]
	[ "$(replay_field puts)" -gt "$(cat "$BATS_FILE_TMPDIR/unique")" ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -gt 10 ]
}

@test "full cache: put failures stay under 0.1% of the puts" {
	local puts failures
	puts="$(replay_field puts)"
	failures="$(replay_field put_failures)"
	echo "# $failures of $puts puts failed" >&3
	[ $((failures * 1000)) -lt "$puts" ]
}

# The default band (mc-master(8)): a slice is 64 copies of 4 KiB or
# 1/64 of the tier, whichever is less (here the 1/64); a round starts
# once the room neither copies nor the reservations of puts placed hold
# is under one slice, and frees one slice more.
SLICE_SHARE=64

@test "full cache: by default no round takes the tier below 0.92 full" {
	local occ
	occ="$(mc_metric master 'mc_tier_occupancy_min{peer="1",tier="dram"}')"
	echo "# mc_tier_occupancy_min $occ (headroom band)" >&3
	[ -n "$occ" ]
	# compared as integers in parts per million
	[ "$(printf '%.0f' "$(bc -l <<<"$occ * 1000000")")" -ge 920000 ]
}

@test "full cache: every round frees down to two slices under full, plus the waiting put" {
	local log="$MC_DIR/master.log" n bad
	n="$(grep -c 'debug eviction round .* target=' "$log")"
	# one record per round started
	[ "$n" -ge 1 ]
	[ "$n" -eq $(($(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}') +
		$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}'))) ]
	bad="$(grep -o 'usage_at_start=[0-9]* low=[0-9]* waiting=[0-9]* target=[0-9]*' "$log" |
		tr '=' ' ' | awk -v cap="$MC_PEER_DRAM" -v share="$SLICE_SHARE" '
			{ top = cap - 2 * int(cap / share) }
			$4 != top || $8 != $2 - $4 + $6 { print; bad++ }
			END { print bad + 0 }' | tail -n 1)"
	[ "$bad" -eq 0 ]
}

@test "full cache: peers shows what the master accounts, with the peer's own figure beside it" {
	local used
	used="$(mc_metric master 'mc_peer_tier_used_bytes{peer="1",tier="dram"}')"
	mc_peers_json | jq_true --argjson u "$used" \
		'[.tiers[] | select(.tier == "dram")][0] | .used == $u and has("reported")'
	run -0 mc-cli peers
	assert_output --partial "(peer: "
}
