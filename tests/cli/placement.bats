#!/usr/bin/env bats
#
# Where replicas go (distinct hosts first, most free space first, stable
# tie-break by peer id), which replica a get reads (same host, then same
# domain), and that peers free their copies when the master drops them.
# Clusters differ per test (hosts, domains, sizes), so each starts its own.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_test_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h --lease-ttl 1h
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# peer_stat NAME JQ: a field of the peer's own peer_stats.
peer_stat() {
	mc-rpc "$(mc_addr "$1")" peer_stats | jq -r "$2"
}

peer_reads() {
	peer_stat "$1" .reads
}

peer_objects() {
	peer_stat "$1" '.tiers[] | select(.tier == "dram") | .objects'
}

# peer_objects_are NAME N
peer_objects_are() {
	[ "$(peer_objects "$1")" = "$2" ]
}

# name_of ADDR: which of our peers has that address.
name_of() {
	local f
	for f in "$MC_DIR"/*.addr; do
		if [ "$(cat "$f")" = "$1" ]; then
			basename "$f" .addr
			return 0
		fi
	done
	return 1
}

# placed_on KEY: the names of the peers holding KEY, sorted, space separated.
placed_on() {
	local a names=()
	for a in $(mc_replica_addrs "$1"); do
		names+=("$(name_of "$a")")
	done
	printf '%s\n' "${names[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

@test "placement: 2 replicas go to 2 distinct hosts while another host fits" {
	mc_start_peer a1 --host-id host-a
	mc_start_peer a2 --host-id host-a
	mc_start_peer b1 --host-id host-b
	local k
	for k in 1 2 3 4 5 6; do
		echo "$k" | mc-cli put "hosts/$k" --replicas 2
		# b1 is the only peer on host-b: it must hold one copy of each
		placed_on "hosts/$k" | grep -qw b1
		[ "$(placed_on "hosts/$k" | wc -w)" -eq 2 ]
	done
}

@test "placement: with a single host left, replicas share it on distinct peers" {
	mc_start_peer a1 --host-id host-a
	mc_start_peer a2 --host-id host-a
	echo x | mc-cli put same-host --replicas 2
	[ "$(placed_on same-host)" = "a1 a2" ]
}

@test "placement: a single replica goes to the peer with the most free space" {
	MC_PEER_DRAM=16MiB mc_start_peer small --host-id h1
	MC_PEER_DRAM=64MiB mc_start_peer big --host-id h2
	echo x | mc-cli put free-1
	[ "$(placed_on free-1)" = big ]
}

@test "placement: equal free space goes to the lower peer id, then to the emptier peer" {
	MC_PEER_DRAM=16MiB mc_start_peer first --host-id h1
	MC_PEER_DRAM=16MiB mc_start_peer second --host-id h2
	[ "$(mc_peer_id "$(mc_addr first)")" -lt "$(mc_peer_id "$(mc_addr second)")" ]
	head -c 4096 /dev/urandom | mc-cli put tie-1
	[ "$(placed_on tie-1)" = first ]
	head -c 4096 /dev/urandom | mc-cli put tie-2
	[ "$(placed_on tie-2)" = second ]
}

@test "placement: more replicas than live peers fails with too few peers" {
	mc_start_peer a1
	mc_start_peer a2
	run -69 mc-cli put too-many - --replicas 3 <<<"x"
	assert_output --partial "3 replicas need 3 live peers; 2 are alive"
	run -1 mc-cli exist too-many
}

@test "placement: a peer too small for the object is skipped" {
	MC_PEER_DRAM=4MiB mc_start_peer tiny --host-id h1
	MC_PEER_DRAM=16MiB mc_start_peer roomy --host-id h2
	local src="$BATS_TEST_TMPDIR/src"
	mc_random_file "$src" $((6 << 20))
	mc-cli put skip-tiny "$src"
	[ "$(placed_on skip-tiny)" = roomy ]
	run -69 mc-cli put skip-tiny-2 "$src" --replicas 2
	assert_output --partial "need 2 peers with a tier that large; 1 has one"
}

@test "placement: get reads the replica on the client's own host" {
	mc_start_peer local --host-id "$(hostname)"
	mc_start_peer far --host-id far-away-host
	echo x | mc-cli put near --replicas 2
	[ "$(placed_on near)" = "far local" ]
	local r0 f0 k
	r0="$(peer_reads local)"
	f0="$(peer_reads far)"
	for k in 1 2 3 4 5; do
		mc-cli get near >/dev/null
	done
	[ "$(peer_reads local)" -eq $((r0 + 5)) ]
	[ "$(peer_reads far)" -eq "$f0" ]
}

@test "placement: get reads the replica in the client's domain (MC_DOMAIN) when none is on its host" {
	mc_start_peer d1 --host-id x1 --domain dom-1
	mc_start_peer d2 --host-id x2 --domain dom-2
	echo x | mc-cli put dom --replicas 2
	local r1 r2 k
	r1="$(peer_reads d1)"
	r2="$(peer_reads d2)"
	for k in 1 2 3; do
		MC_DOMAIN=dom-2 mc-cli get dom >/dev/null
	done
	[ "$(peer_reads d2)" -eq $((r2 + 3)) ]
	[ "$(peer_reads d1)" -eq "$r1" ]
	for k in 1 2; do
		MC_DOMAIN=dom-1 mc-cli get dom >/dev/null
	done
	[ "$(peer_reads d1)" -eq $((r1 + 2)) ]
}

@test "placement: get falls back to the far replica when the near peer is dead" {
	mc_start_peer local --host-id "$(hostname)"
	mc_start_peer far --host-id far-away-host
	local src="$BATS_TEST_TMPDIR/src"
	mc_random_file "$src" 300000
	mc-cli put fallback "$src" --replicas 2
	mc_kill9 local
	mc-cli get fallback | cmp "$src" -
}

@test "placement: rm makes every peer free its copy (drop notification)" {
	mc_start_peer p1
	mc_start_peer p2
	head -c 1048576 /dev/urandom | mc-cli put dropped --replicas 2
	peer_objects_are p1 1
	peer_objects_are p2 1
	mc-cli rm dropped
	wait_until 5 peer_objects_are p1 0
	wait_until 5 peer_objects_are p2 0
}

@test "placement: rm --prefix makes the peers free every removed copy" {
	mc_start_peer p1
	local k
	for k in 1 2 3; do
		echo "$k" | mc-cli put "gone/$k"
	done
	echo keep | mc-cli put kept
	peer_objects_are p1 4
	mc-cli rm --prefix gone/
	wait_until 5 peer_objects_are p1 1
	[ "$(mc-cli get kept)" = keep ]
}

@test "placement: upsert to another size on the same peer keeps only the new copy readable" {
	mc_start_peer p1
	printf 'old' | mc-cli put up1
	mc_random_file "$BATS_TEST_TMPDIR/new" 50000
	mc-cli put up1 "$BATS_TEST_TMPDIR/new" --upsert
	# the drop of the old version must not free the new one
	wait_until 5 peer_objects_are p1 1
	mc-cli get up1 | cmp "$BATS_TEST_TMPDIR/new" -
	peer_objects_are p1 1
}

@test "placement: upsert that moves an object drops the old peer's copy" {
	MC_PEER_DRAM=16MiB mc_start_peer p1 --host-id h1
	MC_PEER_DRAM=16MiB mc_start_peer p2 --host-id h2
	# p1 (lower id) takes the first object; p2 is then emptier
	head -c 100000 /dev/urandom | mc-cli put mover
	[ "$(placed_on mover)" = p1 ]
	mc_random_file "$BATS_TEST_TMPDIR/new" 200000
	mc-cli put mover "$BATS_TEST_TMPDIR/new" --upsert
	mc-cli get mover | cmp "$BATS_TEST_TMPDIR/new" -
	if [ "$(placed_on mover)" = p2 ]; then
		wait_until 5 peer_objects_are p1 0
	fi
	wait_until 5 eval '[ $(( $(peer_objects p1) + $(peer_objects p2) )) -eq 1 ]'
}
