#!/usr/bin/env bats
#
# Dynamic hot replication's heat window and admission, observe mode
# (mc-replicate(1), mc-master(8) --dynamic-replication): reads count per
# tenant, key and reader's domain over a sliding window on the fake
# clock; a key that crosses the threshold is judged once, in the
# background, and counted as a copy admission would make, or turned
# down by reason; nothing is copied; off counts nothing. Enforce mode,
# which copies, is replicate-enforce.bats'.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-replicate
	mc_test_dir
}

teardown() {
	mc_stop_everything
}

# observe_cluster [PEERS]: an observing master (hot at 5 reads in 10 s)
# and PEERS (2) peers, on hosts of their own.
observe_cluster() {
	local n=${1:-2} i
	mc_start_master --http 127.0.0.1:0 --dynamic-replication observe \
		--dynamic-replication-window 10s --dynamic-replication-qps 0.5
	for ((i = 1; i <= n; i++)); do
		mc_start_peer "p$i" --host-id "host$i"
	done
}

# reads N KEY: N gets of KEY, each its own replica list.
reads() {
	local i
	for ((i = 0; i < $1; i++)); do
		mc-cli get "$2" >/dev/null
	done
}

status_field() {
	mc-replicate --json status | jq -r ".$1"
}

@test "replicate: observe mode judges a key that crosses the threshold once, counts the copy it would make, and copies nothing" {
	observe_cluster
	echo hot | mc-cli put hot
	echo cool | mc-cli put cool
	reads 4 hot
	reads 4 cool
	[ "$(status_field triggers)" -eq 0 ]
	reads 1 hot
	wait_until 10 mc_metric_at_least master mc_replication_would_propose_total 1
	# more reads in the same window judge it no second time
	reads 10 hot
	[ "$(status_field triggers)" -eq 1 ]
	[ "$(status_field judged)" -eq 1 ]
	[ "$(mc_metric master mc_replication_judged_total)" -eq 1 ]
	# observe copies nothing
	[ "$(mc_stat_json hot | jq '.replicas | length')" -eq 1 ]
	run -0 mc-replicate heat --top 2
	[ "${lines[0]}" = "15  default  -  hot" ]
	[ "${lines[1]}" = "4  default  -  cool" ]
}

@test "replicate: a key judged is judged again one window on, and the window slides on the fake clock" {
	observe_cluster
	echo x | mc-cli put k
	reads 5 k
	wait_until 10 mc_metric_at_least master mc_replication_judged_total 1
	# two windows on, the count starts over: four reads are not hot
	advance_clock 20000
	reads 4 k
	[ "$(mc-replicate --json heat | jq -s '.[0].reads')" -eq 4 ]
	[ "$(status_field judged)" -eq 1 ]
	reads 1 k
	wait_until 10 mc_metric_at_least master mc_replication_judged_total 2
}

@test "replicate: each reader's domain has its own count" {
	observe_cluster
	echo x | mc-cli put k
	for _ in 1 2 3 4; do MC_DOMAIN=rack-a mc-cli get k >/dev/null; done
	for _ in 1 2 3; do MC_DOMAIN=rack-b mc-cli get k >/dev/null; done
	[ "$(status_field triggers)" -eq 0 ]
	run -0 mc-replicate --json heat
	[ "$(jq -s 'map({(.domain): .reads}) | add | .["rack-a"]' <<<"$output")" -eq 4 ]
	[ "$(jq -s 'map({(.domain): .reads}) | add | .["rack-b"]' <<<"$output")" -eq 3 ]
	MC_DOMAIN=rack-a mc-cli get k >/dev/null
	wait_until 10 mc_metric_at_least master mc_replication_judged_total 1
	# a target must sit in the reader's domain: none of the peers does
	[ "$(mc_metric master 'mc_replication_rejected_total{reason="no_target"}')" -eq 1 ]
}

