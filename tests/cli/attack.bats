#!/usr/bin/env bats
#
# Attacks on a cluster set up by the man pages, each replayed as the
# attacker would make it: sizes near 2^64 straight from the wire (through
# mc-rpc) that must neither wrap a counter nor be placed; floods of
# connections that never authenticate, from other loopback addresses
# and other local users, that must not lock out the clients who do,
# on the master and on a peer's data port; bulk bodies that trickle or
# that a refused request declares huge; writes that outlive their put or
# their grant; metrics served beyond loopback; files others may write or
# read. (A write grant replayed is in grants.bats; charges for keys and
# the store's fair share in attack-quota.bats.) Every test here failed
# before its defence was built.

load helpers

# 2^64 - 1 and 2^64 - 4000, as a put_start's size
SIZE_MAX64=18446744073709551615
NEAR_MAX=18446744073709547616

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-garbage
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

tenant_bytes() {
	mc_metric master "mc_tenant_bytes{tenant=\"$1\"}"
}

# tokens: an auth file ($AUTH) for tenants alice and bob, admin ops and
# the peers' secret, each token in $BATS_TEST_TMPDIR/NAME.tok; the
# tools speak as ops unless told otherwise (MC_TOKEN).
tokens() {
	AUTH="$BATS_TEST_TMPDIR/auth"
	mc-cli auth add alice --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/alice.tok"
	mc-cli auth add bob --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/bob.tok"
	mc-cli auth add ops --admin --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/ops.tok"
	mc-cli auth add --peer --auth-file "$AUTH" >"$BATS_TEST_TMPDIR/peer.tok"
	MC_TOKEN="$(tok ops)"
	export MC_TOKEN
}

# tok NAME: NAME's token (tokens).
tok() {
	cat "$BATS_TEST_TMPDIR/$1.tok"
}

@test "attack: a put of 2^64 - 1 bytes is larger than any tier, on a 64 MiB peer, and counts nothing" {
	MC_PEER_DRAM=64MiB
	mc_start_master --http 127.0.0.1:0
	mc_start_peers 1
	mc-cli -t A put small <<<"x"
	before="$(tenant_bytes A)"
	run -1 mc-rpc --tenant A "$MC_MASTER" put_start key=huge "size:=$SIZE_MAX64" checksum:=1
	assert_output --partial "larger than any tier"
	run -1 mc-rpc --tenant A "$MC_MASTER" put_start key=huge "size:=$NEAR_MAX" checksum:=1
	assert_output --partial "larger than any tier"
	[ "$(tenant_bytes A)" = "$before" ]
	run -0 mc-cli -t A get small
	assert_output x
}

quota_is() {
	mc-cli -t "$1" --json stat | jq -e --argjson q "$2" '.. | objects | select(.quota_bytes? == $q)' \
		>/dev/null
}

@test "attack: pending puts of nearly 2^64 bytes cannot wrap a tenant's byte count past its quota" {
	: >"$BATS_TEST_TMPDIR/quotas"
	MC_PEER_DRAM=64MiB
	mc_start_master --http 127.0.0.1:0 --quota-file "$BATS_TEST_TMPDIR/quotas" --put-wait 0
	mc_start_peers 1
	# 30 puts left pending, each nearly 2^64 bytes: none may be placed or counted
	for i in $(seq 1 30); do
		run mc-rpc --tenant A "$MC_MASTER" put_start "key=p$i" "size:=$NEAR_MAX" checksum:=1
		assert_failure
		assert_output --partial "larger than any tier"
	done
	[ "$(tenant_bytes A)" = "" ] || [ "$(tenant_bytes A)" -eq 0 ]
	# then a quota of 300000 bytes, and four puts of 100000
	printf 'A 300000\n' >"$BATS_TEST_TMPDIR/quotas"
	kill -HUP "$(mc_pid master)"
	wait_until 10 quota_is A 300000
	head -c 100000 /dev/zero >"$BATS_TEST_TMPDIR/100k"
	for i in 1 2 3 4; do
		mc-cli -t A put "c$i" "$BATS_TEST_TMPDIR/100k" || true
	done
	local held=0
	for i in 1 2 3 4; do
		if mc-cli -t A get "c$i" >/dev/null 2>&1; then held=$((held + 1)); fi
	done
	[ "$held" -le 3 ]
	[ "$(tenant_bytes A)" -le 300000 ]
}

