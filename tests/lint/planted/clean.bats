#!/usr/bin/env bats
# Planted for tests/cli/lint.bats: what neither check may flag. Never
# run as a suite.

# a comment may say sleep, and a word may hold it: sleeps, nosleep
@test "planted: every run is read, and nothing sleeps" {
	run -0 true
	run ! false
	run echo hi
	assert_output hi
	run false
	[ "$status" -eq 1 ]
	run printf 'a\nb\n'
	[ "${#lines[@]}" -eq 2 ]
	run echo \
		continued
	assert_success
}

# a helper's run that names the status it wants
helper() {
	run -1 false
}
