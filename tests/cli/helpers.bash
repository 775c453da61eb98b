# shellcheck shell=bash
#
# Shared helpers for the bats suites: start a master and peers on unix
# sockets, wait for readiness through --ready-fd (never by sleeping), move
# the injectable clock, poll for asynchronous effects, and stop every
# daemon so that none outlives its test file.
#
# Layout of a cluster directory ($MC_DIR):
#   NAME.pid     "TIMEOUT_PID DAEMON_PID" of a running daemon
#   NAME.addr    the address it wrote to --ready-fd
#   NAME.log     its stdout and stderr
#   clock        the MC_FAKE_CLOCK file (milliseconds since the epoch)
# Every started daemon is also appended to $BATS_FILE_TMPDIR/all.pids, so
# teardown_file can reap what a failed per-test teardown left behind.

load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

bats_require_minimum_version 1.5.0

# Note: bats 1.8's `run` assigns the globals $i and $line; never use them
# as loop variables around `run` (the loop would restart forever).

MC_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
export MC_ROOT
# tests/run names the builds under test (make test SANITIZE=1: bin-san/)
export PATH="$MC_ROOT/${MC_TEST_BIN:-bin}:$MC_ROOT/${MC_TEST_TOOLS:-build/tools}:$PATH"

# The one version, the Makefile's VERSION: what every program's --version,
# the soname's file and mc.pc say. No other file spells it.
MC_VERSION=$(sed -n 's/^VERSION := //p' "$MC_ROOT/Makefile")
export MC_VERSION

# A realistic epoch (2023-11-14) so nothing mistakes it for "unset".
MC_CLOCK_START=1700000000000

# mc_trace FILE: the conversation trace (tests/cli/fixtures/traces),
# decompressed into FILE: all of it, or its first N requests when
# MC_TEST_TRACE_REQUESTS=N. make check's sanitizer pass sets it, so the
# suites that replay the trace run the same code paths on a fraction of
# the volume; make test and make bench replay it whole.
mc_trace() {
	local n="${MC_TEST_TRACE_REQUESTS:-}"
	local src="$MC_ROOT/tests/cli/fixtures/traces/conversation_trace.jsonl.zst"
	if [ -z "$n" ]; then
		zstd -dcq "$src" >"$1"
		return
	fi
	if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
		echo "# invalid MC_TEST_TRACE_REQUESTS '$n': a count of requests" >&2
		return 1
	fi
	zstd -dcq "$src" | head -n "$n" >"$1"
	[ -s "$1" ]
}

# mc_require_bins NAME...: fail early, with a clear message, when a program
# under test has not been built.
mc_require_bins() {
	local b
	for b in "$@"; do
		if ! command -v "$b" >/dev/null; then
			echo "# $b is not built (run make)" >&2
			return 1
		fi
	done
}

# mc_use_dir DIR: make DIR the cluster directory and reset its fake clock.
# Unix socket paths are limited to 108 bytes, so a long DIR is replaced by
# a short one under /tmp, linked from DIR for the logs.
mc_use_dir() {
	local dir="$1"
	mkdir -p "$dir"
	if [ "${#dir}" -gt 60 ]; then
		local short
		short="$(mktemp -d /tmp/mc-bats.XXXXXX)"
		ln -s "$short" "$dir/sock"
		echo "$short" >>"$BATS_FILE_TMPDIR/short.dirs"
		dir="$short"
	fi
	MC_DIR="$dir"
	MC_FAKE_CLOCK="$MC_DIR/clock"
	echo "$MC_CLOCK_START" >"$MC_FAKE_CLOCK"
	export MC_DIR MC_FAKE_CLOCK
	unset MC_TENANT MC_TOKEN MC_DOMAIN
}

# A directory per test file (daemons shared by the file's tests) or per
# test (daemons that a test kills or stops).
mc_file_dir() {
	mc_use_dir "$BATS_FILE_TMPDIR/mc"
}

