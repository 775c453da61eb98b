#!/usr/bin/env bats
#
# Errors that say the cause and the fix, each with its own exit status:
# too few peers for --replicas, an object larger than any tier, a cache
# full of what cannot be evicted, an existing key, a replica's peer that
# is down, a master whose name does not resolve. Clusters differ per
# test, so each starts its own.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-softpin mc-snapshot mc-bench
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

@test "errors: more --replicas than live peers says how many are alive and how many were asked (69)" {
	mc_start_master --peer-ttl 1h
	mc_start_peers 2
	run -69 mc-cli put many - --replicas 3 <<<"x"
	assert_output "mc-cli: cannot put 'many': 3 replicas need 3 live peers; 2 are alive"
	run -1 mc-cli exist many
}

@test "errors: replicas that only some peers' tiers could hold is too few peers, not no space (69)" {
	mc_start_master --peer-ttl 1h
	MC_PEER_DRAM=4MiB mc_start_peer small
	MC_PEER_DRAM=16MiB mc_start_peer big
	mc_random_file "$BATS_TEST_TMPDIR/six" $((6 << 20))
	run -69 mc-cli put six "$BATS_TEST_TMPDIR/six" --replicas 2
	assert_output "mc-cli: cannot put 'six': 2 replicas of 6MiB need 2 peers with a tier that large; 1 has one"
}

@test "errors: an object larger than any tier names the largest tier (1)" {
	mc_start_master --peer-ttl 1h
	MC_PEER_DRAM=4MiB mc_start_peer small
	MC_PEER_DRAM=8MiB mc_start_peer big
	mc_random_file "$BATS_TEST_TMPDIR/ten" $((10 << 20))
	local id
	id="$(mc_peer_id "$(mc_addr big)")"
	run -1 mc-cli put ten "$BATS_TEST_TMPDIR/ten"
	assert_output "mc-cli: cannot put 'ten': 10MiB is larger than any tier: the largest is 8MiB (dram of peer $id)"
	# nothing to wait for: the master answered at once, the client did not ask again
	refute_output --partial "waited"
}

@test "errors: a put of an existing key suggests --upsert (1)" {
	mc_start_master --peer-ttl 1h
	mc_start_peers 1
	echo one | mc-cli put k
	run -1 mc-cli put k - <<<"two"
	assert_output "mc-cli: cannot put 'k': already exists (use --upsert to replace it)"
	echo two | mc-cli put k --upsert
	run -0 mc-cli get k
	assert_output two
}

@test "errors: a master whose host name does not resolve is unavailable (69), in every tool" {
	run -69 mc-cli -m nosuchhost.invalid:7300 ls
	assert_output --partial "cannot resolve 'nosuchhost.invalid'"
	run -69 mc-softpin -m nosuchhost.invalid:7300 stats
	assert_output --partial "cannot resolve 'nosuchhost.invalid'"
	run -69 mc-snapshot -m nosuchhost.invalid:7300 save -o "$BATS_TEST_TMPDIR/s.mcs"
	assert_output --partial "cannot resolve 'nosuchhost.invalid'"
	run -69 mc-bench -m nosuchhost.invalid:7300 get -n 1
	assert_output --partial "cannot resolve 'nosuchhost.invalid'"
	# the daemons too, for the master they register with and where they listen
	run -69 mc-peer --master nosuchhost.invalid:7300 --dram 16MiB --listen "unix:$MC_DIR/p.sock"
	assert_output --partial "invalid --master 'nosuchhost.invalid:7300': cannot resolve"
	run -69 mc-master --listen nosuchhost.invalid:7300
	assert_output --partial "cannot resolve 'nosuchhost.invalid'"
	# a malformed address is still a usage error
	run -64 mc-peer --master nosuchhost.invalid:http --dram 16MiB
	run -64 mc-cli -m nosuchhost.invalid:http ls
	assert_output --partial "port must be a number"
}

@test "errors: a get whose only replica's peer died names the peer and when the master drops it (69)" {
	# a peer TTL of an hour: the master lists the dead peer's replica all through the test
	mc_start_master --peer-ttl 1h
	mc_start_peers 1
	echo bytes | mc-cli put only
	local addr id
	addr="$(mc_addr peer1)"
	id="$(mc_peer_id "$addr")"
	mc_kill9 peer1
	run -69 mc-cli get only
	assert_output --regexp "^mc-cli: cannot read 'only': peer $id \\($addr\\) is not answering \\(.*connection refused\\); the master drops it in (59\\.[0-9]+m|60m|1h) unless it comes back$"
}

