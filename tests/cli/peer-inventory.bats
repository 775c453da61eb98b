#!/usr/bin/env bats
#
# Master restarts without a snapshot: the peers keep serving, re-register
# and report their inventory (peer_inventory), from which the new master
# adopts what they hold. Every test runs its own cluster, since each one
# kills its master.
#
# The peers run with --fault-inject: the tests write, read and drop
# copies on a peer behind the master's back, without its grants.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc
}

setup() {
	mc_test_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h
}

teardown() {
	local f
	# a peer left stopped by a failed test would sit out its SIGTERM
	for f in "$MC_DIR"/*.pid; do
		[ -f "$f" ] || continue
		kill -CONT "$(awk '{ print $2 }' "$f")" 2>/dev/null || true
	done
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# What a peer's log says once the master answered its whole inventory,
# and (once per peer) that a master refused to take one.
INV_DONE='reported [0-9]+ objects to the master \(kept [0-9]+, adopted [0-9]+, dropped [0-9]+\)'
INV_REFUSED='did not take the inventory'

# log_count NAME REGEX: lines of daemon NAME's log matching REGEX.
log_count() {
	grep -cE "$2" "$MC_DIR/$1.log" || true
}

log_count_above() {
	[ "$(log_count "$1" "$2")" -gt "$3" ]
}

# restart_master PEER...: kill -9 the master, start a new one on the same
# socket (no snapshot), and wait until each PEER has registered again and
# its inventory was answered. A master that does not take inventories
# fails the test: it would know nothing of the old objects.
restart_master() {
	local name
	declare -A regs reports
	for name in "$@"; do
		regs[$name]="$(log_count "$name" 'registered with master')"
		reports[$name]="$(log_count "$name" "$INV_DONE")"
	done
	mc_kill9 master
	mc_start_master --peer-ttl 1h --put-timeout 1h
	for name in "$@"; do
		wait_until 15 log_count_above "$name" 'registered with master' "${regs[$name]}"
		if grep -q "$INV_REFUSED" "$MC_DIR/$name.log"; then
			echo "# mc-master did not take $name's peer_inventory" >&2
			return 1
		fi
		wait_until 15 log_count_above "$name" "$INV_DONE" "${reports[$name]}"
	done
}

# get_matches KEY FILE [CLI ARGS...]: KEY reads back as FILE's bytes.
get_matches() {
	local got="$BATS_TEST_TMPDIR/got.$RANDOM"
	mc-cli "${@:3}" get "$1" >"$got" && cmp -s "$2" "$got"
}

peer_read() {
	mc-rpc "$(mc_addr "$1")" read "${@:2}"
}

replica_count_is() {
	[ "$(mc_replica_addrs "$1" | wc -l)" -eq "$2" ]
}

# peer_lacks NAME KEY: peer NAME holds no copy of KEY (tenant default).
peer_lacks() {
	! peer_read "$1" tenant=default key="$2"
}

# stats_objects: the master's object count.
stats_objects() {
	mc-cli --json stat | jq -r '.objects'
}

stats_objects_is() {
	[ "$(stats_objects)" = "$1" ]
}

@test "peer inventory: a peer keeps serving reads while the master is down and registers again" {
	mc_start_peer peer1 --fault-inject
	local src="$BATS_TEST_TMPDIR/src" got="$BATS_TEST_TMPDIR/got"
	mc_random_file "$src" 70000
	mc-cli put down-key "$src"
	mc_kill9 master
	run -0 mc-rpc -o "$got" "$(mc_addr peer1)" read tenant=default key=down-key
	cmp "$src" "$got"
	mc_start_master --peer-ttl 1h --put-timeout 1h
	wait_until 15 mc_peer_listed "$(mc_addr peer1)"
	run -0 grep -c "registered with master" "$MC_DIR/peer1.log"
	[ "$output" -ge 2 ]
}

@test "peer inventory: objects put before a master restart are adopted and read back byte-exact" {
	mc_start_peers 2 --fault-inject
	local d="$BATS_TEST_TMPDIR"
	mc_random_file "$d/small" 1
	mc_random_file "$d/mid" 65536
	mc_random_file "$d/big" 3000000
	: >"$d/empty"
	mc-cli put obj-small "$d/small"
	mc-cli put obj-mid "$d/mid" --replicas 2
	mc-cli put obj-big "$d/big"
	mc-cli put obj-empty "$d/empty"
	mc-cli -t other put obj-mid "$d/small"
	restart_master peer1 peer2
	wait_until 10 get_matches obj-big "$d/big"
	get_matches obj-small "$d/small"
	get_matches obj-mid "$d/mid"
	get_matches obj-empty "$d/empty"
	get_matches obj-mid "$d/small" -t other
	# both copies of the two-replica object are known again
	wait_until 10 replica_count_is obj-mid 2
	run -0 mc-cli --json stat
	jq_true '.objects == 5' <<<"$output"
}

@test "peer inventory: an inventory of several chunks is adopted whole" {
	mc_start_peer peer1
	local total=2100
	# more copies than one inventory chunk holds; the new master has no
	# snapshot, so only the inventory can tell it of them
	run -0 mc-fill --prefix many- -n "$total" --min-size 1 --max-size 64 put
	restart_master peer1
	run -0 grep -E "reported $total objects to the master \(kept 0, adopted $total," \
		"$MC_DIR/peer1.log"
	wait_until 10 stats_objects_is "$total"
	run -0 mc-fill --prefix many- -n "$total" --min-size 1 --max-size 64 check
	assert_output "checked $total objects: 0 bad"
}

@test "peer inventory: a copy that disagrees with the master's is dropped on its peer, the good one stays" {
	mc_start_peers 2 --fault-inject
	local d="$BATS_TEST_TMPDIR"
	mc_random_file "$d/good" 5000
	mc_random_file "$d/bad" 4000
	mc-cli put split "$d/good" --replicas 2
	run -0 mc_replica_addrs split
	[ "${#lines[@]}" -eq 2 ]
	# peer2's copy now disagrees: the same version, other bytes
	mc-rpc --bulk "$d/bad" "$(mc_addr peer2)" write tenant=default key=split version:=1
	# peer2 sleeps through the restart, so peer1's copy is adopted first
	kill -STOP "$(mc_pid peer2)"
	restart_master peer1
	wait_until 10 get_matches split "$d/good"
	kill -CONT "$(mc_pid peer2)"
	wait_until 15 mc_peer_listed "$(mc_addr peer2)"
	# the master told peer2 to drop its copy, and kept only peer1's
	wait_until 10 peer_lacks peer2 split
	run -1 peer_read peer2 tenant=default key=split
	assert_output --partial not_found
	run -0 mc_replica_addrs split
	assert_output "$(mc_addr peer1)"
	get_matches split "$d/good"
}

@test "peer inventory: metrics count registrations and whole inventory reports" {
	mc_start_peer peer1 --fault-inject --http 127.0.0.1:0
	local url
	url="$(grep -o 'http://[0-9.]*:[0-9]*/metrics' "$MC_DIR/peer1.log" | head -n 1)"
	[ -n "$url" ]
	# the first registration's report (of nothing) is answered at once
	wait_until 10 log_count_above peer1 "$INV_DONE|$INV_REFUSED" 0
	run -0 curl -fsS "$url"
	assert_line "mc_peer_registrations_total 1"
	restart_master peer1
	run -0 curl -fsS "$url"
	assert_line "mc_peer_registrations_total 2"
	assert_line "mc_peer_inventory_reports_total 2"
}
