#!/usr/bin/env bats
#
# A peer in master_ranked mode whose master does not rank: a real
# master process that, on the wire, is one built before
# evict_candidates (MC_FAULT=method.evict_candidates:always, mc-fault(7):
# its registration answer says no rank, and the method is unknown to
# it), a peer of 64 MiB DRAM, and a stream of 1 MiB puts past the
# peer's high watermark. The peer must say it falls back, evict by its
# own plan down to its low watermark, and lose nothing it did not count
# as evicted: against such a master from the start, after its ranking
# master is replaced by one (a rolling downgrade) and back, and against
# a master that said rank but refuses the method as unknown.

load helpers

# The puts here cross the watermarks while the fake clock stands still,
# and what is checked is the eviction ahead of need that follows: their
# copies are old the moment they commit (--young 0), as before young
# copies were kept (tests/cli/young.bats checks --young itself).
export MC_YOUNG=0

MIB=1048576
NO_RANK='the master ranks no eviction candidates: evicting by local order'
OLDER='method.evict_candidates:always'

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-fill
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# start_master NAME [MC_FAULT]: a master on $MC_DIR/master.sock, logging
# to NAME.log, with metrics and the fault points given; $MASTER is NAME.
start_master() {
	MC_FAULT="${2:-}" mc_start_daemon "$1" mc-master --listen "unix:$MC_DIR/master.sock" \
		--http 127.0.0.1:0 --put-wait 5s || return 1
	MASTER="$1"
	MC_MASTER="$MC_LAST_ADDR"
	export MC_MASTER
}

# start_peer: p1, 64 MiB of DRAM, master_ranked, with watermarks 0.9 and
# 0.7 given: the checks below measure a drain down to a low mark far
# under the high one, which the default headroom band does not have.
start_peer() {
	MC_PEER_DRAM=64MiB mc_start_peer p1 --http 127.0.0.1:0 --eviction-mode master_ranked \
		--dram-watermarks 0.9:0.7
}

peer_metric() {
	mc_metric p1 "$1"
}