@test "attack: --max-object-size refuses a put over it, naming the flag, before any room is sought" {
	mc_start_master --http 127.0.0.1:0 --max-object-size 1KiB
	mc_start_peers 1
	head -c 1024 /dev/zero >"$BATS_TEST_TMPDIR/1k"
	head -c 1025 /dev/zero >"$BATS_TEST_TMPDIR/over"
	run -0 mc-cli put fits "$BATS_TEST_TMPDIR/1k"
	run -1 mc-cli put over "$BATS_TEST_TMPDIR/over"
	assert_output --partial "over --max-object-size 1KiB"
	run -1 mc-rpc "$MC_MASTER" put_start key=wire "size:=$SIZE_MAX64" checksum:=1
	assert_output --partial "over --max-object-size"
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 0 ]
}

@test "attack: a refused hello closes its connection, so a flood of them holds nothing" {
	tokens
	mc_start_master --http 127.0.0.1:0 --auth-file "$AUTH"
	# 200 connections, each a hello with no token, then silence: each closed once refused
	run -0 mc-garbage --timeout-ms 2000 --max-ms 10000 --hold 200 --request hello \
		--until-closed "$MC_MASTER"
	# and one with a wrong token, as a client sends it
	run -1 mc-rpc --token "$(printf '0%.0s' $(seq 64))" "$MC_MASTER" stats
	assert_output --partial "unknown token"
	# the legitimate client is served
	run -0 mc-rpc --token "$(tok alice)" "$MC_MASTER" stats
}

@test "attack: an auth file others may write fails the start; one they may read starts with a warning" {
	mc-cli auth add alice --auth-file "$BATS_TEST_TMPDIR/auth" >/dev/null
	chmod 0620 "$BATS_TEST_TMPDIR/auth"
	run -65 mc-master --listen "unix:$BATS_TEST_TMPDIR/m.sock" --auth-file "$BATS_TEST_TMPDIR/auth"
	assert_output --partial "is writable by group or others (mode 0620)"
	assert_output --partial "chmod 600"
	chmod 0602 "$BATS_TEST_TMPDIR/auth"
	run -65 mc-cli auth ls --auth-file "$BATS_TEST_TMPDIR/auth"
	assert_output --partial "writable by group or others"
	chmod 0644 "$BATS_TEST_TMPDIR/auth"
	mc_start_master --http 127.0.0.1:0 --auth-file "$BATS_TEST_TMPDIR/auth"
	grep -q "is readable by group or others (mode 0644)" "$MC_DIR/master.log"
}

@test "attack: a peer's session file, which resumes it at the master, is mode 0600 whatever the umask" {
	mc_start_master --http 127.0.0.1:0
	(umask 000 && mc_start_peer p1 --ssd "$BATS_TEST_TMPDIR/ssd" --ssd-size 16MiB)
	wait_until 10 test -s "$BATS_TEST_TMPDIR/ssd.session" -o -s "$BATS_TEST_TMPDIR/ssd/session"
	local f="$BATS_TEST_TMPDIR/ssd.session"
	[ -e "$f" ] || f="$BATS_TEST_TMPDIR/ssd/session"
	run -0 stat -c %a "$f"
	assert_output 600
}

@test "attack: --insecure says so at warning level on every start, in both daemons" {
	mc_start_master --http 127.0.0.1:0 --insecure --log-level warn
	grep -q " warn --insecure: --listen .* is served without authentication" "$MC_DIR/master.log"
	mc_start_peer p1 --insecure --log-level warn
	grep -q " warn --insecure: --listen .* is served without the peers' secret" "$MC_DIR/p1.log"
}

