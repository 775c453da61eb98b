#!/usr/bin/env bats
#
# Peers that evict for themselves (the one-eviction-path seed, its modes):
# a real master and peer, a put stream past the peer's high watermark,
# and what the peer did about it on its own; the modes and their
# configuration errors.

load helpers

# The puts here cross the watermarks while the fake clock stands still,
# and what is checked is the eviction ahead of need that follows: their
# copies are old the moment they commit (--young 0), as before young
# copies were kept (tests/cli/young.bats checks --young itself).
export MC_YOUNG=0

MIB=1048576

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

# cluster [PEER ARGS...]: a master and one peer of 64 MiB DRAM, both with metrics.
cluster() {
	mc_start_master --http 127.0.0.1:0 --put-wait 5s
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 --session-file "$MC_DIR/p1.session" "$@"
}

peer_metric() {
	mc_metric p1 "$1"
}

# fill N: N objects of 1 MiB under a/, four a batch, all of them stored.
fill() {
	run -0 mc-fill --prefix a/ -n "$1" --batch 4 --min-size 1MiB --max-size 1MiB put
}

# master_evicted: the copies the master's rounds evicted, every stage kind and trigger.
master_evicted() {
	mc_scrape master | awk '$1 ~ /^mc_evicted_objects_total[{]/ { n += $2 } END { print n + 0 }'
}

# verify_lost PREFIX N EVICTED: every one of the N objects under PREFIX
# reads back byte-exact, except exactly EVICTED missing ones: nothing
# went missing but what an eviction counted took, and every eviction
# counted took one.
verify_lost() {
	run -0 mc-fill --prefix "$1" -n "$2" --min-size 1MiB --max-size 1MiB verify
	echo "# $output; $3 evicted" >&3
	assert_output "verified $2 objects: $(($2 - $3)) exact, $3 missing, 0 unreadable, 0 wrong"
}

# occupancy_at_low: the lowest a drain left DRAM at is the low watermark
# (0.7) or under it by less than one 1 MiB copy of the 64 MiB tier: the
# drain stopped at the first count of copies under the mark.
occupancy_at_low() {
	local occ ppm
	occ="$(peer_metric 'mc_peer_tier_occupancy_min{tier="dram"}')"
	echo "# lowest occupancy a drain left: $occ (low watermark 0.7)" >&3
	ppm="$(printf '%.0f' "$(bc -l <<<"$occ * 1000000")")"
	[ "$ppm" -le 700000 ] && [ "$ppm" -gt $((700000 - 1000000 / 64)) ]
}

@test "local-evict: --eviction-mode and MC_EVICTION_MODE take local, master_ranked, master only" {
	mc_start_master
	run -64 mc-peer --master "$MC_MASTER" --dram 16MiB --eviction-mode bogus
	assert_output --partial "--eviction-mode"
	assert_output --partial "local, master_ranked or master"
	MC_EVICTION_MODE=Local run -64 mc-peer --master "$MC_MASTER" --dram 16MiB
	assert_output --partial "MC_EVICTION_MODE"
}

@test "local-evict: an --evict-policy that cannot be read or parsed refuses the start" {
	mc_start_master
	run -64 mc-peer --master "$MC_MASTER" --dram 16MiB --evict-policy "$MC_DIR/none.policy"
	assert_output --partial "none.policy"
	printf 'evict nosuchranker\n' >"$MC_DIR/bad.policy"
	run -64 mc-peer --master "$MC_MASTER" --dram 16MiB --evict-policy "$MC_DIR/bad.policy"
	assert_output --partial "bad.policy"
}

# occupancy_near_full: by default a drain stops one slice (one 1 MiB copy
# of the 64 MiB tier) under where it started, which is one slice under
# full less the writes in flight (a batch of four copies at most): the
# lowest it left DRAM at is over (64 - 1 - 4 - 1) / 64.
occupancy_near_full() {
	local occ ppm
	occ="$(peer_metric 'mc_peer_tier_occupancy_min{tier="dram"}')"
	echo "# lowest occupancy a drain left: $occ (headroom band)" >&3
	ppm="$(printf '%.0f' "$(bc -l <<<"$occ * 1000000")")"
	[ "$ppm" -ge $((58 * 1000000 / 64)) ] && [ "$ppm" -lt 1000000 ]
}

