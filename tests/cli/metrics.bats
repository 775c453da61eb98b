#!/usr/bin/env bats
#
# /metrics of mc-master and mc-peer (--http): Prometheus text that moves
# with the traffic. Fetched with bash's /dev/tcp: no HTTP client needed.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-garbage mc-rpc
	mc_file_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h --http 127.0.0.1:0
	MC_PEER_DRAM=32MiB mc_start_peer p1 --http 127.0.0.1:0 --fault-inject
}

teardown_file() {
	mc_stop_everything
}

@test "metrics: the master announces its /metrics address and serves Prometheus text" {
	mc_metrics_url master
	run -0 mc_scrape master
	assert_line --regexp '^# TYPE mc_objects gauge$'
	assert_line --regexp '^mc_objects [0-9]+'
	assert_line --regexp '^mc_peers [0-9]+'
	assert_line --regexp '^mc_peers_alive [0-9]+'
}

@test "metrics: the master counts objects, bytes and per-tenant bytes after puts" {
	local o0
	o0="$(mc_metric master mc_objects)"
	head -c 1000 /dev/urandom | mc-cli -t met-a put m1
	head -c 500 /dev/urandom | mc-cli -t met-a put m2
	[ "$(mc_metric master mc_objects)" -eq $((o0 + 2)) ]
	[ "$(mc_metric master 'mc_tenant_bytes{tenant="met-a"}')" -eq 1500 ]
	[ "$(mc_metric master 'mc_tenant_objects{tenant="met-a"}')" -eq 2 ]
	mc_metric_at_least master mc_bytes 1500
	[ "$(mc_metric master mc_peers)" -eq 1 ]
	[ "$(mc_metric master mc_peers_alive)" -eq 1 ]
}

@test "metrics: the master counts requests and failures per method" {
	local r0 f0
	echo x | mc-cli put req-1
	r0="$(mc_metric master 'mc_requests_total{method="get_replica_list"}')"
	f0="$(mc_metric master 'mc_request_failures_total{method="get_replica_list"}')"
	mc-cli get req-1 >/dev/null
	run -1 mc-cli get req-absent
	[ "$(mc_metric master 'mc_requests_total{method="get_replica_list"}')" -eq $((${r0:-0} + 2)) ]
	[ "$(mc_metric master 'mc_request_failures_total{method="get_replica_list"}')" -eq $((${f0:-0} + 1)) ]
	mc_metric_at_least master 'mc_requests_total{method="put_start"}' 1
}

@test "metrics: the dispatcher times every method: get_replica_list's histogram counts every lookup" {
	echo x | mc-cli put hist-1
	local c0
	c0="$(mc_metric master 'mc_request_seconds_count{method="get_replica_list"}')"
	mc-cli get hist-1 >/dev/null
	mc-cli get hist-1 >/dev/null
	[ "$(mc_metric master 'mc_request_seconds_count{method="get_replica_list"}')" -eq $((${c0:-0} + 2)) ]
	run -0 mc_scrape master
	assert_line --regexp '^mc_request_seconds_bucket\{method="get_replica_list",le="\+Inf"\} [0-9]+'
	assert_line --regexp '^mc_request_seconds_sum\{method="get_replica_list"\} [0-9.e+-]+'
	assert_line --regexp '^mc_request_seconds_count\{method="put_start"\} [0-9]+'
}

@test "metrics: the peer counts and times its methods too" {
	local w0 r0
	w0="$(mc_metric p1 'mc_requests_total{method="write"}')"
	r0="$(mc_metric p1 'mc_requests_total{method="read"}')"
	echo x | mc-cli put peer-req-1
	mc-cli get peer-req-1 >/dev/null
	[ "$(mc_metric p1 'mc_requests_total{method="write"}')" -eq $((${w0:-0} + 1)) ]
	[ "$(mc_metric p1 'mc_requests_total{method="read"}')" -eq $((${r0:-0} + 1)) ]
	mc_metric_at_least p1 'mc_request_seconds_count{method="read"}' 1
}

