#!/usr/bin/env bats
#
# Hostile input: garbage from tests/tools/mc-garbage must close only its
# own connection, never stop a daemon, never grow it without bound.

load helpers

# VmRSS may grow by less than this over 1000 garbage messages.
RSS_GROWTH_MAX_KB=$((64 * 1024))

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-garbage mc-rpc
	mc_file_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h
	MC_PEER_DRAM=64MiB mc_start_peers 1
}

teardown_file() {
	mc_stop_everything
}

# still_serving TAG: a put/get round trip through the master and the peer.
still_serving() {
	local src="$BATS_TEST_TMPDIR/$1.src"
	mc_random_file "$src" 100000
	mc-cli put "after/$1" "$src"
	mc-cli get "after/$1" | cmp "$src" -
	mc_peer_listed "$(mc_addr peer1)"
}

# garbage_run NAME SEED PROBE: 1000 messages at daemon NAME; checks that it
# survives, answers the held probe connection and stays within the memory
# bound.
garbage_run() {
	local name="$1" seed="$2" probe="$3" pid before after
	pid="$(mc_pid "$name")"
	before="$(mc_rss_kb "$pid")"
	run -0 mc-garbage --seed "$seed" --count 1000 --timeout-ms 2000 --max-ms 60000 \
		--probe "$probe" "$(mc_addr "$name")"
	assert_output --partial "1000 messages"
	assert_output --partial "0 left open"
	assert_output --partial "still answered"
	mc_alive "$pid"
	after="$(mc_rss_kb "$pid")"
	echo "# $name VmRSS ${before} kB -> ${after} kB" >&3
	[ $((after - before)) -lt "$RSS_GROWTH_MAX_KB" ]
}

@test "robust: 1000 garbage messages leave the master serving with bounded memory" {
	garbage_run master 1 stats
	still_serving master1
}

@test "robust: 1000 garbage messages leave the peer serving with bounded memory" {
	garbage_run peer1 2 peer_stats
	still_serving peer1
}

@test "robust: another 1000 garbage messages (other seed) to both daemons leave them serving" {
	garbage_run master 3 stats
	garbage_run peer1 4 peer_stats
	still_serving both
}

@test "robust: a malformed message closes only its own connection on the master" {
	run -0 mc-garbage --isolation --probe stats --timeout-ms 3000 "$MC_MASTER"
	still_serving iso-master
}

@test "robust: a malformed message closes only its own connection on the peer" {
	run -0 mc-garbage --isolation --probe peer_stats --timeout-ms 3000 "$(mc_addr peer1)"
	still_serving iso-peer
}

@test "robust: objects stored before the garbage still read back byte-exact" {
	local src="$BATS_TEST_TMPDIR/before"
	mc_random_file "$src" 500000
	mc-cli put before-garbage "$src"
	mc-garbage --seed 5 --count 300 "$MC_MASTER" >/dev/null
	mc-garbage --seed 6 --count 300 "$(mc_addr peer1)" >/dev/null
	mc-cli get before-garbage | cmp "$src" -
}

@test "robust: mc-garbage sends the same traffic for the same seed" {
	run -0 mc-garbage --dry-run --seed 9 --count 200
	local first="$output"
	run -0 mc-garbage --dry-run --seed 9 --count 200
	assert_output "$first"
	run -0 mc-garbage --dry-run --seed 10 --count 200
	[ "$output" != "$first" ]
}

# reachable ADDR: a fresh mc-cli call gets an answer (exist of an absent
# key: exit 1, not 69).
reachable() {
	local st=0
	mc-cli -m "$1" exist no-such-key-here || st=$?
	[ "$st" -eq 1 ]
}

# cpu_ticks PID: user+system clock ticks used so far.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# flood NAME PROBE: 300 idle connections held for 500 ms against daemon
# NAME; the held probe connection must still be answered, a fresh client
# must be served afterwards, and the daemon must not spin meanwhile.
flood() {
	local name="$1" probe="$2" addr pid t0 t1
	addr="$(mc_addr "$name")"
	pid="$(mc_pid "$name")"
	t0="$(cpu_ticks "$pid")"
	run -0 mc-garbage --probe "$probe" --hold 300 --hold-ms 500 --timeout-ms 1000 "$addr"
	assert_output --partial "still answered"
	t1="$(cpu_ticks "$pid")"
	echo "# $name: ${output//$'\n'/; }; cpu $((t1 - t0)) ticks" >&3
	# a busy loop on accept() would burn the whole 500 ms (~50 ticks)
	[ $((t1 - t0)) -lt 40 ]
	mc_alive "$pid"
}

@test "robust: a connection flood past --max-conns leaves the master serving" {
	mc_start_daemon capped mc-master --listen "unix:$MC_DIR/capped.sock" --max-conns 16
	flood capped stats
	wait_until 5 reachable "$(mc_addr capped)"
	mc_stop capped
	assert_equal "$MC_STOP_STATUS" 0
}

@test "robust: running out of file descriptors (EMFILE) does not stop the master" {
	mc_start_daemon lowfd prlimit --nofile=32:32 mc-master --listen "unix:$MC_DIR/lowfd.sock"
	flood lowfd stats
	wait_until 5 reachable "$(mc_addr lowfd)"
	mc_stop lowfd
	assert_equal "$MC_STOP_STATUS" 0
}

@test "robust: a connection flood past --max-conns leaves the peer serving" {
	mc_start_daemon cappeer mc-peer --master "$MC_MASTER" --listen "unix:$MC_DIR/cappeer.sock" \
		--dram 16MiB --max-conns 16
	flood cappeer peer_stats
	wait_until 5 eval 'mc-rpc "$(mc_addr cappeer)" peer_stats'
	mc_stop cappeer
	assert_equal "$MC_STOP_STATUS" 0
}

@test "robust: running out of file descriptors (EMFILE) does not stop the peer" {
	mc_start_daemon lowfdpeer prlimit --nofile=32:32 mc-peer --master "$MC_MASTER" \
		--listen "unix:$MC_DIR/lowfdpeer.sock" --dram 16MiB
	flood lowfdpeer peer_stats
	wait_until 5 eval 'mc-rpc "$(mc_addr lowfdpeer)" peer_stats'
	mc_stop lowfdpeer
	assert_equal "$MC_STOP_STATUS" 0
}