mc_test_dir() {
	mc_use_dir "$BATS_TEST_TMPDIR/mc"
}

clock_now() {
	cat "$MC_FAKE_CLOCK"
}

# advance_clock MS: move the fake clock forward. The file is replaced by a
# rename so that a daemon never reads a half-written number.
advance_clock() {
	local now
	now="$(clock_now)"
	echo "$((now + $1))" >"$MC_FAKE_CLOCK.tmp"
	mv -f "$MC_FAKE_CLOCK.tmp" "$MC_FAKE_CLOCK"
}

# wait_until TIMEOUT_S CMD...: run CMD every 50 ms until it succeeds;
# fail after TIMEOUT_S seconds. Only for effects that settle
# asynchronously (a sweep, a registration), never as a fixed delay.
wait_until() {
	local limit="$1"
	shift
	local start="${EPOCHREALTIME/[.,]/}"
	local deadline=$((start + limit * 1000000))
	while :; do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		if [ "${EPOCHREALTIME/[.,]/}" -ge "$deadline" ]; then
			echo "# wait_until: '$*' still false after ${limit}s" >&2
			return 1
		fi
		sleep 0.05
	done
}

# mc_start_daemon NAME PROG ARGS...: start PROG under `timeout 300` with
# --ready-fd 5 wired to a fifo, and wait (read -t ${MC_READY_WAIT:-10}) for
# the one line it writes once it serves: a test whose daemon has real work
# to do before it listens (a large --restore) sets MC_READY_WAIT for it.
# The fifo is opened in the daemon's own process (sh execs it), so if it
# dies before announcing, the read sees EOF at once instead of waiting out
# the timeout. Sets MC_LAST_ADDR.
mc_start_daemon() {
	local name="$1"
	shift
	local fifo="$MC_DIR/$name.ready"
	local log="$MC_DIR/$name.log"
	rm -f "$fifo"
	mkfifo "$fifo"
	# fd 3 is bats' own output channel: a daemon holding it would keep bats
	# waiting after the test ends.
	timeout 300 sh -c 'f="$1"; shift; exec "$@" 5>"$f"' sh "$fifo" \
		"$@" --ready-fd 5 >"$log" 2>&1 3>&- &
	local tpid=$!
	local line=
	if ! read -t "${MC_READY_WAIT:-10}" -r line <"$fifo" || [ -z "$line" ]; then
		echo "# $name ($*) did not become ready; its log:" >&2
		sed 's/^/#   /' "$log" >&2
		# children first: once timeout dies they are no longer its children
		pkill -KILL -P "$tpid" 2>/dev/null
		kill -KILL "$tpid" 2>/dev/null
		return 1
	fi
	rm -f "$fifo"
	local dpid
	dpid="$(pgrep -P "$tpid" | head -n 1)"
	echo "$tpid ${dpid:-$tpid}" >"$MC_DIR/$name.pid"
	echo "$tpid ${dpid:-$tpid}" >>"$BATS_FILE_TMPDIR/all.pids"
	echo "$line" >"$MC_DIR/$name.addr"
	MC_LAST_ADDR="$line"
}

# mc_start_master [ARGS...]: a master on $MC_DIR/master.sock; exports
# MC_MASTER (what mc-cli and peers use) as the address it announced.
mc_start_master() {
	mc_start_daemon master mc-master --listen "unix:$MC_DIR/master.sock" "$@" || return 1
	MC_MASTER="$MC_LAST_ADDR"
	export MC_MASTER
}

# mc_start_peer NAME [ARGS...]: one peer on $MC_DIR/NAME.sock with
# ${MC_PEER_DRAM:-256MiB} of DRAM, registered with $MC_MASTER. Its ready
# line promises the master lists it already, which is checked, not awaited.
mc_start_peer() {
	local name="$1"
	shift
	mc_start_daemon "$name" mc-peer --master "$MC_MASTER" \
		--listen "unix:$MC_DIR/$name.sock" --dram "${MC_PEER_DRAM:-256MiB}" "$@" ||
		return 1
	mc_peer_listed "$MC_LAST_ADDR"
}

