#!/usr/bin/env bats
#
# The public client API's batch calls, which mc-cli does not expose,
# driven by tests/tools/mc-client-check against a real cluster.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-client-check mc-client-api
	mc_file_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h
	MC_PEER_DRAM=64MiB mc_start_peers 2
}

teardown_file() {
	mc_stop_everything
}

@test "client: batch put, exist, get, list and remove by prefix agree byte for byte" {
	run -0 mc-client-check batch
	refute_output --partial "not ok"
	assert_output --partial "# 7 passed, 0 failed"
}

@test "client: list and remove by prefix stop at the prefix's boundary" {
	echo neighbour | mc-cli put twoX/other
	echo inside | mc-cli put two
	run -0 mc-client-check two
	assert_output --partial "# 7 passed, 0 failed"
	run -0 mc-cli get twoX/other
	assert_output neighbour
	run -0 mc-cli get two
	assert_output inside
}

@test "client: keys are bytes: a NUL or a high byte in a key is part of it" {
	run -0 mc-client-api bytes bytes
	refute_output --partial "not ok"
	assert_output --partial "# 10 passed, 0 failed"
}

@test "client: option structs are read as far as their size says, and refused without one" {
	run -0 mc-client-api opts opts
	refute_output --partial "not ok"
	assert_output --partial "# 6 passed, 0 failed"
}

@test "client: one client called from 8 threads at once: every put, lookup and get is right" {
	run -0 timeout 60 mc-client-api threads 8 threads
	refute_output --partial "not ok"
	assert_output --partial "# 3 passed, 0 failed"
}