@test "attack: a tenant's stats shows its own totals, not the store's nor its tiers'" {
	tokens
	mc_start_master --http 127.0.0.1:0 --auth-file "$AUTH"
	mc_start_peers 1 --peer-secret-file "$BATS_TEST_TMPDIR/peer.tok"
	for k in a1 a2 a3; do MC_TOKEN="$(tok alice)" mc-cli put "$k" <<<"alice's"; done
	MC_TOKEN="$(tok bob)" mc-cli put b1 <<<"b"
	run -0 mc-rpc --token "$(tok bob)" "$MC_MASTER" stats
	jq -e '.objects == 1 and .bytes == 2 and (has("tiers") | not) and (has("peers") | not) and
		(has("evicted_bytes") | not) and .tenants == [{"tenant": "bob", "objects": 1, "bytes": 2}]' \
		<<<"$output" >/dev/null
	run -0 mc-rpc --token "$(tok ops)" "$MC_MASTER" stats
	jq -e '.objects == 4 and has("tiers") and .peers == 1' <<<"$output" >/dev/null
}

@test "attack: connections that never authenticate are closed at --hello-timeout (2 s), the others kept" {
	tokens
	mc_start_master --http 127.0.0.1:0 --auth-file "$AUTH" \
		--listen 127.0.0.1:0
	# a peer whose control link authenticated as it connected
	mc_start_peers 1 --peer-secret-file "$BATS_TEST_TMPDIR/peer.tok"
	# silent ones, and ones that ask for what a stranger may not have, from other addresses
	mc-garbage --timeout-ms 2000 --max-ms 6000 --from 127.0.0.2 --hold 100 --until-closed \
		"$MC_MASTER" >"$BATS_TEST_TMPDIR/silent.out" 2>&1 3>&- &
	local silent=$!
	mc-garbage --timeout-ms 2000 --max-ms 6000 --from 127.0.0.3 --hold 100 --request stats \
		--until-closed "$MC_MASTER" >"$BATS_TEST_TMPDIR/asking.out" 2>&1 3>&- &
	local asking=$!
	run -0 mc-rpc --token "$(tok alice)" "$MC_MASTER" stats
	wait "$silent" || { cat "$BATS_TEST_TMPDIR/silent.out"; false; }
	wait "$asking" || { cat "$BATS_TEST_TMPDIR/asking.out"; false; }
	# those 200 and no more: the peer's link, two seconds old and more, is still there
	[ "$(mc_metric master 'mc_connections_closed_total{reason="hello_timeout"}')" -eq 200 ]
	mc-cli --json peers | jq -e '[.. | objects | select(.peer_id? != null)] | length == 1' >/dev/null
	echo data | MC_TOKEN="$(tok alice)" mc-cli put k
	run -0 env MC_TOKEN="$(tok alice)" mc-cli get k
	assert_output data
}

@test "attack: strangers past --max-unauth-conns shed the oldest stranger, and a client who authenticates is served" {
	tokens
	mc_start_master --http 127.0.0.1:0 --auth-file "$AUTH" \
		--listen 127.0.0.1:0 --max-conns 40 --max-unauth-conns 16 --hello-timeout 1m
	# 100 silent strangers from two addresses: at most 16 of them open at a time
	mc-garbage --timeout-ms 2000 --max-ms 10000 --from 127.0.0.2 --hold 50 --until-closed \
		"$MC_MASTER" >"$BATS_TEST_TMPDIR/a.out" 2>&1 3>&- &
	local a=$!
	mc-garbage --timeout-ms 2000 --max-ms 10000 --from 127.0.0.3 --hold 50 --until-closed \
		"$MC_MASTER" >"$BATS_TEST_TMPDIR/b.out" 2>&1 3>&- &
	local b=$!
	wait_until 10 mc_metric_at_least master 'mc_connections_closed_total{reason="unvouched"}' 84
	# the legitimate client is served, and nobody was refused for want of a slot
	run -0 mc-rpc --token "$(tok alice)" "$MC_MASTER" stats
	[ "$(mc_metric master 'mc_connections_closed_total{reason="max_conns"}')" -eq 0 ]
	kill "$a" "$b" 2>/dev/null || true
	wait "$a" "$b" 2>/dev/null || true
}

