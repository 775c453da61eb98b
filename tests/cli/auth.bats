#!/usr/bin/env bats
#
# Identity and roles: with --auth-file, hello binds a role from its
# token; admin calls need the admin role, peer calls the peer secret,
# and every other call acts on the token's own tenant. Peers speak only
# for the peer registered on their connection. Without --auth-file, the
# daemons refuse to serve beyond loopback unless told --insecure.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
	mc_file_dir
	AUTH="$MC_DIR/auth"
	export AUTH
	mc-cli auth add alice --auth-file "$AUTH" >"$MC_DIR/alice.tok"
	mc-cli auth add bob --auth-file "$AUTH" >"$MC_DIR/bob.tok"
	mc-cli auth add ops --admin --auth-file "$AUTH" >"$MC_DIR/ops.tok"
	mc-cli auth add --peer --auth-file "$AUTH" >"$MC_DIR/peer.tok"
	# mc_start_peer's check that the master lists the peer is an admin's call
	MC_TOKEN="$(cat "$MC_DIR/ops.tok")"
	export MC_TOKEN
	mc_start_master --auth-file "$AUTH" --peer-ttl 1h --put-timeout 1h --http 127.0.0.1:0
	mc_start_peers 2 --peer-secret-file "$MC_DIR/peer.tok"
}

teardown_file() {
	mc_stop_everything
}

tok() {
	cat "$MC_DIR/$1.tok"
}

@test "auth: the file keeps hashes, never a token, and ls shows no secret" {
	run -0 mc-cli auth ls --auth-file "$AUTH"
	assert_output "$(printf 'tenant alice\ntenant bob\nadmin ops\npeer peers')"
	for who in alice bob ops peer; do
		run -1 grep -F "$(tok "$who")" "$AUTH"
		[ "$(tok "$who" | wc -c)" -eq 65 ]
	done
	run -0 stat -c %a "$AUTH"
	assert_output 600
}

@test "auth: every method refuses a missing, a wrong and another tenant's token" {
	local n=0 m flags
	while read -r m flags; do
		run -1 mc-rpc "$MC_MASTER" "$m"
		assert_output --partial "$m: permission: permission denied"
		run -1 mc-rpc --token "0000$(tok alice | cut -c5-)" "$MC_MASTER" "$m"
		assert_output --partial "hello: permission: permission denied: unknown token"
		run -1 mc-rpc --token "$(tok alice)" --tenant bob "$MC_MASTER" "$m"
		assert_output --partial "permission denied: the token speaks for tenant 'alice' only"
		n=$((n + 1))
	done < <(mc-master --list-methods)
	[ "$n" -gt 0 ]
	[ "$n" -eq "$(mc-master --list-methods | wc -l)" ]
}

@test "auth: no admin or peer call works with a tenant's token" {
	local n=0 m flags
	while read -r m flags; do
		case ",$flags," in
		*,admin,* | *,peer,*) ;;
		*) continue ;;
		esac
		run -1 mc-rpc --token "$(tok alice)" "$MC_MASTER" "$m"
		assert_output --partial "$m: permission: permission denied"
		n=$((n + 1))
	done < <(mc-master --list-methods)
	[ "$n" -eq "$(mc-master --list-methods | grep -cE ' ([a-z-]+,)*(admin|peer)')" ]
}

@test "auth: a tenant's call acts on its own tenant only" {
	echo mine | MC_TOKEN="$(tok alice)" mc-cli put a-key
	run -0 env MC_TOKEN="$(tok alice)" mc-cli get a-key
	assert_output mine
	run -1 env MC_TOKEN="$(tok bob)" mc-cli get a-key
	assert_output --partial "not found"
	run -0 env MC_TOKEN="$(tok bob)" mc-cli ls
	refute_output --partial a-key
	# stats shows a tenant its own line, not the other tenants
	run -0 mc-rpc --token "$(tok bob)" "$MC_MASTER" stats
	assert_output --partial '"tenants":[{"tenant":"bob"'
	refute_output --partial '"alice"'
	run -0 mc-rpc --token "$(tok ops)" "$MC_MASTER" stats
	assert_output --partial '"tenant":"alice"'
	# the admin names a tenant to act on it
	run -0 env MC_TOKEN="$(tok ops)" mc-cli -t alice ls
	assert_output a-key
}

@test "auth: tools read the token from --token-file, and denial exits 77" {
	run -0 mc-cli --token-file "$MC_DIR/alice.tok" exist a-key
	run -77 mc-cli --token-file "$MC_DIR/alice.tok" peers
	assert_output --partial "permission denied: peers needs the admin role"
	run -0 mc-cli --token-file "$MC_DIR/ops.tok" peers
}

@test "auth: the peer secret speaks for no tenant" {
	run -1 mc-rpc --token "$(tok peer)" "$MC_MASTER" stats
	assert_output --partial "permission denied: stats is a tenant's call, not a peer's"
}