# evicted: the copies the peer's own eviction freed, by its plan or the master's ranking.
evicted() {
	echo $(($(peer_metric 'mc_peer_local_evictions_total{event="key"}') + \
		$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')))
}

# said NAME TEXT: how many lines of NAME's log have TEXT.
said() {
	grep -cF "$2" "$MC_DIR/$1.log" || true
}

# fill PREFIX N: N objects of 1 MiB under PREFIX, four a batch, every put placed.
fill() {
	run -0 mc-fill --prefix "$1" -n "$2" --batch 4 --min-size 1MiB --max-size 1MiB put
	assert_output "put $2 objects: 0 failed"
}

# settled MASTER PUT: the master MASTER holds what was put less what the
# peer counted as evicted: no copy went uncounted, none counted is still
# listed, and the peer's drain is over.
settled() {
	local objects n
	objects="$(mc_metric "$1" mc_objects)" && n="$(evicted)" &&
		[ -n "$objects" ] && [ "$objects" -eq $(($2 - n)) ]
}

# verify PREFIX N: the counts of mc-fill verify, "exact missing unreadable wrong".
verify() {
	mc-fill --prefix "$1" -n "$2" --min-size 1MiB --max-size 1MiB verify |
		sed -n 's/^verified [0-9]* objects: \([0-9]*\) exact, \([0-9]*\) missing, \([0-9]*\) unreadable, \([0-9]*\) wrong$/\1 \2 \3 \4/p'
}

# nothing_lost PREFIX:N...: every key reads back exact or is missing,
# and the keys missing are exactly the copies the peer evicted.
nothing_lost() {
	local spec exact missing unreadable wrong total=0
	for spec in "$@"; do
		read -r exact missing unreadable wrong < <(verify "${spec%:*}" "${spec#*:}")
		echo "# ${spec%:*}: $exact exact, $missing missing, $unreadable unreadable, $wrong wrong" >&3
		[ -n "$wrong" ] && [ "$unreadable" -eq 0 ] && [ "$wrong" -eq 0 ] || return 1
		[ $((exact + missing)) -eq "${spec#*:}" ] || return 1
		total=$((total + missing))
	done
	assert_equal "$total" "$(evicted)"
}

# drained_to_low: the lowest the peer's drains left DRAM at is its low
# watermark or just under it (44 copies of 1 MiB in 64 MiB), not the high one.
drained_to_low() {
	local occ
	occ="$(peer_metric 'mc_peer_tier_occupancy_min{tier="dram"}')"
	echo "# mc_peer_tier_occupancy_min{tier=\"dram\"} $occ" >&3
	awk -v o="$occ" 'BEGIN { exit !(o != "" && o <= 0.7 && o >= 0.65) }'
}

# under_high: DRAM is at or under its high watermark now.
under_high() {
	[ "$(peer_metric 'mc_peer_tier_bytes_used{tier="dram"}')" -le $((64 * MIB * 9 / 10)) ]
}

# registrations_above N: the peer registered more than N times.
registrations_above() {
	[ "$(said p1 'registered with master')" -gt "$1" ]
}

# reported_above N: the peer reported its inventory more than N times.
reported_above() {
	[ "$(grep -cE 'reported [0-9]+ objects to the master' "$MC_DIR/p1.log" || true)" -gt "$1" ]
}

# replace_master NAME [MC_FAULT]: stop $MASTER and start NAME on its
# socket; wait until the peer registered with it and reported what it holds.
replace_master() {
	local regs reports
	regs="$(said p1 'registered with master')"
	reports="$(grep -cE 'reported [0-9]+ objects to the master' "$MC_DIR/p1.log" || true)"
	mc_stop "$MASTER"
	start_master "$@"
	wait_until 15 registrations_above "$regs"
	wait_until 15 reported_above "$reports"
}

@test "rank-fallback: method.evict_candidates:always is, on the wire, a master without the method" {
	start_master master "$OLDER"
	run -1 mc-rpc "$MC_MASTER" evict_candidates peer_id:=1 tier=dram
	assert_output --partial "unknown method 'evict_candidates'"
	local older="$output"
	run -1 mc-rpc "$MC_MASTER" evict_candidatez peer_id:=1 tier=dram
	assert_equal "${older//evict_candidates/X}" "${output//evict_candidatez/X}"
	run -0 mc-master --list-methods
	assert_output --partial "peer_register "
	run -0 env MC_FAULT="$OLDER" mc-master --list-methods
	refute_output --partial "evict_candidates"
	assert_output --partial "peer_register "
	# what a registration answers: no rank
	run -0 mc-rpc "$MC_MASTER" peer_register addr=unix:/nowhere host=h domain=d \
		'tiers:=[{"tier":"dram","capacity":1048576}]'
	assert_equal "$(jq -c .rank <<<"$output")" false
	mc_stop master
	start_master newer
	run -0 mc-rpc "$MC_MASTER" peer_register addr=unix:/nowhere host=h domain=d \
		'tiers:=[{"tier":"dram","capacity":1048576}]'
	assert_equal "$(jq -c .rank <<<"$output")" true
}

@test "rank-fallback: against a master without ranking, a master_ranked peer evicts by its own plan to its low watermark" {
	start_master master "$OLDER"
	start_peer
	# said at registration, before anything needed evicting
	assert_equal "$(said p1 "$NO_RANK")" 1
	fill a/ 100
	wait_until 10 settled master 100
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="key"}')" -gt 0 ]
	assert_equal "$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')" 0
	# it never asked: nothing sent, nothing reached the master's dispatcher
	assert_equal "$(peer_metric mc_peer_rank_queries_total)" 0
	assert_equal "$(said master 'fault method.evict_candidates fired')" 0
	assert_equal "$(mc_metric master mc_rank_queries_total)" 0
	drained_to_low
	under_high
	nothing_lost a/:100
	assert_equal "$(said p1 "$NO_RANK")" 1
}

@test "rank-fallback: a rolling downgrade: registered again with a master without ranking, the peer stops asking and evicts by its own plan" {
	start_master master
	start_peer
	fill a/ 100
	wait_until 10 settled master 100
	local asked ranked own
	asked="$(peer_metric mc_peer_rank_queries_total)"
	ranked="$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')"
	own="$(peer_metric 'mc_peer_local_evictions_total{event="key"}')"
	[ "$asked" -gt 0 ] && [ "$ranked" -gt 0 ]
	assert_equal "$(said p1 "$NO_RANK")" 0
	# an older master on the same socket; a fresh one adopts what the peer reports
	replace_master older "$OLDER"
	assert_equal "$(said p1 "$NO_RANK")" 1
	fill b/ 100
	wait_until 10 settled older 200
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="key"}')" -gt "$own" ]
	assert_equal "$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')" "$ranked"
	assert_equal "$(peer_metric mc_peer_rank_queries_total)" "$asked"
	assert_equal "$(said older 'fault method.evict_candidates fired')" 0
	under_high
	nothing_lost a/:100 b/:100
}

@test "rank-fallback: a peer that fell back ranks again once it registers with a master that ranks" {
	start_master older "$OLDER"
	start_peer
	fill a/ 100
	wait_until 10 settled older 100
	local own
	own="$(peer_metric 'mc_peer_local_evictions_total{event="key"}')"
	[ "$own" -gt 0 ]
	assert_equal "$(peer_metric mc_peer_rank_queries_total)" 0
	# the upgrade: a master with the method on the same socket
	replace_master newer
	fill b/ 100
	wait_until 10 settled newer 200
	[ "$(peer_metric mc_peer_rank_queries_total)" -gt 0 ]
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')" -gt 0 ]
	[ "$(mc_metric newer mc_rank_queries_total)" -gt 0 ]
	under_high
	nothing_lost a/:100 b/:100
	# and it said so, once
	assert_equal "$(said p1 'the master ranks eviction candidates again')" 1
}

@test "rank-fallback: a master that says rank but answers unknown method is asked once, then the peer evicts by its own plan" {
	# the fault fires at the first request only: the registration still says rank
	start_master master 'method.evict_candidates:nth=1'
	start_peer
	assert_equal "$(said p1 "$NO_RANK")" 0
	fill a/ 100
	wait_until 10 settled master 100
	assert_equal "$(said master 'fault method.evict_candidates fired')" 1
	assert_equal "$(said p1 "$NO_RANK")" 1
	# asked once, refused, never again; the refusal was no answer
	assert_equal "$(peer_metric mc_peer_rank_queries_total)" 1
	assert_equal "$(mc_metric master mc_rank_queries_total)" 0
	[ "$(peer_metric 'mc_peer_local_evictions_total{event="key"}')" -gt 0 ]
	assert_equal "$(peer_metric 'mc_peer_local_evictions_total{event="master_key"}')" 0
	drained_to_low
	under_high
	nothing_lost a/:100
}
