#!/usr/bin/env bats
# Planted for tests/cli/lint.bats: a fixed wait the sleep check must
# find. Never run as a suite (it is not under tests/cli/).

@test "planted: waits a fixed time for an effect" {
	touch "$BATS_TEST_TMPDIR/f" &
	sleep 0.3
	[ -e "$BATS_TEST_TMPDIR/f" ]
}