@test "auth: refusals are counted per method" {
	local d0 o0
	d0="$(mc_metric master 'mc_requests_denied_total{method="snapshot_status"}')"
	o0="$(mc_metric master 'mc_requests_denied_total{method="stats"}')"
	run -1 mc-rpc --token "$(tok alice)" "$MC_MASTER" snapshot_status
	run -1 mc-rpc --token "$(tok alice)" "$MC_MASTER" snapshot_status
	run -0 mc-rpc --token "$(tok ops)" "$MC_MASTER" snapshot_status
	[ "$(mc_metric master 'mc_requests_denied_total{method="snapshot_status"}')" -eq $((${d0:-0} + 2)) ]
	[ "$(mc_metric master 'mc_requests_denied_total{method="stats"}')" -eq "${o0:-0}" ]
}

@test "auth: a heartbeat for another peer's id is refused" {
	local id
	id="$(mc_peer_id "$(mc_addr peer1)")"
	run -1 mc-rpc --token "$(tok peer)" "$MC_MASTER" peer_heartbeat peer_id:="$id"
	assert_output --partial "permission denied: peer $id is not the peer registered on this connection"
	run -1 mc-rpc --token "$(tok peer)" "$MC_MASTER" peer_unregister peer_id:="$id"
	assert_output --partial "permission denied"
	run -1 mc-rpc --token "$(tok peer)" "$MC_MASTER" peer_inventory peer_id:="$id" done:=true
	assert_output --partial "permission denied"
	mc_peer_listed "$(mc_addr peer1)"
}

@test "auth: a rogue registration for a live peer's address is refused" {
	local addr
	addr="$(mc_addr peer1)"
	run -1 mc-rpc --token "$(tok peer)" "$MC_MASTER" peer_register addr="$addr" tiers:=[]
	assert_output --partial "permission denied: live peer $(mc_peer_id "$addr") holds $addr"
	run -1 mc-rpc --token "$(tok alice)" "$MC_MASTER" peer_register addr="$addr" tiers:=[]
	assert_output --partial "permission denied: peer_register is for peers"
	mc_peer_listed "$addr"
}

@test "auth: removing a token and SIGHUP closes that tenant's connections" {
	local fifo="$MC_DIR/held" pid line
	mc-cli auth add carol --auth-file "$AUTH" >"$MC_DIR/carol.tok"
	kill -HUP "$(mc_pid master)"
	wait_until 10 mc-rpc --token "$(tok carol)" "$MC_MASTER" stats
	rm -f "$fifo"
	mkfifo "$fifo"
	mc-rpc --timeout-ms 10000 --wait-close --token "$(tok carol)" "$MC_MASTER" stats >"$fifo" 3>&- &
	pid=$!
	read -r -t 10 line <"$fifo"
	[ -n "$line" ]
	mc-cli auth rm carol --auth-file "$AUTH"
	kill -HUP "$(mc_pid master)"
	# mc-rpc exits 0 once the master closed its connection, 69 after 10 s without
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ]
	run -1 mc-rpc --token "$(tok carol)" "$MC_MASTER" stats
	assert_output --partial "unknown token"
	run -0 mc-rpc --token "$(tok alice)" "$MC_MASTER" stats
}

@test "auth: a bad auth file fails the start" {
	echo "root x 00 00" >"$MC_DIR/bad.auth"
	run -65 mc-master --listen "unix:$MC_DIR/bad.sock" --auth-file "$MC_DIR/bad.auth"
	assert_output --partial "line 1: unknown role 'root'"
}

@test "insecure: a non-loopback --listen without --auth-file or --insecure fails at start" {
	run -64 mc-master --listen 0.0.0.0:0
	assert_output --partial "refusing --listen 0.0.0.0:0 without authentication"
	assert_output --partial "--auth-file"
	assert_output --partial "--insecure"
	run -64 mc-master --listen 127.0.0.1:0 --http 10.255.255.1:1
	assert_output --partial "refusing --http 10.255.255.1:1"
	run -64 mc-peer --dram 1MiB --listen 10.255.255.1:1
	assert_output --partial "refusing --listen 10.255.255.1:1 without authentication"
	assert_output --partial "--peer-secret-file"
	assert_output --partial "--insecure"
}

@test "insecure: a peer with the peers' secret may listen beyond loopback; with --fault-inject never" {
	echo "not-a-real-secret" >"$MC_DIR/peer.secret"
	# past the check, the bind of an address this host lacks is what fails
	run mc-peer --dram 1MiB --listen 10.255.255.1:1 --peer-secret-file "$MC_DIR/peer.secret"
	[ "$status" -ne 0 ] && [ "$status" -ne 64 ]
	refute_output --partial "refusing"
	run -64 mc-peer --dram 1MiB --listen 10.255.255.1:1 --insecure --fault-inject
	assert_output --partial "refusing --fault-inject with --listen 10.255.255.1:1"
}

@test "insecure: without --auth-file the master says it authenticates nobody" {
	mc_start_daemon open mc-master --listen "unix:$MC_DIR/open.sock"
	run -0 grep -F "no --auth-file" "$MC_DIR/open.log"
}
