#!/usr/bin/env bats
#
# The conventions every program follows (DESIGN.md section 8): --help,
# --version, --list-options, exit codes and messages for bad usage,
# readiness and clean stops of the daemons.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# Every line of --list-options: an option "--name<TAB>ARG<TAB>help", a
# command "cmd<TAB>NAME<TAB>help", or a command's option
# "--name<TAB>ARG<TAB>help<TAB>CMD"; an option then "<TAB>short=X" when
# it has a short name and "<TAB>values=A|B" when it takes one of a few
# words.
LIST_RE=$'^(--[a-z][a-z0-9-]*\t(ADDR|SIZE|DURATION|FILE|DIR|N|STR|[A-Z][A-Z_]*|-)\t[^\t]+(\t[a-z][a-z-]*)?(\tshort=[a-zA-Z0-9])?(\tvalues=[a-z0-9_:-]+(\|[a-z0-9_:-]+)*)?|cmd\t[a-z][a-z-]*\t[^\t]+)$'

check_list_options() {
	local prog="$1" line
	run -0 "$prog" --list-options
	[ "${#lines[@]}" -gt 0 ]
	for line in "${lines[@]}"; do
		if ! [[ "$line" =~ $LIST_RE ]]; then
			echo "# $prog --list-options: bad line: '$line'" >&2
			return 1
		fi
	done
}

# ---- --help, --version, --list-options ----

@test "programs: mc-master --help exits 0 and shows usage" {
	run -0 mc-master --help
	assert_output --regexp '[Uu]sage'
	assert_output --partial mc-master
	assert_output --partial --listen
}

@test "programs: mc-peer --help exits 0 and shows usage" {
	run -0 mc-peer --help
	assert_output --regexp '[Uu]sage'
	assert_output --partial --dram
}

@test "programs: mc-cli --help exits 0 and shows usage and the commands" {
	run -0 mc-cli --help
	assert_output --regexp '[Uu]sage'
	assert_output --partial put
	assert_output --partial get
}

