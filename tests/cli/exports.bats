#!/usr/bin/env bats
#
# libmc.so exports exactly the functions of the installed headers
# (mc/client.h, mc/err.h, mc/proto.h): nothing of libmc's internals, which
# the programs reach through libmc.a. tests/lint/exports compares the two
# lists; it is shown to fail, naming the symbol, on a planted extra export
# and on a planted missing one.

load helpers

EXPORTS="$MC_ROOT/tests/lint/exports"

setup_file() {
	export ROOT="$BATS_FILE_TMPDIR/root"
	make -s -C "$MC_ROOT" install PREFIX=/usr DESTDIR="$ROOT" >/dev/null
	export LIB="$ROOT/usr/lib/libmc.so" INC="$ROOT/usr/include"
}

# The installed headers copied to $BATS_TEST_TMPDIR/include, to doctor.
copy_headers() {
	cp -r "$INC" "$BATS_TEST_TMPDIR/include"
}

# The library's symbol list, as nm -D --defined-only prints it, in FILE.
symbols() {
	nm -D --defined-only "$LIB" >"$1"
}

@test "exports: the installed libmc.so exports the installed headers' functions and nothing else" {
	run -0 "$EXPORTS" "$LIB" "$INC"/mc/*.h
	assert_output ""
	# the comparison saw the API, not two empty lists
	run -0 nm -D --defined-only "$LIB"
	assert_line --regexp ' T mc_put@@MC_0$'
	assert_line --regexp ' T mc_status_name@@MC_0$'
	# and none of the internals the programs use through libmc.a
	refute_line --regexp ' mc_(rpcc|wire|cl|tool|dp|opt|policy)_'
	refute_line --partial ' mc_client_master@'
}

@test "exports: a planted extra export fails, naming it" {
	symbols "$BATS_TEST_TMPDIR/nm"
	echo "0000000000012340 T mc_rpcc_connect@@MC_0" >>"$BATS_TEST_TMPDIR/nm"
	run -1 "$EXPORTS" --symbols "$BATS_TEST_TMPDIR/nm" "$INC"/mc/*.h
	assert_output "$BATS_TEST_TMPDIR/nm: mc_rpcc_connect is exported, but no public header declares it"
}

@test "exports: exported data counts as an extra export" {
	symbols "$BATS_TEST_TMPDIR/nm"
	echo "0000000000044d00 D mc_rankers" >>"$BATS_TEST_TMPDIR/nm"
	run -1 "$EXPORTS" --symbols "$BATS_TEST_TMPDIR/nm" "$INC"/mc/*.h
	assert_output "$BATS_TEST_TMPDIR/nm: mc_rankers is exported, but no public header declares it"
}

@test "exports: a function the library stopped exporting fails, naming it and its header line" {
	symbols "$BATS_TEST_TMPDIR/nm"
	grep -v ' mc_get_fd@@' "$BATS_TEST_TMPDIR/nm" >"$BATS_TEST_TMPDIR/nm.less"
	run -1 "$EXPORTS" --symbols "$BATS_TEST_TMPDIR/nm.less" "$INC"/mc/*.h
	local line
	line=$(grep -n '^int mc_get_fd(' "$INC/mc/client.h" | cut -d: -f1)
	assert_output "$INC/mc/client.h:$line: mc_get_fd is declared, but $BATS_TEST_TMPDIR/nm.less does not export it"
}

@test "exports: a planted declaration the library lacks fails, naming it and its line" {
	copy_headers
	local h="$BATS_TEST_TMPDIR/include/mc/client.h"
	printf '%s\n' 'int mc_planted(struct mc_client *c,' '		struct mc_err *err);' >>"$h"
	run -1 "$EXPORTS" "$LIB" "$BATS_TEST_TMPDIR"/include/mc/*.h
	assert_output "$h:$(($(wc -l <"$h") - 1)): mc_planted is declared, but $LIB does not export it"
}

@test "exports: a static inline function or a macro in a header is no export to expect" {
	copy_headers
	printf '%s\n' 'static inline int mc_planted_inline(void) { return 0; }' \
		'#define mc_planted_macro(x) (x)' >>"$BATS_TEST_TMPDIR/include/mc/err.h"
	run -0 "$EXPORTS" "$LIB" "$BATS_TEST_TMPDIR"/include/mc/*.h
	assert_output ""
}

@test "exports: a header left out of the list makes its functions extra exports" {
	run -1 "$EXPORTS" "$LIB" "$INC/mc/client.h" "$INC/mc/proto.h"
	assert_line "$LIB: mc_status_name is exported, but no public header declares it"
	refute_line --partial mc_put
}

@test "exports: a missing library, list or header is a usage error" {
	run -64 "$EXPORTS" "$BATS_TEST_TMPDIR/none.so" "$INC/mc/err.h"
	assert_output "tests/lint/exports: cannot read the library '$BATS_TEST_TMPDIR/none.so'"
	run -64 "$EXPORTS" --symbols "$BATS_TEST_TMPDIR/none" "$INC/mc/err.h"
	assert_output "tests/lint/exports: cannot read the symbol list '$BATS_TEST_TMPDIR/none'"
	run -64 "$EXPORTS" "$LIB" "$INC/mc/none.h"
	assert_output "tests/lint/exports: cannot read the header '$INC/mc/none.h'"
	run -64 "$EXPORTS" "$LIB"
	assert_output --partial "usage: tests/lint/exports"
}
