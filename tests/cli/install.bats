#!/usr/bin/env bats
#
# make install: what a user gets of the library. Only the public headers
# (the client API and what it includes), libmc.{a,so} with a versioned
# soname, and an mc.pc that builds a client without libevent.

load helpers

setup_file() {
	export ROOT="$BATS_FILE_TMPDIR/root"
	make -s -C "$MC_ROOT" install PREFIX=/usr DESTDIR="$ROOT" >/dev/null
}

# A client a user would write: only the public headers, only libmc.
write_client() {
	cat >"$BATS_TEST_TMPDIR/client.c" <<'EOF'
#include <mc/client.h>
#include <mc/proto.h>
#include <stdio.h>

int
main(int argc, char **argv)
{
	struct mc_client_opts o = MC_CLIENT_OPTS_INIT;
	struct mc_err err;
	struct mc_client *c;

	o.master = argc > 1 ? argv[1] : "unix:/nonexistent/master.sock";
	c = mc_client_new(&o, &err);
	if (c == NULL) {
		printf("%s %s\n", mc_status_name(err.code), err.msg);
		return mc_status_exit_code(err.code);
	}
	mc_client_free(c);
	return 0;
}
EOF
}

# pkg-config reads the installed mc.pc with its prefix moved under $ROOT.
pc() {
	PKG_CONFIG_PATH="$ROOT/usr/lib/pkgconfig" pkg-config --define-variable=prefix="$ROOT/usr" "$@" mc
}

@test "install: only the public headers go under include/mc" {
	run -0 ls "$ROOT/usr/include/mc"
	assert_output "$(printf '%s\n' client.h err.h proto.h)"
	# and they stand on their own
	for h in client.h err.h proto.h; do
		echo "#include <mc/$h>" | cc -std=c11 -Wall -Werror -fsyntax-only \
			-I"$ROOT/usr/include" -x c -
	done
}

@test "install: libmc.so has a versioned soname, with the libmc.so link" {
	[ -L "$ROOT/usr/lib/libmc.so" ]
	[ -L "$ROOT/usr/lib/libmc.so.0" ]
	[ -f "$ROOT/usr/lib/libmc.a" ]
	run -0 readelf -d "$ROOT/usr/lib/libmc.so"
	assert_output --partial 'Library soname: [libmc.so.0]'
	refute_output --partial libevent
}

@test "install: a client builds and links with pkg-config, without libevent" {
	write_client
	run -0 pc --cflags --libs
	refute_output --partial event
	cc -std=c11 -o "$BATS_TEST_TMPDIR/client" "$BATS_TEST_TMPDIR/client.c" \
		$(pc --cflags --libs)
	run -0 readelf -d "$BATS_TEST_TMPDIR/client"
	refute_output --partial libevent
	LD_LIBRARY_PATH="$ROOT/usr/lib" run -69 "$BATS_TEST_TMPDIR/client"
	assert_output --partial 'unavailable cannot connect to unix:/nonexistent/master.sock'
}

# The same, from mc-static.pc: libmc.a in, its dependencies shared.
pc_static() {
	PKG_CONFIG_PATH="$ROOT/usr/lib/pkgconfig" pkg-config --define-variable=prefix="$ROOT/usr" "$@" mc-static
}

@test "install: mc-static.pc links libmc.a, its dependencies staying shared" {
	write_client
	run -0 pc_static --libs
	assert_output --partial "$ROOT/usr/lib/libmc.a"
	refute_output --partial event
	cc -std=c11 -o "$BATS_TEST_TMPDIR/client" "$BATS_TEST_TMPDIR/client.c" \
		$(pc_static --cflags --libs)
	run -0 readelf -d "$BATS_TEST_TMPDIR/client"
	refute_output --partial libmc
	assert_output --partial libmsgpackc
	run -69 "$BATS_TEST_TMPDIR/client"
	assert_output --partial 'cannot connect to unix:/nonexistent/master.sock'
}

@test "install: pkg-config --static mc gives what cc -static needs" {
	write_client
	run -0 pc --static --libs
	refute_output --partial event
	cc -std=c11 -static -o "$BATS_TEST_TMPDIR/client" "$BATS_TEST_TMPDIR/client.c" \
		$(pc --static --cflags --libs) 2>"$BATS_TEST_TMPDIR/ld.err" ||
		{ cat "$BATS_TEST_TMPDIR/ld.err"; false; }
	run -0 readelf -d "$BATS_TEST_TMPDIR/client"
	assert_output --partial 'There is no dynamic section'
	run -69 "$BATS_TEST_TMPDIR/client"
	assert_output --partial 'cannot connect to unix:/nonexistent/master.sock'
}

# A prefix the dynamic linker does not search: mc.pc carries an rpath, so
# the client runs without LD_LIBRARY_PATH. Installed after setup_file's
# /usr install, it also shows mc.pc is rewritten for each prefix.
@test "install: under a prefix of its own, a client finds libmc.so by its rpath" {
	local prefix="$BATS_TEST_TMPDIR/opt/mc"
	make -s -C "$MC_ROOT" install PREFIX="$prefix" >/dev/null
	run -0 grep -x "prefix=$prefix" "$prefix/lib/pkgconfig/mc.pc"
	write_client
	cc -std=c11 -o "$BATS_TEST_TMPDIR/client" "$BATS_TEST_TMPDIR/client.c" \
		$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs mc)
	run -0 readelf -d "$BATS_TEST_TMPDIR/client"
	assert_output --partial "Library runpath: [$prefix/lib]"
	env -u LD_LIBRARY_PATH "$BATS_TEST_TMPDIR/client" >"$BATS_TEST_TMPDIR/out" && rc=0 || rc=$?
	run -0 cat "$BATS_TEST_TMPDIR/out"
	assert_equal "$rc" 69
	assert_output --partial 'cannot connect to unix:/nonexistent/master.sock'
}

@test "install: a prefix the linker searches gets no rpath" {
	run -0 pc --libs
	refute_output --partial rpath
}
