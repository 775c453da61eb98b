#!/usr/bin/env bats
#
# Connection limits of both daemons: the header and idle timeouts, the
# caps per address and per tenant. Each test hits a limit with
# tests/tools/mc-garbage while another client's requests must still
# complete within their --timeout, and waits for the limit's metric
# (mc_connections_closed_total{reason}), never for a fixed time.
#
# The hostile connections come from 127.0.0.2 (mc-garbage --from) where a
# test needs them to be another address than the clients' 127.0.0.1.
# Every test runs its own cluster: each one sets its own limits.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-garbage mc-rpc
}

setup() {
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# closed NAME REASON: daemon NAME's count of connections a limit closed.
closed() {
	local v
	v="$(mc_metric "$1" "mc_connections_closed_total{reason=\"$2\"}")"
	echo "${v:-0}"
}

# closed_at_least NAME REASON N (for wait_until).
closed_at_least() {
	[ "$(closed "$1" "$2")" -ge "$3" ]
}

# served TAG: a put/get round trip through the master and a peer, each
# call bounded by --timeout.
served() {
	local src="$BATS_TEST_TMPDIR/$1.src"
	mc_random_file "$src" 50000
	mc-cli --timeout 5s put "limits/$1" "$src"
	mc-cli --timeout 5s get "limits/$1" | cmp "$src" -
}

# garbage_bg OUT ARGS...: mc-garbage in the background, its output in OUT;
# sets GARBAGE_PID.
garbage_bg() {
	local out="$1"
	shift
	mc-garbage --timeout-ms 2000 --max-ms 30000 "$@" >"$out" 2>&1 3>&- &
	GARBAGE_PID=$!
}

@test "limits: the master closes connections whose header stalls past --header-timeout" {
	mc_start_master --http 127.0.0.1:0 --header-timeout 200ms
	mc_start_peer p1
	garbage_bg "$BATS_TEST_TMPDIR/g.out" --hold 20 --stall 3 --until-closed "$MC_MASTER"
	served header-master
	wait_until 20 closed_at_least master header_timeout 20
	wait "$GARBAGE_PID"
	run cat "$BATS_TEST_TMPDIR/g.out"
	assert_output --partial "20 of 20 connections closed by the server"
	served header-master-after
}

@test "limits: a peer closes connections whose header stalls past --header-timeout" {
	mc_start_master
	mc_start_peer p1 --http 127.0.0.1:0 --header-timeout 200ms
	garbage_bg "$BATS_TEST_TMPDIR/g.out" --hold 20 --stall 3 --until-closed "$(mc_addr p1)"
	served header-peer
	wait_until 20 closed_at_least p1 header_timeout 20
	wait "$GARBAGE_PID"
	run cat "$BATS_TEST_TMPDIR/g.out"
	assert_output --partial "20 of 20 connections closed by the server"
	served header-peer-after
}

@test "limits: the master closes idle connections after --idle-timeout, never a peer's link" {
	local hb0 regs0
	# a header timeout of an hour: only the idle timeout can close them in time
	mc_start_master --http 127.0.0.1:0 --idle-timeout 200ms --header-timeout 1h
	mc_start_peer p1 --http 127.0.0.1:0
	regs0="$(mc_metric p1 mc_peer_registrations_total)"
	hb0="$(mc_metric master 'mc_requests_total{method="peer_heartbeat"}')"
	garbage_bg "$BATS_TEST_TMPDIR/g.out" --hold 20 --request stats --until-closed "$MC_MASTER"
	served idle-master
	wait_until 20 closed_at_least master idle_timeout 20
	wait "$GARBAGE_PID"
	run cat "$BATS_TEST_TMPDIR/g.out"
	assert_output --partial "20 of 20 connections answered 'stats'"
	assert_output --partial "20 of 20 connections closed by the server"
	# three heartbeats later the peer's link has been quiet for longer
	# than the idle timeout twice over, and is still the same link
	wait_until 20 mc_metric_at_least master 'mc_requests_total{method="peer_heartbeat"}' \
		$((${hb0%.*} + 3))
	[ "$(mc_metric p1 mc_peer_registrations_total)" = "$regs0" ]
	[ "$(mc_metric p1 mc_peer_resumes_total)" = 0 ]
	run grep -c "control connection closed" "$MC_DIR/master.log"
	assert_output 0
	[ "$(closed master idle_timeout)" -eq 20 ]
	served idle-master-after
}

@test "limits: a peer closes idle connections after --idle-timeout" {
	mc_start_master
	mc_start_peer p1 --http 127.0.0.1:0 --idle-timeout 200ms --header-timeout 1h
	garbage_bg "$BATS_TEST_TMPDIR/g.out" --hold 20 --request peer_stats --until-closed \
		"$(mc_addr p1)"
	served idle-peer
	wait_until 20 closed_at_least p1 idle_timeout 20
	wait "$GARBAGE_PID"
	run cat "$BATS_TEST_TMPDIR/g.out"
	assert_output --partial "20 of 20 connections answered 'peer_stats'"
	assert_output --partial "20 of 20 connections closed by the server"
	served idle-peer-after
}

@test "limits: 100 stalled connections from one address leave the master and a peer to others" {
	local maddr paddr
	mc_start_daemon master mc-master --listen 127.0.0.1:0 --http 127.0.0.1:0 \
		--max-conns-per-addr 50 --header-timeout 200ms --peer-ttl 1h
	maddr="$MC_LAST_ADDR"
	MC_MASTER="$maddr"
	export MC_MASTER
	mc_start_daemon p1 mc-peer --master "$maddr" --listen 127.0.0.1:0 --dram 64MiB \
		--http 127.0.0.1:0 --max-conns-per-addr 50 --header-timeout 200ms
	paddr="$MC_LAST_ADDR"
	mc_peer_listed "$paddr"
	garbage_bg "$BATS_TEST_TMPDIR/gm.out" --from 127.0.0.2 --hold 100 --stall 3 \
		--until-closed "$maddr"
	local gm=$GARBAGE_PID
	garbage_bg "$BATS_TEST_TMPDIR/gp.out" --from 127.0.0.2 --hold 100 --stall 3 \
		--until-closed "$paddr"
	local gp=$GARBAGE_PID
	wait_until 20 closed_at_least master per_addr 1
	wait_until 20 closed_at_least p1 per_addr 1
	# 127.0.0.1 is another address: its clients are served, and a peer
	# starting meanwhile registers
	served flood
	mc_start_daemon p2 mc-peer --master "$maddr" --listen 127.0.0.1:0 --dram 64MiB
	mc_peer_listed "$MC_LAST_ADDR"
	wait "$gm"
	wait "$gp"
	run cat "$BATS_TEST_TMPDIR/gm.out" "$BATS_TEST_TMPDIR/gp.out"
	assert_line --partial "$maddr: 100 of 100 connections closed by the server"
	assert_line --partial "$paddr: 100 of 100 connections closed by the server"
	# refused over the cap, or closed by the header timeout (which may
	# free slots while the flood still connects on a loaded machine)
	[ $(($(closed master per_addr) + $(closed master header_timeout))) -eq 100 ]
	[ $(($(closed p1 per_addr) + $(closed p1 header_timeout))) -eq 100 ]
	served flood-after
}

@test "limits: 4096 silent connections from one address lock nobody out under the default caps" {
	local maddr paddr
	mc_start_daemon master mc-master --listen 127.0.0.1:0 --http 127.0.0.1:0 \
		--header-timeout 200ms --peer-ttl 1h
	maddr="$MC_LAST_ADDR"
	MC_MASTER="$maddr"
	export MC_MASTER
	mc_start_daemon p1 mc-peer --master "$maddr" --listen 127.0.0.1:0 --dram 64MiB \
		--http 127.0.0.1:0 --header-timeout 200ms
	paddr="$MC_LAST_ADDR"
	mc_peer_listed "$paddr"
	garbage_bg "$BATS_TEST_TMPDIR/gm.out" --from 127.0.0.2 --hold 4096 --until-closed "$maddr"
	local gm=$GARBAGE_PID
	garbage_bg "$BATS_TEST_TMPDIR/gp.out" --from 127.0.0.2 --hold 4096 --until-closed "$paddr"
	local gp=$GARBAGE_PID
	# a quarter of the 4096 connections may come from one address at once;
	# at the peer, 256 strangers (no granted request yet) at most
	wait_until 30 closed_at_least master per_addr 1
	wait_until 30 closed_at_least p1 unvouched 1
	served silent
	mc_start_daemon p2 mc-peer --master "$maddr" --listen 127.0.0.1:0 --dram 64MiB
	mc_peer_listed "$MC_LAST_ADDR"
	wait "$gm"
	wait "$gp"
	run cat "$BATS_TEST_TMPDIR/gm.out" "$BATS_TEST_TMPDIR/gp.out"
	assert_line --partial "$maddr: 4096 of 4096 connections closed by the server"
	assert_line --partial "$paddr: 4096 of 4096 connections closed by the server"
	# each one was refused over the cap or closed by the header timeout
	# (or at the peer, shed for a newer stranger)
	[ $(($(closed master per_addr) + $(closed master header_timeout))) -eq 4096 ]
	[ $(($(closed p1 per_addr) + $(closed p1 header_timeout) + $(closed p1 unvouched))) -eq 4096 ]
}

@test "limits: every unix-socket client counts as one address" {
	local st=0
	mc_start_master --http 127.0.0.1:0 --max-conns-per-addr 3
	garbage_bg "$BATS_TEST_TMPDIR/g.out" --hold 3 --request stats --until-closed "$MC_MASTER"
	wait_until 20 mc_metric_at_least master mc_connections 3
	mc-cli --timeout 5s ls >/dev/null || st=$?
	[ "$st" -eq 69 ]
	[ "$(closed master per_addr)" -ge 1 ]
	kill "$GARBAGE_PID"
	wait "$GARBAGE_PID" || true
	wait_until 20 eval 'mc-cli --timeout 5s ls >/dev/null'
}

@test "limits: a hello past --max-conns-per-tenant is refused and its connection closed" {
	local st=0
	mc_start_master --http 127.0.0.1:0 --max-conns-per-tenant 2
	mc_start_peer p1
	garbage_bg "$BATS_TEST_TMPDIR/g.out" --hold 2 --request hello --until-closed "$MC_MASTER"
	wait_until 20 mc_metric_at_least master 'mc_tenant_connections{tenant="default"}' 2
	run mc-cli --timeout 5s ls
	[ "$status" -eq 69 ]
	assert_output --partial "too many connections for tenant 'default': 2 open"
	[ "$(closed master per_tenant)" -eq 1 ]
	# another tenant's clients are served
	local src="$BATS_TEST_TMPDIR/t.src"
	mc_random_file "$src" 10000
	mc-cli --timeout 5s -t other put t1 "$src"
	mc-cli --timeout 5s -t other get t1 | cmp "$src" -
	kill "$GARBAGE_PID"
	wait "$GARBAGE_PID" || true
	wait_until 20 eval 'mc-cli --timeout 5s ls >/dev/null'
}

@test "limits: a negative cap or a bad timeout exits 64 naming the flag" {
	run mc-master --listen "unix:$MC_DIR/bad.sock" --max-conns-per-addr -1
	[ "$status" -eq 64 ]
	assert_output --partial "max-conns-per-addr"
	run mc-master --listen "unix:$MC_DIR/bad.sock" --max-conns-per-tenant -2
	[ "$status" -eq 64 ]
	assert_output --partial "max-conns-per-tenant"
	run mc-peer --dram 1MiB --listen "unix:$MC_DIR/bad.sock" --idle-timeout 5parsecs
	[ "$status" -eq 64 ]
	assert_output --partial "idle-timeout"
	run mc-peer --dram 1MiB --listen "unix:$MC_DIR/bad.sock" --header-timeout -1s
	[ "$status" -eq 64 ]
	assert_output --partial "header-timeout"
}