@test "programs: --version prints 'PROG VERSION' for each program and test tool" {
	local p
	[[ $MC_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]
	# (mc-ssdforge's --version names the version of the object it forges)
	for p in mc-master mc-peer mc-cli mc-bench mc-evict-plan mc-snapshot mc-softpin \
		mc-fill mc-proxy; do
		run -0 "$p" --version
		assert_output "$p $MC_VERSION"
	done
}

@test "programs: the version is written once, in the Makefile" {
	cd "$MC_ROOT"
	run -0 grep -c "^VERSION := $MC_VERSION\$" Makefile
	assert_output 1
	run -1 grep -rnwF "$MC_VERSION" libmc cmd tests man completions examples README.md
	assert_output ""
}

@test "programs: every program's --version is the Makefile's VERSION" {
	local p v
	v=$(sed -n 's/^VERSION := //p' "$MC_ROOT/Makefile")
	[ -n "$v" ]
	for p in "$MC_ROOT/${MC_TEST_BIN:-bin}"/mc-*; do
		run -0 "$p" --version
		assert_output "$(basename "$p") $v"
	done
}

@test "programs: mc-master --list-options prints the documented format and every contract flag" {
	check_list_options mc-master
	local f
	for f in listen http ready-fd lease-ttl peer-ttl put-timeout config max-conns log-level; do
		assert_line --regexp "^--$f"$'\t'
	done
	assert_line --regexp $'^--lease-ttl\tDURATION\t'
	assert_line --regexp $'^--listen\tADDR\t'
}

@test "programs: mc-peer --list-options prints the documented format and every contract flag" {
	check_list_options mc-peer
	local f
	for f in master listen dram http ready-fd domain host-id advertise fault-inject max-conns log-level; do
		assert_line --regexp "^--$f"$'\t'
	done
	assert_line --regexp $'^--dram\tSIZE\t'
	assert_line --regexp $'^--fault-inject\t-\t'
}

@test "programs: mc-cli --list-options prints global options and one line per command" {
	check_list_options mc-cli
	local c
	for c in put get rm exist ls stat peers corrupt; do
		assert_line --regexp "^cmd"$'\t'"$c"$'\t'
	done
	assert_line --regexp $'^--json\t-\t'
	assert_line --regexp $'^--timeout\tDURATION\t'
}

# ---- bad usage: exit 64 naming the flag ----

@test "programs: an unknown flag exits 64 naming the flag, for each program" {
	local p
	for p in mc-master mc-peer mc-cli; do
		run -64 timeout 10 "$p" --no-such-flag
		assert_output --partial "$p: unknown option '--no-such-flag'"
	done
}

@test "programs: mc-master with a bad duration exits 64 naming the flag" {
	run -64 timeout 10 mc-master --listen "unix:$MC_DIR/x.sock" --lease-ttl soon
	assert_output --partial "mc-master: invalid --lease-ttl 'soon'"
	run -64 timeout 10 mc-master --listen "unix:$MC_DIR/x.sock" --peer-ttl 10parsecs
	assert_output --partial "invalid --peer-ttl '10parsecs'"
}

@test "programs: mc-peer with a bad size exits 64 naming the flag" {
	run -64 timeout 10 mc-peer --master "unix:$MC_DIR/m.sock" --listen "unix:$MC_DIR/p.sock" --dram lots
	assert_output --partial "mc-peer: invalid --dram 'lots'"
}

@test "programs: mc-peer without --dram exits 64 naming --dram" {
	run -64 timeout 10 mc-peer --master "unix:$MC_DIR/m.sock" --listen "unix:$MC_DIR/p.sock"
	assert_output --partial --dram
}

@test "programs: mc-cli with a bad --timeout exits 64 naming the flag" {
	run -64 mc-cli -m "unix:$MC_DIR/none.sock" --timeout forever exist k
	assert_output --partial "mc-cli: invalid --timeout 'forever'"
}

@test "programs: mc-cli unknown command exits 64 naming it" {
	run -64 mc-cli -m "unix:$MC_DIR/none.sock" frobnicate k
	assert_output --partial frobnicate
}

@test "programs: mc-cli get without KEY exits 64" {
	run -64 mc-cli -m "unix:$MC_DIR/none.sock" get
}

@test "programs: mc-cli put with an unknown command option exits 64 naming it" {
	run -64 mc-cli -m "unix:$MC_DIR/none.sock" put k /dev/null --replicaz 2
	assert_output --partial --replicaz
}

@test "programs: mc-cli put of an unreadable FILE fails naming the file" {
	mc_start_master
	run mc-cli put k "$MC_DIR/no-such-file"
	[ "$status" -ne 0 ]
	assert_output --partial no-such-file
}

# ---- unreachable master ----

@test "programs: mc-cli against an absent unix socket exits 69 with cannot connect" {
	run -69 mc-cli -m "unix:$MC_DIR/nobody.sock" exist k
	assert_output --partial "mc-cli: cannot connect to unix:$MC_DIR/nobody.sock"
}

@test "programs: mc-cli against a socket nobody listens on exits 69 with connection refused" {
	# a master killed with SIGKILL leaves its socket file behind
	mc_start_master
	mc_kill9 master
	[ -S "$MC_DIR/master.sock" ]
	run -69 mc-cli exist k
	assert_output --partial "mc-cli: cannot connect to unix:$MC_DIR/master.sock: connection refused"
}

@test "programs: mc-cli pointed at a peer instead of a master exits 69, not 64" {
	mc_start_master
	MC_PEER_DRAM=16MiB mc_start_peers 1
	local peer
	peer="$(mc_addr peer1)"
	run -69 mc-cli -m "$peer" stat
	assert_output --partial "mc-cli: cannot connect to the master: $peer does not offer it"
	assert_output --partial "unknown method 'hello'"
	run -69 mc-cli -m "$peer" get k
	run -69 mc-cli -m "$peer" peers
}

@test "programs: MC_MASTER is the default master address of mc-cli" {
	run -69 env MC_MASTER="unix:$MC_DIR/env.sock" mc-cli exist k
	assert_output --partial "unix:$MC_DIR/env.sock"
}

# ---- daemons: readiness, announcements, stops ----

@test "programs: mc-master announces 'listening on ADDR' and writes ADDR to --ready-fd" {
	mc_start_master
	assert_equal "$(mc_addr master)" "unix:$MC_DIR/master.sock"
	grep -q "mc-master: listening on unix:$MC_DIR/master.sock" "$MC_DIR/master.log"
}

@test "programs: --listen with port 0 reports the port the kernel picked" {
	mc_start_daemon tcpmaster mc-master --listen 127.0.0.1:0
	local addr
	addr="$(mc_addr tcpmaster)"
	[[ "$addr" =~ ^127\.0\.0\.1:[1-9][0-9]*$ ]]
	grep -q "listening on $addr" "$MC_DIR/tcpmaster.log"
	run -1 mc-cli -m "$addr" exist nothing
	assert_output ''
}

@test "programs: mc-peer with port 0 reports its port and registers that address" {
	mc_start_master
	mc_start_daemon tcppeer mc-peer --master "$MC_MASTER" --listen 127.0.0.1:0 --dram 16MiB
	local addr
	addr="$(mc_addr tcppeer)"
	[[ "$addr" =~ ^127\.0\.0\.1:[1-9][0-9]*$ ]]
	wait_until 10 mc_peer_listed "$addr"
	echo tcp | mc-cli put via-tcp
	[ "$(mc-cli get via-tcp)" = tcp ]
}

@test "programs: peers lists each registered peer with its address and dram capacity" {
	mc_start_master
	MC_PEER_DRAM=16MiB mc_start_peers 2 --domain rack-a --host-id node-x
	run -0 mc-cli peers
	assert_output --partial "$(mc_addr peer1)"
	assert_output --partial "$(mc_addr peer2)"
	assert_output --partial rack-a
	assert_output --partial node-x
	run -0 mc_peers_json
	[ "${#lines[@]}" -eq 2 ]
	local l
	for l in "${lines[@]}"; do
		echo "$l" | jq_true '.alive == true and .domain == "rack-a" and .host == "node-x"'
		echo "$l" | jq_true '[.tiers[] | select(.tier == "dram")][0].capacity == 16777216'
	done
}

dram_field_is() {
	mc_peers_json | jq_true --arg f "$1" --argjson n "$2" \
		'[.tiers[] | select(.tier == "dram")][0][$f] == $n'
}

@test "programs: peers shows the master's accounted usage right after a burst, the peer's beside it" {
	mc_start_master
	MC_PEER_DRAM=16MiB mc_start_peers 1
	local i
	for ((i = 0; i < 9; i++)); do
		head -c 1048576 /dev/zero | mc-cli put "used-$i"
	done
	# no heartbeat awaited: the master's own account is exact at once
	dram_field_is used $((9 * 1048576))
	run -0 mc-cli peers
	assert_output --partial "9MiB/16MiB (peer: "
	# the peer's own figure catches up with its next heartbeat
	wait_until 5 dram_field_is reported $((9 * 1048576))
}

@test "programs: put larger than every peer fails with exit 1 naming the largest tier" {
	mc_start_master
	MC_PEER_DRAM=4MiB mc_start_peers 2
	local src="$BATS_TEST_TMPDIR/big"
	mc_random_file "$src" $((5 << 20))
	run -1 mc-cli put too-big "$src"
	assert_output --partial "5MiB is larger than any tier: the largest is 4MiB"
	run -1 mc-cli exist too-big
	# a fitting object still goes in afterwards
	head -c 1000 "$src" | mc-cli put fits
}

@test "programs: put with no peer at all fails as unavailable, with too few peers" {
	mc_start_master
	run -69 mc-cli put lonely - <<<"x"
	assert_output "mc-cli: cannot put 'lonely': 1 replica needs 1 live peer; 0 are alive"
}

@test "programs: SIGTERM stops mc-master with exit 0" {
	mc_start_master
	mc_stop master TERM
	assert_equal "$MC_STOP_STATUS" 0
}

@test "programs: SIGINT stops mc-master with exit 0" {
	mc_start_master
	mc_stop master INT
	assert_equal "$MC_STOP_STATUS" 0
}

@test "programs: SIGTERM stops mc-peer with exit 0 and it unregisters at once" {
	mc_start_master --peer-ttl 1h
	mc_start_peers 2
	local a1 a2
	a1="$(mc_addr peer1)"
	a2="$(mc_addr peer2)"
	mc_stop peer1 TERM
	assert_equal "$MC_STOP_STATUS" 0
	# no clock move: only the unregister can remove it
	wait_until 5 mc_peer_not_listed "$a1"
	mc_peer_listed "$a2"
	mc_stop peer2 TERM
	assert_equal "$MC_STOP_STATUS" 0
	wait_until 5 mc_peer_count_is 0
}

@test "programs: mc-peer survives a master restart and registers with the new master" {
	mc_start_master
	mc_start_peers 1
	mc_stop master TERM
	assert_equal "$MC_STOP_STATUS" 0
	mc_start_master
	wait_until 10 mc_peer_listed "$(mc_addr peer1)"
	echo again | mc-cli put after-restart
	[ "$(mc-cli get after-restart)" = again ]
	mc_stop peer1 TERM
	assert_equal "$MC_STOP_STATUS" 0
}

@test "programs: a daemon started under an absent address cannot listen and exits non-zero" {
	run timeout 10 mc-master --listen "unix:$MC_DIR/no/such/dir/m.sock"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	assert_output --partial "$MC_DIR/no/such/dir/m.sock"
}

@test "programs: mc-master --restore of a missing file exits 65 naming the file" {
	run -65 timeout 10 mc-master --listen "unix:$MC_DIR/x.sock" --restore "$MC_DIR/missing.mcs"
	assert_output --partial "mc-master: cannot restore '$MC_DIR/missing.mcs': "
}

@test "programs: a --ready-fd that is not open for writing exits 64 naming the flag" {
	run -64 timeout 10 mc-master --listen "unix:$MC_DIR/x.sock" --ready-fd 999
	assert_output --partial "mc-master: invalid --ready-fd '999': not an open file descriptor"
	run -64 timeout 10 mc-peer --master "unix:$MC_DIR/m.sock" --listen "unix:$MC_DIR/p.sock" \
		--dram 1MiB --ready-fd 999
	assert_output --partial "mc-peer: invalid --ready-fd '999': not an open file descriptor"
	run -64 timeout 10 mc-master --listen "unix:$MC_DIR/x.sock" --ready-fd 5 5</dev/null
	assert_output --partial "invalid --ready-fd '5': not open for writing"
}

@test "programs: mc-master --config sets options and flags beat it" {
	printf '# test config\nlease-ttl = 3s\n\npeer-ttl=1h\n' >"$MC_DIR/m.conf"
	mc_start_master --config "$MC_DIR/m.conf"
	MC_PEER_DRAM=16MiB mc_start_peers 1
	echo x | mc-cli put conf-1
	mc_hold_lease conf-1
	mc_stat_json conf-1 | jq_true --argjson d $(($(clock_now) + 3000)) '.lease_deadline == $d'
	mc_stop_all
	mc_start_master --config "$MC_DIR/m.conf" --lease-ttl 4s
	MC_PEER_DRAM=16MiB mc_start_peers 1
	echo x | mc-cli put conf-2
	mc_hold_lease conf-2
	mc_stat_json conf-2 | jq_true --argjson d $(($(clock_now) + 4000)) '.lease_deadline == $d'
}

@test "programs: a bad value in --config exits 64 naming the option" {
	printf 'lease-ttl = soon\n' >"$MC_DIR/bad.conf"
	run -64 timeout 10 mc-master --listen "unix:$MC_DIR/x.sock" --config "$MC_DIR/bad.conf"
	assert_output --partial "invalid --lease-ttl 'soon'"
}

@test "programs: a bad --log-level exits 64 naming the flag" {
	run -64 timeout 10 mc-master --listen "unix:$MC_DIR/x.sock" --log-level chatty
	assert_output --partial "invalid --log-level 'chatty'"
	run -64 timeout 10 mc-peer --listen "unix:$MC_DIR/y.sock" --dram 1MiB --log-level chatty
	assert_output --partial "invalid --log-level 'chatty'"
}

@test "programs: mc-peer --advertise is the address the master hands out" {
	mc_start_master
	mc_start_daemon adv mc-peer --master "$MC_MASTER" --listen "unix:$MC_DIR/adv.sock" \
		--dram 16MiB --advertise "unix:$MC_DIR/elsewhere.sock"
	wait_until 10 mc_peer_listed "unix:$MC_DIR/elsewhere.sock"
	run -1 mc_peer_listed "unix:$MC_DIR/adv.sock"
}

@test "programs: mc-peer refuses a --host-id or --domain over the wire limit at start" {
	local long at_limit
	long="$(printf 'h%.0s' {1..129})"
	at_limit="${long:1}"
	run -64 timeout 10 mc-peer --master "unix:$MC_DIR/m.sock" --listen "unix:$MC_DIR/p.sock" \
		--dram 1MiB --host-id "$long"
	assert_output --partial "mc-peer: invalid --host-id '$long': 129 characters, over the wire limit of 128"
	run -64 timeout 10 mc-peer --master "unix:$MC_DIR/m.sock" --listen "unix:$MC_DIR/p.sock" \
		--dram 1MiB --domain "$long"
	assert_output --partial "invalid --domain '$long': 129 characters, over the wire limit of 128"
	run -64 env MC_DOMAIN="$long" timeout 10 mc-peer --master "unix:$MC_DIR/m.sock" \
		--listen "unix:$MC_DIR/p.sock" --dram 1MiB
	assert_output --partial "over the wire limit of 128"
	# 128 characters are still a name the master takes
	mc_start_master
	MC_PEER_DRAM=16MiB mc_start_peer longname --host-id "$at_limit" --domain "$at_limit"
	mc_peers_json | jq_true --arg h "$at_limit" '.host == $h and .domain == $h'
}

@test "programs: MC_DOMAIN sets mc-peer's default domain" {
	mc_start_master
	MC_DOMAIN=env-dom mc_start_peer envdom
	mc_peers_json | jq_true '.domain == "env-dom"'
}
