#!/usr/bin/env bats
#
# The default band (mc-peer(8), mc-master(8)): a tier keeps free only a
# headroom of the writes in flight to it plus one slice, and evicts a
# slice at a time to hold it there, so a cluster with default flags uses
# the memory it has. A replay of the conversation trace's first 3,000
# requests (far more blocks than the tier holds) against a peer sized to
# 2% of the trace's unique blocks keeps its DRAM above 0.95 full, in the
# default mode (the peer evicts itself) and in master mode (the master's
# rounds evict it); and the master's round for a tier starts one slice
# under full and stops one slice lower, the copies placed there and not
# complete counted in its usage by their reservations.

load helpers

# The puts here run while the fake clock stands still: their copies are
# old the moment they commit (--young 0), as for the simulator
# (tests/cli/young.bats checks --young itself).
export MC_YOUNG=0

BLOCK=4096
KIB=1024

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-bench mc-fill
	TRACE="$BATS_FILE_TMPDIR/trace.jsonl"
	mc_trace "$TRACE"
	UNIQUE="$(jq -s '[.[].hash_ids[]] | unique | length' "$TRACE")"
	export TRACE UNIQUE
}

setup() {
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# field NAME: one key=value of the replay's summary line in $output.
field() {
	grep -o "\b$1=[0-9.]*" <<<"$output" | head -n 1 | cut -d= -f2
}

# ppm RATIO: the ratio in parts per million, an integer to compare.
ppm() {
	printf '%.0f' "$(bc -l <<<"$1 * 1000000")"
}

# replay_default MODE: a master and one peer, default flags but the
# eviction mode, the peer's DRAM 2% of the unique blocks; the replay's
# summary in $output.
replay_default() {
	mc_start_master --http 127.0.0.1:0
	MC_EVICTION_MODE=$1 MC_PEER_DRAM=$((UNIQUE * 2 / 100 * BLOCK)) mc_start_peer p1
	run -0 mc-bench replay --block-bytes "$BLOCK" --limit 3000 "$TRACE"
	echo "# $1: $output" >&3
	# the tier filled and evicted (samples start at the first eviction)
	[ "$(field occupancy_samples)" -gt 10 ]
	# under 0.1% of the puts fail: a slow build's round may outlast a
	# put's --put-wait now and then, with only a slice kept free
	[ $(($(field put_failures) * 1000)) -lt "$(field puts)" ]
}

@test "occupancy: by default a self-evicting peer keeps its DRAM above 0.95 full under a stream larger than it" {
	replay_default local
	[ "$(ppm "$(field occupancy_min)")" -ge 950000 ]
	[ "$(ppm "$(field occupancy_mean)")" -ge 950000 ]
	# its band is the headroom one, as the master shows it
	mc_peers_json | jq_true '.tiers[] | select(.tier == "dram") | .band == "headroom"'
}

@test "occupancy: by default the master's rounds keep a peer's DRAM above 0.95 full on average" {
	replay_default master
	[ "$(ppm "$(field occupancy_mean)")" -ge 950000 ]
	[ "$(ppm "$(field occupancy_min)")" -ge 920000 ]
	[ "$(field rounds)" -gt 10 ]
}

# A peer of 4 MiB and copies of 64 KiB: a slice is one copy (1/64 of the
# tier), so the band runs from 62 to 63 copies, puts in flight among them.
CAP=$((4096 * KIB))
COPY=$((64 * KIB))

@test "occupancy: the master's round starts one slice under full and stops one slice lower, the puts in flight counted in the usage" {
	mc_start_master --http 127.0.0.1:0 --log-level debug
	MC_EVICTION_MODE=master MC_PEER_DRAM=$CAP mc_start_peer p1
	# the band is one and two slices under full
	mc_peers_json | jq_true --argjson h $((CAP - COPY)) --argjson l $((CAP - 2 * COPY)) \
		'.tiers[] | select(.tier == "dram") |
			.band == "headroom" and .high_bytes == $h and .low_bytes == $l'
	# one put at a time: at most the next one is placed while a round starts
	run -0 mc-fill --prefix s/ -n 100 --batch 1 --min-size 64KiB --max-size 64KiB put
	local log="$MC_DIR/master.log" rounds bad
	rounds="$(grep -c 'debug eviction round .* target=' "$log")"
	echo "# $rounds rounds" >&3
	[ "$rounds" -ge 10 ]
	bad="$(grep -o 'usage_at_start=[0-9]* low=[0-9]*' "$log" | tr '=' ' ' |
		awk -v cap="$CAP" -v copy="$COPY" '
			$4 != cap - 2 * copy || $2 <= cap - copy { print; bad++ }
			END { print bad + 0 }' | tail -n 1)"
	[ "$bad" -eq 0 ]
	# what stays is in the band: 62 or 63 copies
	mc_peers_json | jq_true --argjson h $((CAP - COPY)) --argjson l $((CAP - 2 * COPY)) \
		'.tiers[] | select(.tier == "dram") | .used >= $l and .used <= $h'
}

@test "occupancy: watermarks given to the master replace the headroom band" {
	mc_start_master --evict-high-watermark 0.9 --evict-low-watermark 0.7
	MC_EVICTION_MODE=master MC_PEER_DRAM=$CAP mc_start_peer p1
	mc_peers_json | jq_true --argjson cap "$CAP" '.tiers[] | select(.tier == "dram") |
		.band == "watermarks" and .high_bytes == ($cap * 0.9 | floor) and
		.low_bytes == ($cap * 0.7 | floor)'
}

@test "occupancy: a peer's own watermarks are the band the master shows for it" {
	mc_start_master
	MC_PEER_DRAM=$CAP mc_start_peer p1 --dram-watermarks 0.8:0.5
	mc_peers_json | jq_true --argjson cap "$CAP" '.tiers[] | select(.tier == "dram") |
		.band == "watermarks" and .high_bytes == ($cap * 0.8 | floor) and
		.low_bytes == ($cap * 0.5 | floor)'
}
