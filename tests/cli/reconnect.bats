#!/usr/bin/env bats
#
# A peer whose control link to the master fails (the master stalls, a
# connection is reset) resumes its registration with the session token
# of its first one: same peer id, replicas and metadata kept. What it
# removed while away reaches the master as a delta (or, when its journal
# of removals overflowed, as a whole inventory). A peer that registers
# anew at an address the master still knows has its copies confirmed
# with their metadata, and the rest dropped. Every test runs its own
# cluster: each one stops or kills a daemon.
#
# The peers run with --fault-inject: the tests write, read and drop
# copies on a peer behind the master's back, without its grants.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-proxy
}

setup() {
	mc_test_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h
}

teardown() {
	local f
	# a daemon left stopped by a failed test would sit out its SIGTERM
	for f in "$MC_DIR"/*.pid; do
		[ -f "$f" ] || continue
		kill -CONT "$(awk '{ print $2 }' "$f")" 2>/dev/null || true
	done
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# What the master logs when it gives up on replicas or objects.
LOSS='replicas removed|objects erased|replicas dropped'

# log_has NAME REGEX: daemon NAME's log has a line matching REGEX.
log_has() {
	grep -qE "$2" "$MC_DIR/$1.log"
}

# wait_log SECONDS NAME REGEX: wait, bounded, for such a line.
wait_log() {
	wait_until "$1" log_has "$2" "$3"
}

# put_objects: three kinds of objects with their metadata, the bytes of
# each kept in $BATS_TEST_TMPDIR/KEY for read-back.
KEYS=(pinned/1 pinned/2 pinned/3 soft/1 soft/2 plain/1 plain/2)
put_objects() {
	local k d="$BATS_TEST_TMPDIR"
	for k in "${KEYS[@]}"; do
		mc_random_file "$d/${k//\//_}" $((1000 + RANDOM % 50000))
	done
	for k in pinned/1 pinned/2 pinned/3; do
		mc-cli put "$k" "$d/${k//\//_}" --type kv --group g --hard-pin \
			--soft-pin enable:1h
	done
	for k in soft/1 soft/2; do
		mc-cli put "$k" "$d/${k//\//_}" --type hidden --group h --soft-pin enable:30m
	done
	for k in plain/1 plain/2; do
		mc-cli put "$k" "$d/${k//\//_}" --type tensor
	done
}

# save_view FILE [KEY...]: the master's record of each key (all of stat)
# in FILE, and the keys' records in the candidate view (where
# hard-pinned objects never appear) in FILE.cand.
save_view() {
	local out="$1" k
	shift
	[ $# -gt 0 ] || set -- "${KEYS[@]}"
	: >"$out"
	for k in "$@"; do
		mc_stat_json "$k" >>"$out" || return 1
	done
	# crf is decayed with a half-life that follows the object count: not
	# the object's own metadata
	mc-cli --json candidates |
		jq -c 'select(has("key") and (.key | IN($ARGS.positional[]))) | del(.crf)' \
			--args "$@" | sort >"$out.cand"
}

# same_view A B: both views are the same.
same_view() {
	diff "$1" "$2" && diff "$1.cand" "$2.cand"
}

# read_back KEY...: each key reads back byte-exact.
read_back() {
	local k got="$BATS_TEST_TMPDIR/got"
	for k in "$@"; do
		mc-cli get "$k" >"$got" || return 1
		cmp "$BATS_TEST_TMPDIR/${k//\//_}" "$got" || return 1
	done
}

# acked: make sure the master has acknowledged every change on the peer
# so far. A heartbeat is answered, then a second one: one at a time, so
# the second goes out only after the first answer was taken. The fake
# clock tells each heartbeat apart (last_heartbeat is stamped with it).
heartbeat_after() {
	mc_peers_json | jq_true --argjson t "$1" '.last_heartbeat >= $t'
}
acked() {
	local n
	for n in 1 2; do
		advance_clock 1
		wait_until 10 heartbeat_after "$(clock_now)" || return 1
	done
}

# start_proxy: mc-proxy on TCP loopback in front of the master
# ($PROXY, the same port again when set).
start_proxy() {
	mc_start_daemon proxy mc-proxy --listen "${PROXY:-127.0.0.1:0}" --to "$MC_MASTER" ||
		return 1
	PROXY="$MC_LAST_ADDR"
}

# reset_link PEER CMD...: reset the peer's control link (kill the
# proxy), run CMD once both ends saw it go, bring the proxy back on the
# same port and wait for PEER to resume and report.
reset_link() {
	local peer="$1" resumes reports closed
	shift
	resumes="$(grep -c 'resumed with master' "$MC_DIR/$peer.log" || true)"
	reports="$(grep -cE 'reported (changes|[0-9]+ objects)' "$MC_DIR/$peer.log" || true)"
	closed="$(grep -c "($(mc_addr "$peer")) control connection closed" "$MC_DIR/master.log" ||
		true)"
	mc_stop proxy
	wait_log 10 "$peer" 'cannot reach master|lost' || return 1
	wait_until 10 count_above master "\($(mc_addr "$peer")\) control connection closed" \
		"$closed" || return 1
	"$@" || return 1
	start_proxy || return 1
	wait_until 15 count_above "$peer" 'resumed with master' "$resumes" || return 1
	wait_until 15 count_above "$peer" 'reported (changes|[0-9]+ objects)' "$reports"
}

count_above() {
	[ "$(grep -cE "$2" "$MC_DIR/$1.log" || true)" -gt "$3" ]
}

# peer_lacks NAME KEY: peer NAME holds no copy of KEY.
peer_lacks() {
	! mc-rpc "$(mc_addr "$1")" read tenant=default key="$2" >/dev/null 2>&1
}

@test "reconnect: a master stalled past the peer's link timeout keeps the peer, its replicas and their metadata" {
	mc_start_peer peer1 --fault-inject
	put_objects
	local id before="$BATS_TEST_TMPDIR/before" after="$BATS_TEST_TMPDIR/after"
	id="$(mc_peer_id "$(mc_addr peer1)")"
	save_view "$before"
	kill -STOP "$(mc_pid master)"
	# the peer gives up on its heartbeat and the link; no fixed sleep
	wait_log 15 peer1 'link to master .* lost'
	kill -CONT "$(mc_pid master)"
	wait_log 15 peer1 "resumed with master .* as peer $id "
	wait_log 10 peer1 'reported changes to the master'
	run -0 mc_peer_id "$(mc_addr peer1)"
	assert_output "$id"
	save_view "$after"
	same_view "$before" "$after"
	# hard pins survived: still none of them in the candidate view
	run -0 grep -c '"hard_pin":true' "$after"
	assert_output 3
	run -0 grep -c . "$after.cand"
	assert_output 4
	run -1 grep -q '"key":"pinned/' "$after.cand"
	read_back "${KEYS[@]}"
	run -1 grep -E "$LOSS" "$MC_DIR/master.log"
	run -0 grep -c 'registered with master' "$MC_DIR/peer1.log"
	assert_output 1
}

@test "reconnect: a reset control connection resumes the same peer with everything kept" {
	start_proxy
	mc_start_peer peer1 --fault-inject --master "$PROXY"
	put_objects
	local id before="$BATS_TEST_TMPDIR/before" after="$BATS_TEST_TMPDIR/after"
	id="$(mc_peer_id "$(mc_addr peer1)")"
	save_view "$before"
	reset_link peer1 true
	grep -qE "resumed with master $PROXY as peer $id " "$MC_DIR/peer1.log"
	run -0 mc_peer_id "$(mc_addr peer1)"
	assert_output "$id"
	save_view "$after"
	same_view "$before" "$after"
	read_back "${KEYS[@]}"
	run -1 grep -E "$LOSS" "$MC_DIR/master.log"
	# and the resumed link serves as before
	wait_until 10 heartbeat_after "$(clock_now)"
	echo later | mc-cli put later
	[ "$(mc-cli get later)" = later ]
}

@test "reconnect: a delta names only the changes since the last acknowledged heartbeat, and drops what the peer removed" {
	start_proxy
	mc_start_peer peer1 --fault-inject --master "$PROXY"
	mc_start_peer peer2 --fault-inject --master "$PROXY"
	put_objects
	local d="$BATS_TEST_TMPDIR"
	mc_random_file "$d/two" 3000
	mc-cli put two "$d/two" --replicas 2 --type kv --hard-pin
	acked
	# while the link is down: peer1 loses two copies (one the only copy
	# of its object, one of two), and gains two the master never saw
	lost() {
		local k one
		for k in "${KEYS[@]}"; do
			if [ "$(mc_replica_addrs "$k")" = "$(mc_addr peer1)" ]; then
				one="$k"
				break
			fi
		done
		[ -n "$one" ] || return 1
		echo "$one" >"$d/one"
		mc-rpc "$(mc_addr peer1)" drop tenant=default key="$one" >/dev/null &&
			mc-rpc "$(mc_addr peer1)" drop tenant=default key=two >/dev/null &&
			echo new >"$d/new" &&
			mc-rpc --bulk "$d/new" "$(mc_addr peer1)" write tenant=default \
				key=new/1 version:=1 >/dev/null &&
			mc-rpc --bulk "$d/new" "$(mc_addr peer1)" write tenant=default \
				key=new/2 version:=1 >/dev/null
	}
	reset_link peer1 lost
	wait_until 15 count_above peer2 'resumed with master' 0
	# only the tail since the acknowledged change: two removed, two linked
	run -0 grep -E 'reported changes to the master' "$MC_DIR/peer1.log"
	assert_output --partial '2 removed (2 replicas forgotten), 2 linked (kept 0, adopted 2'
	run -0 grep -E "peer [0-9]+ \($(mc_addr peer1)\) resumed its registration \(changes since [1-9]" \
		"$MC_DIR/master.log"
	# the single copy went with its object; the pair lost one copy
	mc_key_gone "$(cat "$d/one")"
	run -0 mc_replica_addrs two
	assert_output "$(mc_addr peer2)"
	run -0 mc_stat_json two
	jq_true '.type == "kv" and .hard_pin == true' <<<"$output"
	[ "$(mc-cli get two | cmp - "$d/two" && echo same)" = same ]
	[ "$(mc-cli get new/1)" = new ]
}

@test "reconnect: drops for a disconnected peer wait for it and reach it once it resumes" {
	start_proxy
	mc_start_peer peer1 --fault-inject --master "$PROXY"
	echo gone | mc-cli put doomed
	echo kept | mc-cli put stays
	run -0 mc-rpc "$(mc_addr peer1)" read tenant=default key=doomed
	reset_link peer1 mc-cli rm doomed
	wait_until 10 peer_lacks peer1 doomed
	[ "$(mc-cli get stays)" = kept ]
	run -1 grep -E "$LOSS" "$MC_DIR/master.log"
}

# metric_is NAME SERIES VALUE: daemon NAME serves SERIES at VALUE.
metric_is() {
	[ "$(mc_metric "$1" "$2")" = "$3" ]
}

@test "reconnect: a drop executed but not acknowledged is sent again by its task id, and acknowledged without running twice" {
	mc_stop master
	mc_start_master --peer-ttl 1h --put-timeout 1h --http 127.0.0.1:0
	start_proxy
	mc_start_peer peer1 --fault-inject --master "$PROXY"
	echo gone | mc-cli put doomed
	echo kept | mc-cli put stays
	# the peer's heartbeats, and the acknowledgements in them, stop at the proxy
	kill -USR1 "$(mc_pid proxy)"
	wait_log 10 proxy 'holding what clients send'
	mc-cli rm doomed
	wait_until 10 peer_lacks peer1 doomed
	metric_is master 'mc_tasks_queued_total{kind="drop"}' 1
	metric_is master 'mc_tasks_acked_total{kind="drop"}' 0
	reset_link peer1 true
	wait_log 10 peer1 'sent 1 tasks again that were executed already'
	wait_until 10 metric_is master 'mc_tasks_acked_total{kind="drop"}' 1
	metric_is master 'mc_tasks_resent_total{kind="drop"}' 1
	metric_is master 'mc_tasks_expired_total{kind="drop"}' 0
	[ "$(mc-cli get stays)" = kept ]
	run -1 grep -E "$LOSS" "$MC_DIR/master.log"
}

@test "reconnect: an overflowed removal journal falls back to a whole inventory that drops the rest" {
	start_proxy
	mc_start_peer peer1 --fault-inject --master "$PROXY" --journal-max 1
	put_objects
	local before="$BATS_TEST_TMPDIR/before" after="$BATS_TEST_TMPDIR/after"
	acked
	save_view "$before" pinned/1 pinned/3 soft/2 plain/2
	# two removals, room for one: the journal cannot tell them both
	reset_link peer1 eval \
		'mc-rpc "$(mc_addr peer1)" drop tenant=default key=pinned/2 >/dev/null &&
		mc-rpc "$(mc_addr peer1)" drop tenant=default key=plain/1 >/dev/null'
	run -0 grep -E 'journal of removals does not reach back' "$MC_DIR/peer1.log"
	run -0 grep -E 'reported 5 objects to the master \(kept 5, adopted 0, dropped 0\)' \
		"$MC_DIR/peer1.log"
	run -0 grep -E 'full inventory: 2 unreported replicas removed, 2 objects erased' \
		"$MC_DIR/master.log"
	mc_key_gone pinned/2
	mc_key_gone plain/1
	save_view "$after" pinned/1 pinned/3 soft/2 plain/2
	same_view "$before" "$after"
	read_back pinned/1 pinned/3 soft/1 soft/2 plain/2
}

@test "reconnect: a peer restarted at a known address keeps the metadata of the copies it reports" {
	mc_start_peer peer1 --fault-inject
	put_objects
	local d="$BATS_TEST_TMPDIR" old v k
	local before="$d/before" after="$d/after"
	old="$(mc_peer_id "$(mc_addr peer1)")"
	save_view "$before" pinned/1 soft/1
	mc_kill9 peer1
	# the new process holds two of the old copies before the master hears
	# of it: the master sleeps while they are written to its data plane
	kill -STOP "$(mc_pid master)"
	mc_start_peer peer1b --fault-inject --listen "unix:$MC_DIR/peer1.sock" &
	local starter=$!
	wait_log 10 peer1b 'listening on'
	for k in pinned/1 soft/1; do
		v="$(jq -r --arg k "$k" 'select(.key == $k) | .version' "$before")"
		mc-rpc --bulk "$d/${k//\//_}" "unix:$MC_DIR/peer1.sock" write tenant=default \
			key="$k" version:="$v" >/dev/null
	done
	kill -CONT "$(mc_pid master)"
	wait "$starter"
	wait_log 10 peer1b 'reported 2 objects to the master \(kept 2, adopted 0, dropped 0\)'
	run -0 mc_peer_id "unix:$MC_DIR/peer1.sock"
	refute_output "$old"
	run -0 grep -E "takes over peer $old" "$MC_DIR/master.log"
	# type, group, pins and deadlines as they were; only the peer id moved
	save_view "$after" pinned/1 soft/1
	diff <(jq -c 'del(.replicas[].peer_id)' "$before") <(jq -c 'del(.replicas[].peer_id)' "$after")
	diff "$before.cand" "$after.cand"
	read_back pinned/1 soft/1
	# what the new peer did not report is gone
	for k in pinned/2 pinned/3 soft/2 plain/1 plain/2; do
		mc_key_gone "$k"
	done
	run -0 mc-cli --json stat
	jq_true '.objects == 2' <<<"$output"
}
