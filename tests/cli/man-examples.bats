#!/usr/bin/env bats
#
# tests/tools/man-examples, behind make check-examples: every code
# example of the man pages is read, and checked by its kind (C compiled
# against this build and run against a local cluster, shell sessions
# parsed and, where marked, run, policies, JSON, a C program's output).
# The shipped pages pass; a planted page (tests/cli/fixtures/man/)
# fails once for each break in it, naming the page and line.

load helpers

EXAMPLES="$MC_ROOT/tests/tools/man-examples"
BROKEN="tests/cli/fixtures/man/broken.7"

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-evict-plan
	# the C examples link the library under test
	[ -f "$MC_ROOT/${MC_TEST_BUILD:-build}/libmc.a" ] || {
		echo "# ${MC_TEST_BUILD:-build}/libmc.a is not built (run make)" >&2
		return 1
	}
	mc_test_dir
	# the pages' clusters run on the real clock, like a reader's
	unset MC_FAKE_CLOCK
	# short, for the clusters' unix sockets
	export TMPDIR="$MC_DIR"
	cd "$MC_ROOT" || return 1
}

teardown_file() {
	mc_stop_everything
}

# No daemon outlives the check: nothing runs with its directory in its
# arguments (every daemon listens or connects there).
no_cluster_left() {
	! pgrep -f "$MC_DIR/" >/dev/null
}

@test "man examples: every example of the shipped pages passes" {
	run -0 "$EXAMPLES" check man/*.[1-8]
	assert_output ""
	no_cluster_left
}

@test "man examples: the shipped pages hold a C example, its output, runnable sessions, policies and JSON" {
	run -0 "$EXAMPLES" list man/*.[1-8]
	assert_line --regexp '^man/mc\.7:[0-9]+ c$'
	assert_line --regexp '^man/mc\.7:[0-9]+ output$'
	assert_line --regexp '^man/mc\.7:[0-9]+ sh run$'
	assert_line --regexp '^man/mc-policy\.5:[0-9]+ policy$'
	assert_line --regexp '^man/mc-plan\.5:[0-9]+ json$'
	refute_line --partial "stray mark"
}

@test "man examples: mc(7)'s C example is a whole program with the key's length and MC_CLIENT_OPTS_INIT" {
	local at
	at=$("$EXAMPLES" list man/mc.7 | awk '$2 == "c" { print $1 }')
	run -0 "$EXAMPLES" extract "$at"
	assert_line "int"
	assert_line "main(void)"
	assert_line --partial "= MC_CLIENT_OPTS_INIT;"
	assert_line --partial "mc_put(c, key, strlen(key), block, sizeof(block), NULL, &err)"
	assert_line --partial 'fprintf(stderr, "mc: %s\n", err.msg);'
}

@test "man examples: a planted page fails once for each break, naming its line" {
	run -1 "$EXAMPLES" check "$BROKEN"
	assert_line --index 0 --regexp "^$BROKEN:11: the C example does not compile: $BROKEN:23:[0-9]+: error: .*mc_put"
	assert_line --index 1 "$BROKEN:28: the C example failed: mc: invalid client options: its size is not set (initialise it with MC_CLIENT_OPTS_INIT)"
	assert_line --index 2 "$BROKEN:59: the C example printed 'hello, cache', the page shows 'hello, world'"
	assert_line --index 3 --regexp "^$BROKEN:65: 'kill -9 <pid of one mc-peer>': does not parse: "
	assert_line --index 4 "$BROKEN:72: 'mc-cli get greeting': printed 'hello, world\\n', the page shows 'hello, cache\\n'"
	assert_line --index 5 --regexp "^$BROKEN:74: 'mc-cli rm no-such-key': exited [0-9]+: mc-cli: "
	assert_line --index 6 --regexp "^$BROKEN:79: mc-evict-plan --check refuses the policy: .*the example: line 1: unknown ranker 'lruu'"
	assert_line --index 7 --regexp "^$BROKEN:83: jq cannot read it: "
	assert_line --index 8 "$BROKEN:88: the mark 'run' is not right above a .Bd -literal"
	assert_line --index 9 "$BROKEN:91: the mark 'policy' does not fit a sh example (marks: run above \$ lines, output, policy, json)"
	# the last example, with escapes, passes
	[ "${#lines[@]}" -eq 10 ]
	no_cluster_left
}

@test "man examples: a check stopped midway stops its cluster and its session first" {
	mkfifo "$BATS_TEST_TMPDIR/block"
	MC_EXAMPLE_BLOCK="$BATS_TEST_TMPDIR/block" "$EXAMPLES" check tests/cli/fixtures/man/blocks.7 \
		>"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	local pid=$! st=0
	wait_until 30 test -e "$BATS_TEST_TMPDIR/block.started"
	# its cluster serves, its session waits on the fifo
	pgrep -f "$MC_DIR/" >/dev/null
	kill -TERM "$pid"
	wait "$pid" || st=$?
	[ "$st" -eq 70 ]
	no_cluster_left
}

@test "man examples: extract gives the text a reader sees, mdoc escapes undone" {
	local at
	at=$("$EXAMPLES" list "$BROKEN" | tail -n 1 | cut -d' ' -f1)
	run -0 "$EXAMPLES" extract "$at"
	assert_output "\$ printf '%s\\n' 'a\\-b' --
a\\-b
--"
}

@test "man examples: usage errors, unreadable pages and missing examples exit 64" {
	run -64 "$EXAMPLES" check
	assert_output --partial "usage: tests/tools/man-examples"
	run -64 "$EXAMPLES" check man/none.1
	assert_output "tests/tools/man-examples: cannot read 'man/none.1'"
	run -64 "$EXAMPLES" extract man/mc.7:1
	assert_output "tests/tools/man-examples: no example at man/mc.7:1"
}