# mc_start_peers N [ARGS...]: peers peer1..peerN.
mc_start_peers() {
	local n="$1" i
	shift
	for ((i = 1; i <= n; i++)); do
		mc_start_peer "peer$i" "$@" || return 1
	done
}

# mc_addr NAME: the address daemon NAME announced.
mc_addr() {
	cat "$MC_DIR/$1.addr"
}

# mc_pid NAME: the daemon's own pid (not the timeout wrapper's).
mc_pid() {
	local tpid dpid
	read -r tpid dpid <"$MC_DIR/$1.pid"
	echo "$dpid"
}

mc_rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# mc_stop NAME [SIGNAL]: send SIGNAL (default TERM) to the daemon, wait up
# to 5 s, then SIGKILL it. Sets MC_STOP_STATUS to its exit status when
# this shell started it (else 255).
mc_stop() {
	local name="$1" sig="${2:-TERM}"
	local pidfile="$MC_DIR/$name.pid"
	local tpid dpid
	MC_STOP_STATUS=255
	[ -f "$pidfile" ] || return 0
	read -r tpid dpid <"$pidfile"
	kill "-$sig" "$dpid" 2>/dev/null || true
	mc_reap "$tpid" "$dpid"
	rm -f "$pidfile"
}

# mc_kill9 NAME: a crash: SIGKILL, no chance to unregister.
mc_kill9() {
	mc_stop "$1" KILL
}

mc_alive() {
	kill -0 "$1" 2>/dev/null
}

# mc_gone PID...: none of them is alive.
mc_gone() {
	local p
	for p in "$@"; do
		! mc_alive "$p" || return 1
	done
}

# mc_reap TPID DPID: wait (bounded) for both to exit, SIGKILL leftovers.
mc_reap() {
	local tpid="$1" dpid="$2"
	wait_until 5 mc_gone "$tpid" "$dpid" 2>/dev/null || true
	if mc_alive "$dpid" || mc_alive "$tpid"; then
		echo "# pid $dpid did not stop in 5 s: SIGKILL" >&2
		kill -KILL "$dpid" "$tpid" 2>/dev/null || true
	fi
	local st=0
	wait "$tpid" 2>/dev/null || st=$?
	MC_STOP_STATUS=$st
}

