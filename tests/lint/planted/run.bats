#!/usr/bin/env bats
# Planted for tests/cli/lint.bats: a run whose status and output nothing
# reads, which the run check must find. Never run as a suite.

@test "planted: runs a command and checks nothing" {
	run false
	run -0 true
}
