#!/usr/bin/env bats
#
# tests/lint/bats, the checks make check runs over the suites: no sleep
# outside its allow-list, no run whose status and output nothing reads.
# Each fails on a planted example of its kind (tests/lint/planted/),
# passes on what it must allow, and passes on the suites themselves.

load helpers

LINT="$MC_ROOT/tests/lint/bats"
PLANTED="$MC_ROOT/tests/lint/planted"

setup() {
	cd "$MC_ROOT" || return 1
}

@test "lint: the suites themselves pass both checks" {
	run -0 "$LINT"
	assert_output ""
}

@test "lint: a planted sleep fails, naming its file and line" {
	run -1 "$LINT" tests/lint/planted/sleep.bats
	assert_output "tests/lint/planted/sleep.bats:7: sleep outside the allow-list (wait for the effect instead): 	sleep 0.3"
}

@test "lint: a planted run whose status and output go unused fails, naming it" {
	run -1 "$LINT" tests/lint/planted/run.bats
	assert_output "tests/lint/planted/run.bats:6: run whose status and output are never used: run false"
}

@test "lint: comments, words holding sleep, run -N, run !, assertions and \$status pass" {
	run -0 "$LINT" tests/lint/planted/clean.bats
	assert_output ""
}

@test "lint: an allowed sleep passes; an entry without a reason, or that nothing needs, fails" {
	run -0 "$LINT" --allow "$PLANTED/ok.allow" tests/lint/planted/sleep.bats
	assert_output ""
	run -1 "$LINT" --allow "$PLANTED/bad.allow" tests/lint/planted/sleep.bats
	assert_line --index 0 "$PLANTED/bad.allow:2: an entry is FILE<tab>TEXT<tab>REASON"
	run -1 "$LINT" --allow "$PLANTED/stale.allow" tests/lint/planted/clean.bats
	assert_output "$PLANTED/stale.allow:2: no line of tests/lint/planted/clean.bats needs this entry any more"
}

@test "lint: a missing file or allow-list is a usage error" {
	run -64 "$LINT" tests/lint/planted/none.bats
	assert_output "tests/lint/bats: cannot read 'tests/lint/planted/none.bats'"
	run -64 "$LINT" --allow "$PLANTED/none.allow"
	assert_output "tests/lint/bats: cannot read the allow-list '$PLANTED/none.allow'"
}