@test "replicate: a hot key no peer can take is turned down as no_target, and one in a batch read counts too" {
	observe_cluster 1
	echo x | mc-cli put only
	# the one peer holds it already: no peer to copy it to
	for _ in 1 2 3 4 5; do
		mc-rpc "$MC_MASTER" batch_get_replica_list 'keys:=["only"]' >/dev/null
	done
	wait_until 10 mc_metric_at_least master mc_replication_judged_total 1
	[ "$(mc_metric master 'mc_replication_rejected_total{reason="no_target"}')" -eq 1 ]
	[ "$(mc_metric master mc_replication_would_propose_total)" -eq 0 ]
	run -0 mc-replicate status
	assert_line "rejected no_target: 1"
}

@test "replicate: off, the default, counts nothing; mode switches a running master, and off forgets the window" {
	mc_start_master --http 127.0.0.1:0
	mc_start_peer p1
	echo x | mc-cli put k
	reads 10 k
	[ "$(mc_metric master mc_replication_heat_reads_total)" -eq 0 ]
	run -0 mc-replicate mode observe
	assert_output "mode: observe (was off)"
	reads 3 k
	[ "$(status_field heat_entries)" -eq 1 ]
	run -0 mc-replicate mode off
	[ "$(status_field heat_entries)" -eq 0 ]
	run -0 mc-replicate mode enforce
	assert_output "mode: enforce (was off)"
	run -64 mc-replicate mode sideways
	assert_output --partial "mode must be off, observe or enforce"
}

@test "replicate: bad flags name themselves" {
	run -64 mc-master --dynamic-replication sideways
	assert_output --partial "--dynamic-replication"
	run -64 mc-master --dynamic-replication-qps 0
	assert_output --partial "--dynamic-replication-qps"
	run -64 mc-master --dynamic-replication-max-replicas 17
	assert_output --partial "--dynamic-replication-max-replicas"
	run -64 mc-master --dynamic-replication-heat-entries 0
	assert_output --partial "--dynamic-replication-heat-entries"
	run -64 mc-replicate heat --top 0
	assert_output --partial "--top"
}

@test "replicate: readers of a key whose replicas cost the same spread over them" {
	mc_start_master
	local i
	for i in 1 2 3; do
		mc_start_peer "p$i" --host-id "host$i" --http 127.0.0.1:0
	done
	echo spread | mc-cli put --replicas 3 k
	# each mc-cli is a reader of its own
	for ((i = 0; i < 30; i++)); do
		mc-cli get k >/dev/null
	done
	local total=0 n
	for i in 1 2 3; do
		n="$(mc_metric "p$i" mc_peer_reads_total)"
		echo "# p$i served $n of 30 reads" >&3
		[ "$n" -ge 3 ]
		total=$((total + n))
	done
	[ "$total" -eq 30 ]
}

@test "replicate whatif: an access log replayed offline counts what a setting would propose, per key and domain, within max-replicas" {
	local log="$BATS_TEST_TMPDIR/access.log"
	# hot: 6 reads in 10 s from rack-a, then 6 more after two windows; cool: 3 reads
	{
		for t in 0 1000 2000 3000 4000 5000; do echo "$t hot rack-a"; done
		for t in 0 1000 2000; do echo "$t cool rack-a"; done
		for t in 30000 31000 32000 33000 34000 35000; do echo "$t hot rack-a"; done
		# from rack-b the same key is read 6 times too, hot there on its own
		for t in 40000 40001 40002 40003 40004 40005; do echo "$t hot rack-b"; done
		for t in 50000 51000 52000 53000 54000 55000; do echo "$t hot rack-a"; done
	} >"$log"
	run -0 mc-replicate --json whatif --threshold 0.5 --window 10s <"$log"
	jq -e '.reads == 27 and .threshold == 5 and .judged == 4 and .keys == 2 and
		.proposals == 3' <<<"$output"
	# one replica at most: each key and domain proposes once
	run -0 mc-replicate --json whatif --threshold 0.5 --window 10s --max-replicas 1 <"$log"
	jq -e '.proposals == 2' <<<"$output"
	# a lower threshold makes the cool key hot too
	run -0 mc-replicate --json whatif --threshold 0.3 --window 10s <"$log"
	jq -e '.keys == 3' <<<"$output"
	run -65 mc-replicate whatif <<<"0 k extra words"
	assert_output --partial "line 1: expected TIMESTAMP_MS KEY [DOMAIN]"
	run -64 mc-replicate whatif --window 0
	assert_output --partial "--window"
}
