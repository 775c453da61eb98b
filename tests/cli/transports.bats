#!/usr/bin/env bats
#
# Transports advertised and chosen (mc/transport.h): a peer lists the
# transports it serves in its registration, a client in its hello, and
# every replica the master hands out says which one the client is to
# reach that peer with; tcp when they share no other, or when either
# side said nothing (an older peer or client).
#
# The peers here are played with mc-rpc, so the master is tested on its
# own.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# register NAME [FIELDS...]: a peer at $MC_DIR/NAME.sock with some dram; prints its id.
register() {
	local name="$1"
	shift
	mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/$name.sock" \
		'tiers:=[{"tier":"dram","capacity":100000,"used":0}]' "$@" | jq -r .peer_id
}

# put_transport KEY [HELLO-FIELDS...]: the transport of KEY's one replica
# in the answer to its put_start, from a client whose hello sent the fields.
put_transport() {
	local key="$1"
	shift
	mc-rpc "$MC_MASTER" hello "$@" --then put_start key="$key" size:=4 replicas:=1 \
		checksum:=1 | tail -n 1 | jq -r '.replicas[0].transport'
}

@test "transports: a client and a peer that both list one reach each other with it" {
	mc_start_master
	register p 'transports:=["rdma","tcp"]' >/dev/null
	[ "$(put_transport a 'transports:=["rdma","tcp"]')" = rdma ]
}

@test "transports: the client's order of preference decides between two shared ones" {
	mc_start_master
	register p 'transports:=["shm","rdma","tcp"]' >/dev/null
	[ "$(put_transport a 'transports:=["rdma","shm","tcp"]')" = rdma ]
}

@test "transports: nothing shared, or nothing said on either side, is tcp" {
	mc_start_master
	register p 'transports:=["rdma","tcp"]' >/dev/null
	[ "$(put_transport a 'transports:=["shm","tcp"]')" = tcp ]
	[ "$(put_transport b)" = tcp ]
	mc_stop_all
	mc_start_master
	register q >/dev/null
	[ "$(put_transport c 'transports:=["rdma","tcp"]')" = tcp ]
}

@test "transports: a registration whose transports are not names is refused" {
	mc_start_master
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/p.sock" \
		'tiers:=[{"tier":"dram","capacity":100000,"used":0}]' 'transports:=[1]'
	[[ "$output" == *"transports[0] is not a name"* ]]
	run -1 mc-rpc "$MC_MASTER" hello transports=tcp
	[[ "$output" == *"'transports' must be an array of names"* ]]
}

@test "transports: the real peer and client list tcp, and a read's replicas carry it" {
	mc_start_master
	mc_start_peer peer1
	printf 'abcd' >"$MC_DIR/v"
	run -0 mc-cli put k "$MC_DIR/v"
	run -0 mc-rpc "$MC_MASTER" peers
	[ "$(jq -c '.peers[0].transports' <<<"$output")" = '["tcp"]' ]
	run -0 mc-rpc "$MC_MASTER" hello 'transports:=["tcp"]' --then get_replica_list key=k
	[ "$(tail -n 1 <<<"$output" | jq -r '.replicas[0].transport')" = tcp ]
}
