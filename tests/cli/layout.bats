#!/usr/bin/env bats
#
# How the daemons' modules depend on each other (the comments atop
# cmd/mc-master/master.h and cmd/mc-peer/peer.h): no module calls
# another that calls it back, directly or around a circle; few arrows
# run back up the layers those comments list; and no file grows past
# 1,500 lines.

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

# ---- layers: the arrows that run back up the house drawing ----

LAYERS="$BATS_TEST_DIRNAME/../tools/module-layers"

@test "layout: the master's modules have at most 5 arrows back up their layers" {
	run "$LAYERS" --max 5 "$CMD/mc-master" master.h
	echo "$output"
	assert_success
	refute_line --partial "unplaced:"
}

@test "layout: the peer's modules have at most 3 arrows back up their layers (peer.h embeds the index, the pool and the media's table)" {
	run "$LAYERS" --max 3 "$CMD/mc-peer" peer.h
	echo "$output"
	assert_success
}

@test "layout: a call and an include back up the layers are counted, a call down is not" {
	local d="$BATS_TEST_TMPDIR/layers"
	mkdir -p "$d"
	printf '/*\n * Who may call whom:\n *   b.c    the base; nothing\n *   a.c, c.c   the top; b.c\n */\n#include "a.h"\n' \
		>"$d/top.h"
	printf 'int\nb_fn(void)\n{\n\treturn a_fn();\n}\n' >"$d/b.c"
	printf '#include "c.h"\n' >"$d/b.h"
	printf 'int\na_fn(void)\n{\n\treturn c_fn();\n}\n' >"$d/a.c"
	printf 'int\nc_fn(void)\n{\n\treturn b_fn();\n}\n' >"$d/c.c"
	printf 'int c_fn(void);\n' >"$d/c.h"
	: >"$d/a.h"
	run "$LAYERS" "$d" top.h
	assert_success
	assert_line "back: top.h -> a.c: includes a.h"
	assert_line "back: b.c -> a.c: calls a_fn"
	assert_line "back: b.c -> c.c: includes c.h"
	refute_line --partial "c.c -> b.c"
	refute_line --partial "a.c -> c.c"
	assert_line "back arrows: 3"
	run "$LAYERS" --max 2 "$d" top.h
	assert_failure 1
}

@test "layout: a module the layers do not name is reported" {
	local d="$BATS_TEST_TMPDIR/unplaced"
	mkdir -p "$d"
	printf '/*\n * Who may call whom:\n *   a.c    all there is\n */\n' >"$d/top.h"
	printf 'void\na_fn(void)\n{\n}\n' >"$d/a.c"
	printf 'void\nb_fn(void)\n{\n}\n' >"$d/b.c"
	run "$LAYERS" "$d" top.h
	assert_success
	assert_line "unplaced: b.c"
	assert_line "back arrows: 0"
}

@test "layout: no file in cmd/ or libmc/ is over 1,500 lines" {
	local root="$BATS_TEST_DIRNAME/../.." f n over=""
	while IFS= read -r f; do
		n=$(wc -l <"$root/$f")
		[ "$n" -le 1500 ] && continue
		over="$over $f ($n lines)"
	done < <(cd "$root" && find cmd libmc -name '*.[ch]' | sort)
	[ -z "$over" ] || {
		echo "over 1,500 lines:$over"
		return 1
	}
}