@test "errors: a cache full of hard pins says so, with how much of the tier they hold (1)" {
	mc_start_master --peer-ttl 1h --put-wait 100ms
	MC_PEER_DRAM=16MiB mc_start_peers 1
	mc_random_file "$BATS_TEST_TMPDIR/four" $((4 << 20))
	local k
	for k in 1 2 3; do
		mc-cli put "pin$k" "$BATS_TEST_TMPDIR/four" --hard-pin
	done
	mc_random_file "$BATS_TEST_TMPDIR/eight" $((8 << 20))
	run -1 mc-cli put more "$BATS_TEST_TMPDIR/eight"
	assert_output --regexp "^mc-cli: cannot put 'more': no space for 8MiB on 1 peer: hard pins hold 12MiB \\(75%\\) of the 16MiB of dram that could take it( \\(waited [0-9]+ ms for eviction\\))?$"
	# room that eviction can make is still plain no space, and is made
	mc-cli rm pin3
	mc-cli put plain "$BATS_TEST_TMPDIR/four"
	run -0 mc-cli put more "$BATS_TEST_TMPDIR/eight"
	run -1 mc-cli exist plain
}

@test "errors: a cache full of leased and soft-pinned copies names each hold (1)" {
	mc_start_master --peer-ttl 1h --lease-ttl 1h --put-wait 0
	# the master's rounds, which know the leases, are the only eviction
	MC_PEER_DRAM=16MiB mc_start_peers 1 --eviction-mode master
	mc_random_file "$BATS_TEST_TMPDIR/four" $((4 << 20))
	mc-cli put soft "$BATS_TEST_TMPDIR/four" --soft-pin enable:1h
	mc-cli put read1 "$BATS_TEST_TMPDIR/four"
	mc-cli put read2 "$BATS_TEST_TMPDIR/four"
	mc_hold_lease read1
	mc_hold_lease read2
	mc_random_file "$BATS_TEST_TMPDIR/eight" $((8 << 20))
	run -1 mc-cli put more "$BATS_TEST_TMPDIR/eight"
	assert_output "mc-cli: cannot put 'more': no space for 8MiB on 1 peer: soft pins hold 4MiB (25%), read leases 8MiB (50%) of the 16MiB of dram that could take it"
}

# peer_alive_cell NAME: the ALIVE cell of the peer's row in `mc-cli peers`.
peer_alive_cell() {
	mc-cli peers | awk -v a="$(mc_addr "$1")" '$2 == a { print $5 ($5 == "silent" ? " " $6 : "") }'
}

peer_silent() {
	[[ "$(peer_alive_cell "$1")" == silent* ]]
}

@test "peers: a killed peer shows how long it has been silent, not ALIVE yes, until the master drops it" {
	mc_start_master --peer-ttl 1h
	mc_start_peers 2
	run -0 peer_alive_cell peer1
	assert_output yes
	mc_kill9 peer1
	# two heartbeat periods without one: it missed a heartbeat
	wait_until 10 peer_silent peer1
	run -0 peer_alive_cell peer1
	assert_output --regexp '^silent [0-9]+(\.[0-9]+)?s$'
	run -0 peer_alive_cell peer2
	assert_output yes
	# --json: the master still counts it alive, silent for that many ms
	run -0 mc_peers_json
	jq_any --arg a "$(mc_addr peer1)" \
		'.addr == $a and .alive == true and .silent_ms >= 2 * .heartbeat_ms' <<<"$output"
	jq_any --arg a "$(mc_addr peer2)" \
		'.addr == $a and .alive == true and .silent_ms < 2 * .heartbeat_ms' <<<"$output"
}

# tenant_listed NAME: cluster stat lists tenant NAME.
tenant_listed() {
	mc-cli --json stat | jq -e --arg t "$1" 'any(.tenants[]; .tenant == $t)' >/dev/null
}

@test "tenants: reads under a new tenant create nothing; its first put does" {
	mc_start_master --peer-ttl 1h --http 127.0.0.1:0
	mc_start_peers 1
	run -1 mc-cli -t newt exist k
	run -1 mc-cli -t newt get k
	assert_output "mc-cli: cannot get 'k': not found"
	run -1 mc-cli -t newt stat k
	run -0 mc-cli -t newt ls
	assert_output ""
	run -0 mc-cli -t newt stat
	run -1 tenant_listed newt
	# a reader connected before the tenant existed sees what a put wrote
	# since: it holds the bulk of a candidates answer unread meanwhile
	mkfifo "$BATS_TEST_TMPDIR/stall"
	mc-rpc --tenant newt --stall "$BATS_TEST_TMPDIR/stall" "$MC_MASTER" candidates \
		--then exist key=k >"$BATS_TEST_TMPDIR/reader.out" &
	local reader=$!
	# its hello came before the put: the tenant did not exist then
	wait_until 10 mc_metric_at_least master 'mc_requests_total{method="candidates"}' 1
	run -1 tenant_listed newt
	echo v | mc-cli -t newt put k
	tenant_listed newt
	echo go >"$BATS_TEST_TMPDIR/stall"
	wait "$reader"
	run -0 tail -n 1 "$BATS_TEST_TMPDIR/reader.out"
	assert_output '{"exists":true}'
}
