#!/usr/bin/env bats
#
# A tier's round in the master plans over a window of the tier's
# coldest copies from its recency index, not over a walk of the store:
# its view holds the window's records (mc_evict_view_records_total),
# it still frees what the watermark asks, and the `candidates` call
# still answers with every copy.

load helpers

export MC_YOUNG=0
export MC_EVICTION_MODE=master

OBJ=4096

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-fill
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# dram_used: the bytes the master counts on the peers' DRAM.
dram_used() {
	mc-cli --json peers | jq '[.. | objects | select(has("peer_id")) | .tiers[]? |
		select(.tier == "dram") | .used] | add'
}

# evicted_down_to BYTES: once the sweep has run, the tier holds BYTES or less.
evicted_down_to() {
	advance_clock 2000
	[ "$(dram_used)" -le "$1" ]
}

@test "evict window: a watermark round plans over the tier's coldest copies, not every copy" {
	# 4096 pages, 3000 written: past 2867 (0.7), a round to 2785 (0.68)
	MC_PEER_DRAM=16MiB
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 0.7 \
		--evict-low-watermark 0.68
	mc_start_peers 1
	mc-fill --prefix w/ --count 3000 --min-size "$OBJ" --max-size "$OBJ" put >/dev/null
	# the round that crossed 0.7 took the tier to 0.68; the puts after it stay below 0.7
	wait_until 10 evicted_down_to $((2867 * OBJ))
	[ "$(mc_metric master 'mc_evicted_objects_total{kind="evict",trigger="watermark"}')" -ge 80 ]
	local full window
	window=$(mc_series master mc_evict_view_records_total 'view="window"')
	full=$(mc_series master mc_evict_view_records_total 'view="full"')
	# each round's view: at most a window of 1024 and its extras, far from 3000
	local rounds
	rounds=$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')
	[ "$rounds" -ge 1 ]
	[ "$window" -ge 1 ]
	[ "$window" -le $((rounds * 2100)) ]
	[ "$full" -eq 0 ]
	# the admin's picture is still the whole tier
	run mc-cli --json candidates
	[ "$status" -eq 0 ]
	[ "$(jq -c 'select(has("key"))' <<<"$output" | wc -l)" -eq $(($(dram_used) / OBJ)) ]
	[ "$(mc_series master mc_evict_view_records_total 'view="full"')" -gt 2000 ]
}