@test "local-evict: by default a peer keeps a headroom of one slice plus the writes in flight" {
	cluster
	grep -q "eviction mode local, planned with kv.policy" "$MC_DIR/p1.log"
	fill 200
	local used keys
	used="$(peer_metric 'mc_peer_tier_bytes_used{tier="dram"}')"
	keys="$(peer_metric 'mc_peer_local_evictions_total{event="key"}')"
	[ "$keys" -gt 0 ]
	occupancy_near_full
	# the puts since the last drain stayed under one slice short of full
	[ "$used" -le $((63 * MIB)) ] && [ "$used" -ge $((58 * MIB)) ]
	# at rest nothing is in flight: the band is one and two slices under full
	[ "$(peer_metric 'mc_peer_tier_inflight_bytes{tier="dram"}')" -eq 0 ]
	[ "$(peer_metric 'mc_peer_tier_band_high_bytes{tier="dram"}')" -eq $((63 * MIB)) ]
	[ "$(peer_metric 'mc_peer_tier_band_low_bytes{tier="dram"}')" -eq $((62 * MIB)) ]
	verify_lost a/ 200 "$keys"
}

@test "local-evict: with --dram-watermarks a peer past its high watermark drains itself to its low one" {
	cluster --dram-watermarks 0.9:0.7
	fill 200
	[ "$(peer_metric 'mc_peer_tier_band_high_bytes{tier="dram"}')" -eq $((64 * MIB * 9 / 10)) ]
	local used keys
	used="$(peer_metric 'mc_peer_tier_bytes_used{tier="dram"}')"
	keys="$(peer_metric 'mc_peer_local_evictions_total{event="key"}')"
	[ "$keys" -gt 0 ]
	# each drain went down to the low mark, and the puts since stayed under the high one
	occupancy_at_low
	[ "$used" -le $((64 * MIB * 9 / 10)) ]
	verify_lost a/ 200 "$keys"
}

@test "local-evict: a group is left to the master: the peer says it is stalled, the master's round evicts it" {
	# 60 copies of the 64 MiB tier cross a 0.9 watermark: the wide band is what this needs
	cluster --dram-watermarks 0.9:0.7
	run -0 mc-fill --prefix g/ -n 60 --batch 4 --min-size 1MiB --max-size 1MiB --group g put
	stalled() {
		[ "$(peer_metric 'mc_peer_local_evictions_total{event="stalled"}')" -ge 1 ]
	}
	wait_until 10 stalled
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="key"}')" -eq 0 ]
	# the master's round for it evicts the group whole
	round_ran() {
		[ "$(mc_metric master 'mc_evict_rounds_total{trigger="stalled"}')" -ge 1 ]
	}
	wait_until 10 round_ran
	verify_lost g/ 60 "$(master_evicted)"
}

@test "local-evict: master_ranked takes its victims from the master's ranking first" {
	cluster --eviction-mode master_ranked
	fill 100
	echo "# $(peer_metric mc_peer_rank_queries_total) rank queries, $(peer_metric 'mc_peer_local_evictions_total{event="master_key"}') master keys" >&3
	[ "$(peer_metric 'mc_peer_rank_queries_total')" -gt 0 ]
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')" -gt 0 ]
	[ "$(mc_metric master 'mc_rank_queries_total')" -gt 0 ]
	verify_lost a/ 100 $(($(peer_metric 'mc_peer_local_evictions_total{event="key"}') +
		$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')))
}

@test "local-evict: in master mode the peer leaves DRAM to the master's rounds" {
	cluster --eviction-mode master
	fill 100
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="round"}')" -eq 0 ]
	# the master's watermark rounds made the room instead
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -ge 1 ]
	[ "$(master_evicted)" -gt 0 ]
	verify_lost a/ 100 "$(master_evicted)"
}

# read_with GRANT-JSON: read key rd from p1 as a reader holding the
# replica list in $1 does: its grant, under its lease.
read_with() {
	local out="$1" g v l
	g="$(jq -r '.replicas[0].grant' <<<"$out")"
	v="$(jq -r .version <<<"$out")"
	l="$(jq -r .lease_id <<<"$out")"
	mc-rpc -o /dev/null "$(mc_addr p1)" read tenant=default key=rd version:="$v" size:=4 \
		grant:=b64:"$g" lease_id:="$l" >/dev/null
}