@test "metrics: malformed messages to the master are counted" {
	local m0
	m0="$(mc_metric master mc_malformed_messages_total)"
	mc-garbage --isolation --probe stats "$MC_MASTER"
	mc_metric_at_least master mc_malformed_messages_total $((${m0:-0} + 2))
}

@test "metrics: the peer reports its dram capacity and usage" {
	mc_metrics_url p1
	[ "$(mc_metric p1 'mc_peer_tier_bytes_capacity{tier="dram"}')" -eq $((32 << 20)) ]
	head -c 100000 /dev/urandom | mc-cli put pu-1
	mc_metric_at_least p1 'mc_peer_tier_bytes_used{tier="dram"}' 100000
	mc_metric_at_least p1 mc_peer_objects 1
}

@test "metrics: the peer counts reads, writes, misses and bytes in and out" {
	local w0 r0 bi0 bo0
	w0="$(mc_metric p1 mc_peer_writes_total)"
	r0="$(mc_metric p1 mc_peer_reads_total)"
	bi0="$(mc_metric p1 mc_peer_bytes_in_total)"
	bo0="$(mc_metric p1 mc_peer_bytes_out_total)"
	head -c 4096 /dev/urandom | mc-cli put pc-1
	mc-cli get pc-1 >/dev/null
	[ "$(mc_metric p1 mc_peer_writes_total)" -eq $((w0 + 1)) ]
	[ "$(mc_metric p1 mc_peer_reads_total)" -eq $((r0 + 1)) ]
	[ "$(mc_metric p1 mc_peer_bytes_in_total)" -eq $((bi0 + 4096)) ]
	[ "$(mc_metric p1 mc_peer_bytes_out_total)" -eq $((bo0 + 4096)) ]
	local m0
	m0="$(mc_metric p1 mc_peer_read_misses_total)"
	mc-rpc "$(mc_addr p1)" read tenant=default key=pc-absent || true
	[ "$(mc_metric p1 mc_peer_read_misses_total)" -eq $((m0 + 1)) ]
}

@test "metrics: the peer counts the copies it frees, by tier and reason" {
	local del='mc_peer_evictions_total{tier="dram",reason="delete"}'
	local rec='mc_peer_evictions_total{tier="dram",reason="reclaim"}'
	local d0 r0
	d0="$(mc_metric p1 "$del")"
	r0="$(mc_metric p1 "$rec")"
	[ -n "$d0" ] && [ -n "$r0" ]
	echo one >"$BATS_TEST_TMPDIR/one"
	mc-rpc --bulk "$BATS_TEST_TMPDIR/one" "$(mc_addr p1)" write tenant=t key=ev-1 version:=1
	# a newer version written over a copy frees the old one
	mc-rpc --bulk "$BATS_TEST_TMPDIR/one" "$(mc_addr p1)" write tenant=t key=ev-1 version:=2
	[ "$(mc_metric p1 "$del")" -eq $((d0 + 1)) ]
	mc-rpc "$(mc_addr p1)" drop tenant=t key=ev-1
	[ "$(mc_metric p1 "$del")" -eq $((d0 + 2)) ]
	# a drop of a copy the peer does not hold frees nothing
	mc-rpc "$(mc_addr p1)" drop tenant=t key=ev-1
	[ "$(mc_metric p1 "$del")" -eq $((d0 + 2)) ]
	# rm through the master: its drop reaches the peer as a delete
	echo x | mc-cli put ev-2
	mc-cli rm ev-2
	wait_until 5 mc_metric_at_least p1 "$del" $((d0 + 3))
	[ "$(mc_metric p1 "$rec")" -eq "$r0" ]
	# that drop came as a task of the master's, counted by its kind
	mc_metric_at_least p1 'mc_peer_tasks_total{kind="drop",outcome="done"}' 1
	[ "$(mc_metric p1 'mc_peer_tasks_total{kind="evict",outcome="failed"}')" -eq 0 ]
}

@test "metrics: malformed messages to the peer are counted" {
	local m0
	m0="$(mc_metric p1 mc_peer_malformed_messages_total)"
	mc-garbage --isolation --probe peer_stats "$(mc_addr p1)"
	mc_metric_at_least p1 mc_peer_malformed_messages_total $((${m0:-0} + 2))
}
