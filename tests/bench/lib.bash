# What the benchmarks that start their own daemons share: a work
# directory removed on exit, daemons started on --ready-fd and stopped by
# the trap, and a peer's metrics read over bash's /dev/tcp. Source it
# after setting base (where the work directory goes) and name.
# shellcheck shell=bash

bin=$top/bin
tools=$top/build/tools

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

work=$(mktemp -d "$base/mc-bench-$name.XXXXXX")
pids=()
stop_all() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
cleanup() {
	stop_all
	rm -rf "$work"
}
trap cleanup EXIT

now_ns() { date +%s%N; }
ratio() { echo "scale=2; $1 / $2" | bc; }

# start NAME PROG ARGS...: a daemon announcing on --ready-fd; sets ADDR.
start() {
	local daemon=$1 fifo="$work/$1.ready" line
	shift
	mkfifo "$fifo"
	"$@" --ready-fd 5 5>"$fifo" >"$work/$daemon.log" 2>&1 &
	pids+=($!)
	read -t 30 -r line <"$fifo" || die "$daemon did not start: $(tail -5 "$work/$daemon.log")"
	rm -f "$fifo"
	ADDR=$line
}

# http_get URL: the body, over bash's /dev/tcp (no curl needed).
http_get() {
	local hostport="${1#http://}"
	hostport="${hostport%%/*}"
	exec 7<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
	printf 'GET /%s HTTP/1.0\r\nHost: %s\r\n\r\n' "${1#http://*/}" "$hostport" >&7
	tr -d '\r' <&7 | sed '1,/^$/d'
	exec 7<&-
}

# metric NAME: its value on the peer whose /metrics address is $METRICS.
metric() {
	http_get "$METRICS" | awk -v m="$1" '$1 == m { print $2; exit }'
}

# field NAME LINE: the value of NAME=... in a key=value result line.
field() {
	sed -n "s/.* $1=\\([0-9.]*\\).*/\\1/p" <<<" $2"
}
