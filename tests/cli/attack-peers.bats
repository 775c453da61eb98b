#!/usr/bin/env bats
#
# One identity per peer: the attacks of a compromised peer host, or of a
# local process, on the master's table of peers, replayed. Each peer may
# have a secret of its own (mc-cli auth add --peer NAME) that the master
# binds its id to; addresses are compared in one spelling; a declared
# capacity has a bound (--max-peer-capacity); and without an auth file a
# peer's calls come from its own connection or carry its session.

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

# identities: an auth file with tenant alice, admin ops and peers rack1-a
# and rack1-b, each with a secret of its own.
identities() {
	AUTH="$BATS_TEST_TMPDIR/auth"
	mc-cli auth add alice --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/alice.tok"
	mc-cli auth add ops --admin --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/ops.tok"
	mc-cli auth add --peer rack1-a --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/rack1-a.tok"
	mc-cli auth add --peer rack1-b --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/rack1-b.tok"
	chmod 600 "$BATS_TEST_TMPDIR"/*.tok
	MC_TOKEN="$(tok ops)"
	export MC_TOKEN
}

tok() {
	cat "$BATS_TEST_TMPDIR/$1.tok"
}

# dram CAPACITY: a tiers field of one DRAM tier.
dram() {
	echo "tiers:=[{\"tier\":\"dram\",\"capacity\":$1,\"used\":0}]"
}

refused() {
	mc_metric master "mc_peer_register_refused_total{reason=\"$1\"}"
}

@test "attack: aliases of a live peer's address (127.0.0.01, 0x7f.0.0.1, 2130706433) are refused, and its next write goes to it" {
	identities
	mc_start_master --auth-file "$AUTH" --http 127.0.0.1:0
	mc_start_peer a --listen 127.0.0.1:0 --peer-secret-file "$BATS_TEST_TMPDIR/rack1-a.tok"
	local port="${MC_LAST_ADDR##*:}" alias
	for alias in "127.0.0.01:$port" "0x7f.0.0.1:$port" "2130706433:$port" "127.0.0.1:0$port"; do
		run -1 mc-rpc --token "$(tok rack1-b)" "$MC_MASTER" peer_register addr="$alias" \
			"$(dram 268435456)"
		assert_output --partial "permission denied: 127.0.0.1:$port is the address of peer 'rack1-a'"
		run -1 mc-rpc --token "$(tok rack1-a)" "$MC_MASTER" peer_register addr="$alias" \
			"$(dram 268435456)"
		assert_output --partial "permission denied: live peer"
	done
	[ "$(refused address)" -eq 8 ]
	# claiming 2^64 - 1 bytes there too is refused whatever the address
	run -1 mc-rpc --token "$(tok rack1-b)" "$MC_MASTER" peer_register addr="127.0.0.01:$port" \
		"$(dram 18446744073709551615)"
	assert_output --partial "over --max-peer-capacity"
	mc-cli --json peers | jq -s -e '[.. | objects | select(.peer_id? != null)] | length == 1'
	# the next tenant's write lands on the real peer, whole
	head -c 100000 /dev/urandom >"$BATS_TEST_TMPDIR/v"
	MC_TOKEN="$(tok alice)" mc-cli put k <"$BATS_TEST_TMPDIR/v"
	MC_TOKEN="$(tok alice)" mc-cli get k | cmp - "$BATS_TEST_TMPDIR/v"
	[ "$(MC_TOKEN="$(tok alice)" mc_replica_addrs k)" = "127.0.0.1:$port" ]
}

@test "attack: a peer declaring 2^64 - 1 bytes is refused past --max-peer-capacity, at registration and in a heartbeat" {
	mc_start_master --http 127.0.0.1:0 --max-peer-capacity 1GiB
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/big.sock" \
		"$(dram 18446744073709551615)"
	assert_output --partial "over --max-peer-capacity 1073741824"
	# two tiers that are each within it but not summed, and a sum that would wrap
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/big.sock" \
		'tiers:=[{"tier":"dram","capacity":1073741824,"used":0},{"tier":"ssd","capacity":18446744073709551615,"used":0}]'
	assert_output --partial "over --max-peer-capacity"
	[ "$(refused capacity)" -eq 2 ]
	mc-cli --json peers | jq -s -e '[.. | objects | select(.peer_id? != null)] | length == 0'
	# a peer within it is taken, and a heartbeat cannot raise it past
	local id
	id="$(mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/p.sock" "$(dram 268435456)" |
		mc_keep_session)"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id" "$(mc_session "$id")" \
		"$(dram 18446744073709551615)"
	assert_output --partial "over --max-peer-capacity"
	mc-cli --json peers | jq -s -e --arg a "unix:$MC_DIR/p.sock" '[.. | objects |
		select(.addr? == $a) | .tiers[]? | select(.tier == "dram") | .capacity] == [268435456]'
	# the default bound is finite
	mc_stop master
	mc_start_master --http 127.0.0.1:0
	run -1 mc-rpc "$MC_MASTER" peer_register addr="unix:$MC_DIR/big.sock" \
		"$(dram 18446744073709551615)"
	assert_output --partial "over --max-peer-capacity 1125899906842624"
}

@test "attack: one peer's secret cannot resume another, speak for it with its session, or take its address" {
	identities
	mc_start_master --auth-file "$AUTH" --http 127.0.0.1:0 --peer-ttl 1h
	mc_start_peer a --peer-secret-file "$BATS_TEST_TMPDIR/rack1-a.tok" \
		--session-file "$MC_DIR/a.session"
	local addr="$MC_LAST_ADDR" id session
	id="$(mc_peer_id "$addr")"
	read -r _ session <"$MC_DIR/a.session"
	# the session, read off rack1-a's host, under rack1-b's secret
	run -1 mc-rpc --token "$(tok rack1-b)" "$MC_MASTER" peer_heartbeat peer_id:="$id" \
		session="$session"
	assert_output --partial "permission denied: peer $id is peer 'rack1-a', not 'rack1-b'"
	run -1 mc-rpc --token "$(tok rack1-b)" "$MC_MASTER" peer_inventory peer_id:="$id" \
		session="$session" done:=true 'items:=[]'
	assert_output --partial "is peer 'rack1-a'"
	run -1 mc-rpc --token "$(tok rack1-b)" "$MC_MASTER" peer_unregister peer_id:="$id" \
		session="$session"
	assert_output --partial "is peer 'rack1-a'"
	run -1 mc-rpc --token "$(tok rack1-b)" "$MC_MASTER" peer_register addr="$addr" \
		"$(dram 268435456)" "resume:={\"peer_id\":$id,\"session\":\"$session\",\"since\":0}"
	assert_output --partial "permission denied: $addr is the address of peer 'rack1-a'"
	# rack1-a's own secret with the session is rack1-a, from any connection
	run -0 mc-rpc --token "$(tok rack1-a)" "$MC_MASTER" evict_candidates peer_id:="$id" \
		session="$session" tier=dram
	# crashed, its address is still its own, not rack1-b's
	mc_kill9 a
	wait_until 10 grep -q "peer $id ($addr) control connection closed" "$MC_DIR/master.log"
	run -1 mc-rpc --token "$(tok rack1-b)" "$MC_MASTER" peer_register addr="$addr" \
		"$(dram 268435456)"
	assert_output --partial "is the address of peer 'rack1-a'"
	[ "$(refused address)" -eq 2 ]
	# and rack1-a comes back to it, as the same peer
	mc_start_peer a --peer-secret-file "$BATS_TEST_TMPDIR/rack1-a.tok" \
		--session-file "$MC_DIR/a.session"
	[ "$(mc_peer_id "$addr")" = "$id" ]
	grep -q "resumed its registration" "$MC_DIR/master.log"
}

@test "attack: one identity is one live peer: its secret registers no second peer elsewhere" {
	identities
	mc_start_master --auth-file "$AUTH" --http 127.0.0.1:0
	mc_start_peer a --peer-secret-file "$BATS_TEST_TMPDIR/rack1-a.tok"
	run -1 mc-rpc --token "$(tok rack1-a)" "$MC_MASTER" peer_register \
		addr="unix:$MC_DIR/elsewhere.sock" "$(dram 268435456)"
	assert_output --partial "permission denied: peer 'rack1-a' is live at $(mc_addr a)"
	[ "$(refused identity)" -eq 1 ]
	# another identity is another peer
	mc_start_peer b --peer-secret-file "$BATS_TEST_TMPDIR/rack1-b.tok"
	mc-cli --json peers | jq -s -e '[.. | objects | select(.peer_id? != null)] | length == 2'
}

@test "attack: the secret every peer shares still works, and the master warns of it at every start and reload" {
	AUTH="$BATS_TEST_TMPDIR/auth"
	mc-cli auth add ops --admin --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/ops.tok"
	mc-cli auth add --peer --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/peers.tok"
	MC_TOKEN="$(tok ops)"
	export MC_TOKEN
	run -0 mc-cli auth ls --auth-file "$AUTH"
	assert_output "$(printf 'admin ops\npeer peers')"
	mc_start_master --auth-file "$AUTH"
	grep -q " warn .*the peers share one secret ('peers')" "$MC_DIR/master.log"
	mc_start_peers 2 --peer-secret-file "$BATS_TEST_TMPDIR/peers.tok"
	# once every peer has its own and the shared one is gone, no warning
	mc-cli auth add --peer rack1-a --auth-file "$AUTH" >/dev/null
	mc-cli auth rm peers --auth-file "$AUTH"
	: >"$MC_DIR/master.log"
	kill -HUP "$(mc_pid master)"
	wait_until 10 grep -q "reloaded" "$MC_DIR/master.log"
	run -1 grep -q "share one secret" "$MC_DIR/master.log"
}

@test "attack: without an auth file no local process takes over a peer's link or unregisters it; its session does" {
	mc_start_master --http 127.0.0.1:0 --peer-ttl 1h
	mc_start_peer p1 --session-file "$MC_DIR/p1.session"
	local addr="$MC_LAST_ADDR" id
	id="$(mc_peer_id "$addr")"
	run -1 mc-rpc "$MC_MASTER" peer_heartbeat peer_id:="$id"
	assert_output --partial "permission denied: peer $id is not the peer registered on this connection"
	run -1 mc-rpc "$MC_MASTER" peer_unregister peer_id:="$id"
	assert_output --partial "permission denied"
	run -1 mc-rpc "$MC_MASTER" peer_inventory peer_id:="$id" done:=true 'items:=[]'
	assert_output --partial "permission denied"
	run -1 mc-rpc "$MC_MASTER" peer_register addr="$addr" "$(dram 268435456)"
	assert_output --partial "permission denied: live peer $id holds $addr"
	mc_peer_listed "$addr"
	# the peer's link is still its own: a put lands there and reads back
	echo hello | mc-cli put k
	[ "$(mc-cli get k)" = hello ]
	# its session speaks for it, from any connection
	run -0 mc-rpc "$MC_MASTER" evict_candidates peer_id:="$id" "$(mc_session p1)" tier=dram
}
