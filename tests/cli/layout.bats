#!/usr/bin/env bats
#
# How the daemons' modules depend on each other (the comments atop
# cmd/mc-master/master.h and cmd/mc-peer/peer.h): no module calls
# another that calls it back, directly or around a circle.

CYCLES="$BATS_TEST_DIRNAME/../tools/module-cycles"
CMD="$BATS_TEST_DIRNAME/../../cmd"

load helpers

@test "layout: the master's modules call each other without a circle" {
	run "$CYCLES" "$CMD/mc-master"
	assert_success
	assert_output ""
}

@test "layout: the peer's modules call each other without a circle" {
	run "$CYCLES" "$CMD/mc-peer"
	assert_success
	assert_output ""
}

@test "layout: a circle is found and named with the calls that make it" {
	mkdir -p "$BATS_TEST_TMPDIR/prog"
	printf 'int\nb_fn(void);\nvoid\na_fn(void)\n{\n\tb_fn();\n}\n' >"$BATS_TEST_TMPDIR/prog/a.c"
	printf 'void\na_fn(void);\nint\nb_fn(void)\n{\n\ta_fn();\n\treturn 0;\n}\n' \
		>"$BATS_TEST_TMPDIR/prog/b.c"
	run "$CYCLES" "$BATS_TEST_TMPDIR/prog"
	assert_failure 1
	assert_line "circle: a.c b.c"
	assert_line "  a.c -> b.c: b_fn"
}

@test "layout: no file of libmc is over 1,500 lines" {
	local over
	over=$(find "$BATS_TEST_DIRNAME/../../libmc" -type f \( -name '*.c' -o -name '*.h' \) \
		-exec awk 'END { if (NR > 1500) print FILENAME ": " NR " lines" }' {} \;)
	assert_equal "$over" ""
}