# BEATS: the master's count of the heartbeats it answered.
BEATS='mc_requests_total{method="peer_heartbeat"}'

@test "local-evict: a read the master did not see reaches it in a heartbeat, as recency" {
	cluster
	echo abc >"$BATS_TEST_TMPDIR/f"
	mc-cli put rd <"$BATS_TEST_TMPDIR/f"
	mc-cli put other <"$BATS_TEST_TMPDIR/f"
	local out before
	out="$(mc-rpc "$MC_MASTER" get_replica_list key=rd)"
	before="$(mc_stat_json rd | jq .access_count)"
	# the first read is the one the master granted; the second went past it
	read_with "$out"
	read_with "$out"
	# done reading: the lease goes, so the ranking may offer rd again
	mc-rpc "$MC_MASTER" release lease_id:="$(jq -r .lease_id <<<"$out")" >/dev/null
	recorded() {
		[ "$(mc_metric master 'mc_local_reads_total{result="recorded"}')" -ge 1 ]
	}
	wait_until 10 recorded
	# recency, not frequency: the read count is what the replica list made it
	assert_equal "$(mc_stat_json rd | jq .access_count)" "$before"
	# and rd now ranks behind the key written after it
	run -0 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$(mc_peer_id "$(mc_addr p1)")" \
		"$(mc_session p1)" tier=dram
	assert_equal "$(jq -r '[.keys[].key] | join(" ")' <<<"$output")" "other rd"
}

@test "local-evict: readers the master handed one cached grant are each seen once, none as a local read" {
	cluster
	echo abc >"$BATS_TEST_TMPDIR/f"
	mc-cli put rd <"$BATS_TEST_TMPDIR/f"
	local one two b
	one="$(mc-rpc "$MC_MASTER" get_replica_list key=rd)"
	two="$(mc-rpc "$MC_MASTER" get_replica_list key=rd)"
	# the master's grant cache gave both lists the same grant, each its own lease
	assert_equal "$(jq -r '.replicas[0].grant' <<<"$two")" "$(jq -r '.replicas[0].grant' <<<"$one")"
	[ "$(jq -r .lease_id <<<"$two")" != "$(jq -r .lease_id <<<"$one")" ]
	read_with "$one"
	read_with "$two"
	mc-cli get rd >/dev/null
	mc-cli get rd >/dev/null
	# two heartbeats after the reads have nothing to report: the master saw each read
	b="$(mc_metric master "$BEATS")"
	wait_until 10 mc_metric_at_least master "$BEATS" $((b + 2))
	assert_equal "$(mc_metric master 'mc_local_reads_total{result="recorded"}')" 0
	# a second read under one list is a read the master did not see
	read_with "$one"
	recorded() {
		[ "$(mc_metric master 'mc_local_reads_total{result="recorded"}')" -eq 1 ]
	}
	wait_until 10 recorded
}

@test "local-evict: a ranking answer held at the master does not hold the peer's eviction up" {
	export MC_FAULT_DIR="$MC_DIR/fault"
	mkdir -p "$MC_FAULT_DIR"
	MC_FAULT='reply.evict_candidates:pause' mc_start_master --http 127.0.0.1:0 --put-wait 5s
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 --eviction-mode master_ranked
	mc-fill --prefix a/ -n 80 --batch 4 --min-size 1MiB --max-size 1MiB put >/dev/null 2>&1 &
	local filler=$!
	paused() { [ -e "$MC_FAULT_DIR/reply.evict_candidates.paused" ]; }
	wait_until 20 paused
	# the master is stopped in its answer; the peer evicts by its own plan meanwhile
	evicted_locally() {
		[ "$(peer_metric 'mc_peer_local_evictions_total{event="key"}')" -gt 0 ]
	}
	wait_until 10 evicted_locally
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')" -eq 0 ]
	[ "$(peer_metric 'mc_peer_rank_queries_total')" -eq 1 ]
	touch "$MC_FAULT_DIR/reply.evict_candidates"
	wait "$filler"
	# the held answer names copies the peer freed meanwhile: they count as nothing
	verify_lost a/ 80 $(($(peer_metric 'mc_peer_local_evictions_total{event="key"}') +
		$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')))
}
