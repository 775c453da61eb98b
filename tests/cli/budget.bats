#!/usr/bin/env bats
#
# The master's memory budget (--max-objects): past the high watermark of
# it a round of the whole store evicts down to the low one, a new object
# at the budget waits for that round, and one that still cannot fit
# fails naming the budget, while other clients' reads keep working.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_test_dir
	mc_start_master --max-objects 10 --put-wait 5s --http 127.0.0.1:0
	MC_PEER_DRAM=64MiB mc_start_peer p1
}

teardown() {
	mc_stop_everything
}

objects() {
	mc-rpc "$MC_MASTER" stats | jq .objects
}

@test "budget: the store never holds more than --max-objects; rounds evict the oldest down to the low mark" {
	local i
	for i in $(seq 0 24); do
		echo "v$i" | mc-cli put "k$i"
		[ "$(objects)" -le 10 ]
	done
	# every put landed, and the newest is readable
	[ "$(mc-cli get k24)" = v24 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="budget"}')" -ge 1 ]
	# the round evicted the least recently used first: the first keys went
	run -1 mc-cli get k0
	assert_output --partial "not found"
}

@test "budget: a new object that cannot fit fails naming the budget; reads go on" {
	local i
	for i in $(seq 0 9); do
		echo "pinned$i" | mc-cli put --hard-pin "p$i"
	done
	run -1 mc-cli put extra <<<"x"
	assert_output --partial "--max-objects 10"
	# an upsert of an existing key is no new object: it still works
	echo again | mc-cli put --hard-pin --upsert p3
	[ "$(mc-cli get p3)" = again ]
	for i in $(seq 0 9); do
		mc-cli get "p$i" >/dev/null
	done
	[ "$(objects)" -eq 10 ]
}
