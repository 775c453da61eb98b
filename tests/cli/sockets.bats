#!/usr/bin/env bats
#
# tests/lint/sockets, the transport seam's check (make check runs it):
# nothing of libmc/ or cmd/ outside libmc/net/ calls recv, send and the
# like on a socket itself. It passes on the tree, fails on a planted
# call (tests/lint/planted/socket.c), passes on what only looks like one,
# and keeps its allow-list short and true.

load helpers

LINT="$MC_ROOT/tests/lint/sockets"
PLANTED="$MC_ROOT/tests/lint/planted"

setup() {
	cd "$MC_ROOT" || return 1
}

@test "sockets: libmc and the programs move no socket's bytes outside libmc/net/" {
	run -0 "$LINT"
	assert_output ""
}

@test "sockets: a planted send() fails, naming its file, line and call" {
	run -1 "$LINT" tests/lint/planted/socket.c
	assert_output "tests/lint/planted/socket.c:7: send() outside libmc/net/ (go through the transport, mc/transport.h): return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;"
}

@test "sockets: every socket data call is caught, and a transport's own file is not checked" {
	local f="$BATS_TEST_TMPDIR/cmd/prog/main.c" call
	mkdir -p "$BATS_TEST_TMPDIR/cmd/prog" "$BATS_TEST_TMPDIR/libmc/net"
	for call in recv recvfrom recvmsg recvmmsg send sendto sendmsg sendmmsg sendfile readv writev; do
		printf '\tn = %s (fd, a, b);\n' "$call"
	done >"$f"
	run -1 "$LINT" "$f"
	assert_equal "${#lines[@]}" 11
	assert_line --index 0 --partial "$f:1: recv() outside libmc/net/"
	assert_line --index 10 --partial "$f:11: writev() outside libmc/net/"
	cp "$f" "$BATS_TEST_TMPDIR/libmc/net/tcp.c"
	run -0 "$LINT" "$BATS_TEST_TMPDIR/libmc/net/tcp.c"
	assert_output ""
}

@test "sockets: comments, strings, members and longer names are no socket call" {
	run -0 "$LINT" tests/lint/planted/socket-clean.c
	assert_output ""
}

@test "sockets: an allowed call passes; an entry without a reason, or that nothing needs, fails" {
	run -0 "$LINT" --allow "$PLANTED/socket-ok.allow" tests/lint/planted/socket.c
	assert_output ""
	run -1 "$LINT" --allow "$PLANTED/socket-bad.allow" tests/lint/planted/socket.c
	assert_line --index 0 "$PLANTED/socket-bad.allow:2: an entry is FILE<tab>TEXT<tab>REASON"
	run -1 "$LINT" --allow "$PLANTED/socket-stale.allow" tests/lint/planted/socket-clean.c
	assert_output "$PLANTED/socket-stale.allow:2: no line of tests/lint/planted/socket-clean.c needs this entry any more"
}

@test "sockets: a missing file or allow-list is a usage error" {
	run -64 "$LINT" tests/lint/planted/none.c
	assert_output "tests/lint/sockets: cannot read 'tests/lint/planted/none.c'"
	run -64 "$LINT" --allow "$PLANTED/none.allow"
	assert_output "tests/lint/sockets: cannot read the allow-list '$PLANTED/none.allow'"
}