# mc_stop_all: stop every daemon of $MC_DIR (TERM to all first, so they
# stop in parallel), then every daemon this file ever started.
mc_stop_all() {
	local f tpid dpid
	if [ -n "${MC_DIR:-}" ]; then
		for f in "$MC_DIR"/*.pid; do
			[ -f "$f" ] || continue
			read -r tpid dpid <"$f"
			kill -TERM "$dpid" 2>/dev/null || true
		done
		for f in "$MC_DIR"/*.pid; do
			[ -f "$f" ] || continue
			read -r tpid dpid <"$f"
			mc_reap "$tpid" "$dpid"
			rm -f "$f"
		done
	fi
}

# For teardown_file: also reap daemons of per-test directories whose
# teardown did not run to the end, and remove short socket directories.
mc_stop_everything() {
	local tpid dpid
	mc_stop_all
	if [ -f "$BATS_FILE_TMPDIR/all.pids" ]; then
		while read -r tpid dpid; do
			if mc_alive "$dpid" || mc_alive "$tpid"; then
				kill -TERM "$dpid" 2>/dev/null || true
				mc_reap "$tpid" "$dpid"
			fi
		done <"$BATS_FILE_TMPDIR/all.pids"
	fi
	if [ -f "$BATS_FILE_TMPDIR/short.dirs" ]; then
		while read -r d; do
			case "$d" in /tmp/mc-bats.*) rm -rf "$d" ;; esac
		done <"$BATS_FILE_TMPDIR/short.dirs"
	fi
}

# ---- reading the master's view (mc-cli --json through jq) ----

# jq_true [JQ ARGS...] FILTER: stdin holds at least one JSON value and
# FILTER is true for every one. (A bare `jq -e` succeeds on empty input.)
jq_true() {
	local f="${!#}"
	jq -s -e "${@:1:$#-1}" "length > 0 and all(.[]; $f)" >/dev/null
}

# jq_any [JQ ARGS...] FILTER: FILTER is true for at least one value.
jq_any() {
	local f="${!#}"
	jq -s -e "${@:1:$#-1}" "any(.[]; $f)" >/dev/null
}

# The peers' records, one JSON object per line, whether mc-cli prints one
# record per line or one document holding an array.
mc_peers_json() {
	local out
	# fail when mc-cli fails, so "not listed" never means "no answer"
	out="$(mc-cli --json peers)" || return 1
	jq -c '.. | objects | select(has("peer_id") and has("alive"))' <<<"$out"
}

mc_peer_listed() {
	mc_peers_json | jq_any --arg a "$1" '.addr == $a'
}

mc_peer_not_listed() {
	local out
	out="$(mc_peers_json)" || return 1
	! jq_any --arg a "$1" '.addr == $a' <<<"$out"
}

mc_peer_count() {
	local out
	out="$(mc_peers_json)" || return 1
	[ -z "$out" ] && echo 0 || wc -l <<<"$out"
}

mc_peer_count_is() {
	local n
	n="$(mc_peer_count)" && [ "$n" -eq "$1" ]
}

# mc_keep_session: read a peer_register answer on stdin, keep its session
# in $MC_DIR/ID.session (as mc-peer --session-file writes one: "ID TOKEN")
# and print the peer id. Without an auth file only the registering
# connection speaks for a peer, or one that shows its session.
mc_keep_session() {
	local out id
	out="$(cat)" || return 1
	id="$(jq -r .peer_id <<<"$out")" || return 1
	[ -n "$id" ] && [ "$id" != null ] || return 1
	printf '%s %s\n' "$id" "$(jq -r .session <<<"$out")" >"$MC_DIR/$id.session"
	echo "$id"
}

# mc_session NAME: session=TOKEN for a peer's call from another connection,
# from $MC_DIR/NAME.session (mc_keep_session's, or mc-peer --session-file's).
mc_session() {
	local id token
	read -r id token <"$MC_DIR/$1.session" || return 1
	echo "session=$token"
}

# mc_peer_id ADDR: the master's id for the peer at ADDR.
mc_peer_id() {
	mc_peers_json | jq -r --arg a "$1" 'select(.addr == $a) | .peer_id'
}

# mc_stat_json KEY: the object record of `stat KEY`.
mc_stat_json() {
	local out
	out="$(mc-cli --json stat "$1")" || return 1
	jq -c '.. | objects | select(has("replicas") and has("version"))' <<<"$out"
}

# mc_replica_addrs KEY: the addresses of KEY's replicas, one per line.
mc_replica_addrs() {
	mc_stat_json "$1" | jq -r '.replicas[].addr'
}

mc_version() {
	mc_stat_json "$1" | jq -r '.version'
}

# mc_hold_lease KEY [TENANT]: a reader takes a read lease on KEY and keeps
# it until --lease-ttl (mc-cli get releases its own as soon as it has the
# bytes); prints nothing.
mc_hold_lease() {
	mc-rpc --tenant "${2:-default}" "$MC_MASTER" get_replica_list key="$1" >/dev/null
}

# mc_random_file PATH BYTES
mc_random_file() {
	head -c "$2" /dev/urandom >"$1"
}

# mc_roundtrip KEY BYTES [PUT ARGS...]: put random bytes and read them back
# byte-exact, into a file through stdout.
mc_roundtrip() {
	local key="$1" size="$2"
	shift 2
	local src="$BATS_TEST_TMPDIR/${key//\//_}.src"
	local dst="$BATS_TEST_TMPDIR/${key//\//_}.dst"
	mc_random_file "$src" "$size"
	mc-cli put "$key" "$src" "$@"
	mc-cli get "$key" >"$dst"
	cmp "$src" "$dst"
}

# ---- restarts and snapshot files (tests/cli/snapshot.bats) ----

# mc_live_peer_count_is N: exactly N peers are listed alive (a restored
# master may also know peers from its snapshot that have not come back).
mc_live_peer_count_is() {
	local out n
	out="$(mc_peers_json)" || return 1
	n="$(jq -s '[.[] | select(.alive == true)] | length' <<<"$out")"
	[ "$n" -eq "$1" ]
}

# mc_key_gone KEY [CLI ARGS...]: the master answers that KEY does not
# exist (exit 1), as opposed to failing to answer at all.
mc_key_gone() {
	local key="$1" st=0
	shift
	mc-cli "$@" stat "$key" >/dev/null 2>&1 || st=$?
	[ "$st" -eq 1 ]
}

# mc_flip_byte FILE OFFSET: invert every bit of the byte at OFFSET in place.
mc_flip_byte() {
	local file="$1" off="$2" b
	b="$(od -An -tu1 -j "$off" -N1 "$file" | tr -d ' ')"
	[ -n "$b" ] || return 1
	printf '%b' "\\0$(printf '%03o' $((b ^ 255)))" |
		dd of="$file" bs=1 seek="$off" count=1 conv=notrunc status=none
}

# mc_snap_files DIR: the snapshot files in DIR, newest first.
mc_snap_files() {
	local f
	for f in "$1"/mc-snapshot-*.mcs; do
		[ -e "$f" ] && echo "$f"
	done | sed 's/.*mc-snapshot-\([0-9]*\)\.mcs$/\1 &/' | sort -rn | cut -d' ' -f2-
}

mc_snap_count_is() {
	local n
	n="$(mc_snap_files "$1" | grep -c .)" || true
	[ "$n" -eq "$2" ]
}

# ---- soft pins (tests/cli/softpin.bats) ----

# sp_rpc METHOD FIELDS...: one master call through mc-rpc (one JSON line).
sp_rpc() {
	mc-rpc "$MC_MASTER" "$@"
}

# sp_show KEY: softpin_show of KEY (one JSON object).
sp_show() {
	sp_rpc softpin_show key="$1"
}

# sp_field KEY FIELD: one field of softpin_show KEY.
sp_field() {
	local out
	out="$(sp_show "$1")" || return 1
	jq -r ".$2" <<<"$out"
}

sp_state() {
	sp_field "$1" state
}

sp_deadline() {
	sp_field "$1" deadline
}

# sp_state_is KEY STATE (for wait_until).
sp_state_is() {
	[ "$(sp_state "$1")" = "$2" ]
}

# sp_stat FIELD: one field of softpin_stats.
sp_stat() {
	local out
	out="$(sp_rpc softpin_stats)" || return 1
	jq -r ".$1" <<<"$out"
}

# sp_put KEY SIZE [PUT ARGS...]: mc-cli put of SIZE zero bytes from stdin.
sp_put() {
	local key="$1" size="$2"
	shift 2
	head -c "$size" /dev/zero | mc-cli put "$key" "$@"
}

# sp_start_bare KEY SIZE REPLICAS [FIELDS...]: a put_start alone, no
# bytes written anywhere (the write is to be revoked); prints its result.
sp_start_bare() {
	local key="$1" size="$2" n="$3"
	shift 3
	sp_rpc put_start key="$key" size:="$size" replicas:="$n" checksum:=1 "$@"
}

# sp_start KEY SIZE REPLICAS [FIELDS...]: a put_start whose SIZE zero
# bytes then go to every replica's peer with its grant, so each peer
# confirms them, but with no put_end: its replicas stay PROCESSING until
# the test ends them. Prints put_start's result. Add upsert:=true,
# soft_pin=..., soft_pin_ttl_ms:=N as needed.
sp_start() {
	local key="$1" size="$2" n="$3" out rc=0 v addr grant tier
	shift 3
	out="$(sp_start_bare "$key" "$size" "$n" "$@")" || rc=$?
	echo "$out"
	[ "$rc" -eq 0 ] || return "$rc"
	head -c "$size" /dev/zero >"$MC_DIR/sp_start.bytes"
	v="$(jq -r .version <<<"$out")"
	while read -r addr grant tier; do
		mc-rpc --bulk "$MC_DIR/sp_start.bytes" "$addr" write tenant=default key="$key" \
			version:="$v" tier="$tier" grant:=b64:"$grant" >/dev/null || return 1
	done < <(jq -r '.replicas[] | "\(.addr) \(.grant) \(.tier)"' <<<"$out")
}

# mc_metrics_url NAME: the /metrics URL daemon NAME logged (it runs --http).
mc_metrics_url() {
	grep -o 'http://[0-9.]*:[0-9]*/metrics' "$MC_DIR/$1.log" | head -n 1
}