# as_nobody CMD...: CMD as user nobody (uid 65534), as root can; through
# sudo when the suite runs as another user.
as_nobody() {
	local pre=()
	[ "$(id -u)" -eq 0 ] || pre=(sudo -n)
	"${pre[@]}" setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

@test "attack: on a unix socket the per-address cap counts each user, so one local user's flood locks out nobody else" {
	local sock_dir
	sock_dir="$(mktemp -d "${TMPDIR:-/tmp}/mc-uid.XXXXXX")"
	chmod 0755 "$sock_dir"
	mc_start_daemon master mc-master --listen "unix:$sock_dir/m.sock" --http 127.0.0.1:0 \
		--max-conns-per-addr 20 --header-timeout 1m
	chmod 0777 "$sock_dir/m.sock"
	# this user holds its 20, and its 21st is refused
	mc-garbage --timeout-ms 2000 --max-ms 20000 --hold 21 --hold-ms 15000 \
		"unix:$sock_dir/m.sock" >"$BATS_TEST_TMPDIR/g.out" 2>&1 3>&- &
	local g=$!
	wait_until 10 mc_metric_at_least master 'mc_connections_closed_total{reason="per_addr"}' 1
	# another user's client is served all the same
	run -0 as_nobody "$MC_ROOT/build/tools/mc-rpc" "unix:$sock_dir/m.sock" stats
	kill "$g" 2>/dev/null || true
	wait "$g" 2>/dev/null || true
	rm -rf "$sock_dir"
}

@test "attack: a bulk body that trickles below --min-bulk-rate is closed, on master and peer; a fast one is not" {
	mc_start_master --http 127.0.0.1:0
	mc_start_peers 1
	# 1 MiB declared (drained, not refused at once), 10 bytes sent, then
	# nothing: past the 5 s window, closed
	truncate -s 1M "$BATS_TEST_TMPDIR/declared"
	mc-rpc --timeout-ms 12000 --bulk "$BATS_TEST_TMPDIR/declared" --bulk-short 10 \
		"$MC_MASTER" stats >"$BATS_TEST_TMPDIR/m.out" 2>&1 &
	local m=$!
	mc-rpc --timeout-ms 12000 --bulk "$BATS_TEST_TMPDIR/declared" --bulk-short 10 \
		"$(mc_addr peer1)" peer_stats >"$BATS_TEST_TMPDIR/p.out" 2>&1 &
	local p=$!
	wait "$m" || { cat "$BATS_TEST_TMPDIR/m.out"; false; }
	wait "$p" || { cat "$BATS_TEST_TMPDIR/p.out"; false; }
	[ "$(mc_metric master 'mc_connections_closed_total{reason="slow_bulk"}')" -eq 1 ]
	# a body at full speed is read whole, as ever
	head -c 8M /dev/urandom >"$BATS_TEST_TMPDIR/8m"
	run -0 mc-cli put big "$BATS_TEST_TMPDIR/8m"
	run -0 mc-cli get big -o "$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/8m" "$BATS_TEST_TMPDIR/back"
}

@test "attack: a refused request declaring a body over the drain bound is answered and closed at once, on master and peer" {
	# no rate floor: only the drain bound can close these
	mc_start_master --http 127.0.0.1:0 --min-bulk-rate 0
	mc_start_peers 1 --min-bulk-rate 0 --http 127.0.0.1:0
	# 48 MiB declared, 10 bytes sent: closed (mc-rpc exits 0 once it is)
	truncate -s 48M "$BATS_TEST_TMPDIR/declared"
	run -0 mc-rpc --timeout-ms 8000 --bulk "$BATS_TEST_TMPDIR/declared" --bulk-short 10 \
		"$MC_MASTER" stats
	run -0 mc-rpc --timeout-ms 8000 --bulk "$BATS_TEST_TMPDIR/declared" --bulk-short 10 \
		"$(mc_addr peer1)" write key=x
	[ "$(mc_metric master 'mc_connections_closed_total{reason="undrained"}')" -eq 1 ]
	[ "$(mc_metric peer1 'mc_connections_closed_total{reason="undrained"}')" -eq 1 ]
	# a body sent whole and refused is answered; the caller reads the refusal, not a broken pipe
	head -c 48M /dev/zero >"$BATS_TEST_TMPDIR/whole"
	run -1 mc-rpc --timeout-ms 8000 --bulk "$BATS_TEST_TMPDIR/whole" "$(mc_addr peer1)" write key=x
	assert_output --partial "missing field 'version'"
	# a small refused body is still drained: the connection goes on
	head -c 100K /dev/zero >"$BATS_TEST_TMPDIR/small"
	run -0 mc-rpc --bulk "$BATS_TEST_TMPDIR/small" "$MC_MASTER" stats --then stats
	[ "$(mc_metric master 'mc_connections_closed_total{reason="undrained"}')" -eq 1 ]
}

@test "attack: a peer's data port answers no stranger's peer_stats and closes strangers at --hello-timeout, while a granted reader is served" {
	mc_start_master --http 127.0.0.1:0
	mc_start_peer p1 --listen 127.0.0.1:0 --http 127.0.0.1:0 --max-unauth-conns 64
	echo held | mc-cli put k
	# from another address peer_stats is refused; this user on the unix socket is no stranger
	run -1 mc-rpc "$(mc_addr p1)" peer_stats
	assert_output --partial "permission denied: peer_stats"
	# 300 strangers holding the data port, asking for stats or silent, from several addresses
	local pids=() ip
	for ip in 127.0.0.2 127.0.0.3 127.0.0.4; do
		mc-garbage --timeout-ms 2000 --max-ms 8000 --from "$ip" --hold 50 --request peer_stats \
			--until-closed "$(mc_addr p1)" >"$BATS_TEST_TMPDIR/$ip.out" 2>&1 3>&- &
		pids+=($!)
	done
	for ip in 127.0.0.5 127.0.0.6; do
		mc-garbage --timeout-ms 2000 --max-ms 8000 --from "$ip" --hold 75 --until-closed \
			"$(mc_addr p1)" >"$BATS_TEST_TMPDIR/$ip.out" 2>&1 3>&- &
		pids+=($!)
	done
	# a reader with the master's grant is served meanwhile, and its connection kept
	run -0 mc-cli get k
	assert_output held
	for p in "${pids[@]}"; do wait "$p"; done
	# every stranger went, by the deadline or shed for a newer one
	local timed shed
	timed="$(mc_metric p1 'mc_connections_closed_total{reason="hello_timeout"}')"
	shed="$(mc_metric p1 'mc_connections_closed_total{reason="unvouched"}')"
	[ $((timed + shed)) -ge 300 ]
	run -0 mc-cli get k
	assert_output held
}

# http_status URL [TOKEN]: the status code of a GET of URL, bearing TOKEN if given.
http_status() {
	local hostport="${1#http://}" auth=""
	hostport="${hostport%%/*}"
	[ -z "${2:-}" ] || auth="Authorization: Bearer $2"$'\r\n'
	exec 7<>"/dev/tcp/${hostport%:*}/${hostport##*:}" || return 1
	printf 'GET /%s HTTP/1.0\r\nHost: %s\r\n%s\r\n' "${1#http://*/}" "$hostport" "$auth" >&7
	head -n 1 <&7 | awk '{ print $2 }'
	exec 7<&-
}

# port_of NAME: the port daemon NAME serves its metrics on.
port_of() {
	grep -o 'metrics on http://[0-9.]*:[0-9]*' "$MC_DIR/$1.log" | head -n 1 | sed 's/.*://'
}

@test "attack: /metrics beyond loopback needs --http-token-file or --insecure, and the token then, in both daemons" {
	tokens
	# refused at start, even with the auth file: the metrics name tenants and sizes
	run -64 mc-master --listen "unix:$MC_DIR/x.sock" --auth-file "$AUTH" --http 0.0.0.0:0
	assert_output --partial "refusing --http 0.0.0.0:0 beyond loopback without --http-token-file"
	run -64 mc-peer --dram 1MiB --listen "unix:$MC_DIR/y.sock" --master "unix:$MC_DIR/none.sock" \
		--peer-secret-file "$BATS_TEST_TMPDIR/peer.tok" --http 0.0.0.0:0
	assert_output --partial "refusing --http 0.0.0.0:0 beyond loopback without --http-token-file"
	# a token file others may write is refused
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$BATS_TEST_TMPDIR/http.tok"
	chmod 0622 "$BATS_TEST_TMPDIR/http.tok"
	run -64 mc-master --listen "unix:$MC_DIR/x.sock" --auth-file "$AUTH" --http 0.0.0.0:0 \
		--http-token-file "$BATS_TEST_TMPDIR/http.tok"
	assert_output --partial "writable by group or others"
	chmod 0600 "$BATS_TEST_TMPDIR/http.tok"
	local t
	t="$(cat "$BATS_TEST_TMPDIR/http.tok")"
	mc_start_master --auth-file "$AUTH" --http 0.0.0.0:0 --http-token-file "$BATS_TEST_TMPDIR/http.tok"
	MC_TOKEN="$(tok ops)" mc_start_peer p1 --peer-secret-file "$BATS_TEST_TMPDIR/peer.tok" \
		--http 0.0.0.0:0 --http-token-file "$BATS_TEST_TMPDIR/http.tok"
	local d port
	for d in master p1; do
		port="$(port_of "$d")"
		[ "$(http_status "http://127.0.0.1:$port/metrics")" = 401 ]
		[ "$(http_status "http://127.0.0.1:$port/healthz" wrong)" = 401 ]
		[ "$(http_status "http://127.0.0.1:$port/metrics" "$t")" = 200 ]
	done
	mc_stop_all
	# a bare :PORT is loopback's, and loopback needs no token
	mc_start_master --http :0
	grep -q 'metrics on http://127.0.0.1:' "$MC_DIR/master.log"
	[ "$(http_status "http://127.0.0.1:$(port_of master)/healthz")" = 200 ]
	# --insecure still serves anyone, as it says
	mc_start_peer p2 --http 0.0.0.0:0 --insecure
	[ "$(http_status "http://127.0.0.1:$(port_of p2)/metrics")" = 200 ]
}

# trickle_put PEER KEY MIB: a put_start of KEY for MIB MiB at the master,
# then its write to PEER, 10 bytes sent and the rest never (in the
# background: $TRICKLE is its pid), once the peer holds its room.
trickle_put() {
	local out v g
	truncate -s "$3M" "$BATS_TEST_TMPDIR/$2"
	out="$(mc-rpc "$MC_MASTER" put_start key="$2" size:=$(($3 << 20)) checksum:=0)"
	v="$(jq -r .version <<<"$out")"
	g="$(jq -r '.replicas[0].grant' <<<"$out")"
	mc-rpc --timeout-ms 30000 --bulk "$BATS_TEST_TMPDIR/$2" --bulk-short 10 "$(mc_addr "$1")" \
		write tenant=default key="$2" version:="$v" grant:=b64:"$g" \
		>"$BATS_TEST_TMPDIR/$2.out" 2>&1 3>&- &
	TRICKLE=$!
	wait_until 10 eval "[ \"\$(mc_tier_field $1 dram used)\" -ge $(($3 << 20)) ]"
}

@test "attack: a write still coming when the master abandons its put is ended on the peer, and its room freed" {
	mc_start_master --http 127.0.0.1:0 --put-timeout 1s
	# no floor nor stall timeout of the peer's own could end it
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 --min-bulk-rate 0 --write-timeout 0
	trickle_put p1 big 60
	# the master abandons the put and tells the peer
	advance_clock 5000
	wait_until 10 mc_metric_at_least p1 mc_peer_writes_cancelled_total 1
	wait "$TRICKLE"
	[ "$(mc_tier_field p1 dram used)" -eq 0 ]
	# another tenant's put finds the room
	head -c 50M /dev/urandom >"$BATS_TEST_TMPDIR/other"
	run -0 mc-cli --tenant other put k "$BATS_TEST_TMPDIR/other"
}

@test "attack: a write still coming when its grant expires is ended on the peer, though the master's word is lost" {
	mc_start_master --http 127.0.0.1:0 --grant-ttl 2s --put-timeout 1000h
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 --min-bulk-rate 0 --write-timeout 0 \
		--grant-skew 1s
	trickle_put p1 big 60
	advance_clock 10000
	wait_until 10 mc_metric_at_least p1 mc_peer_writes_expired_total 1
	wait "$TRICKLE"
	[ "$(mc_tier_field p1 dram used)" -eq 0 ]
	[ "$(mc_metric p1 mc_peer_writes_cancelled_total)" -eq 0 ]
}