# mc_http_get URL: the body of a plain HTTP GET over /dev/tcp (no client needed).
mc_http_get() {
	local hostport="${1#http://}"
	hostport="${hostport%%/*}"
	exec 7<>"/dev/tcp/${hostport%:*}/${hostport##*:}" || return 1
	printf 'GET /%s HTTP/1.0\r\nHost: %s\r\n\r\n' "${1#http://*/}" "$hostport" >&7
	# headers end at the first empty line
	tr -d '\r' <&7 | sed '1,/^$/d'
	exec 7<&-
}

# mc_scrape NAME: daemon NAME's /metrics body.
mc_scrape() {
	local url
	url="$(mc_metrics_url "$1")"
	[ -n "$url" ] || return 1
	mc_http_get "$url"
}

# mc_metric NAME SERIES: the value of one series ("mc_objects",
# 'mc_tenant_bytes{tenant="a"}') on daemon NAME, or nothing.
mc_metric() {
	mc_scrape "$1" | awk -v s="$2" '$1 == s { print $2; exit }'
}

# mc_metric_at_least NAME SERIES N: daemon NAME serves SERIES at N or
# more (for wait_until).
mc_metric_at_least() {
	local v
	v="$(mc_metric "$1" "$2")"
	[ -n "$v" ] && awk -v v="$v" -v n="$3" 'BEGIN { exit !(v + 0 >= n + 0) }'
}

# mc_series NAME METRIC LABELS: one labelled series of daemon NAME
# (mc_series p1 mc_peer_moves_total 'kind="demote",outcome="done"'), 0
# when it is absent: a counter not yet created has counted nothing.
mc_series() {
	local v
	v="$(mc_metric "$1" "$2{$3}")"
	echo "${v:-0}"
}

# ---- a peer's SSD tier (tests/cli/ssd.bats, ssd-crash.bats) ----

# mc_tier_field PEER TIER FIELD: objects, used or capacity of one of
# PEER's tiers, as its peer_stats says.
mc_tier_field() {
	mc-rpc "$(mc_addr "$1")" peer_stats |
		jq -r --arg t "$2" --arg f "$3" '.tiers[] | select(.tier == $t) | .[$f]'
}

# mc_offset_of FILE NEEDLE: where NEEDLE's first 4 KiB first appear in
# FILE (-1: nowhere).
mc_offset_of() {
	/usr/bin/python3 -c '
import sys
hay = open(sys.argv[1], "rb").read()
needle = open(sys.argv[2], "rb").read()[:4096]
print(hay.find(needle))' "$1" "$2"
}
