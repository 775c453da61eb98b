#!/usr/bin/env bats
#
# mc-cli put and get show their progress on stderr for an object of at
# least 64 MiB when stderr is a terminal (a pseudo-terminal from
# script(1) here), never on a pipe, and --progress / --no-progress force
# either way.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli
	command -v script >/dev/null || {
		echo "# script(1) (bsdutils) is needed for a pseudo-terminal" >&2
		return 1
	}
	mc_file_dir
	mc_start_master
	mc_start_peers 1
	# 64 MiB, the least object a terminal shows progress for, and a small one
	mc_random_file "$BATS_FILE_TMPDIR/big" $((64 << 20))
	mc_random_file "$BATS_FILE_TMPDIR/small" $((1 << 20))
	mc-cli put big "$BATS_FILE_TMPDIR/big"
	mc-cli put small "$BATS_FILE_TMPDIR/small"
}

teardown_file() {
	mc_stop_everything
}

# on_tty CMD...: run CMD with stdin, stdout and stderr on a pseudo-terminal;
# what it wrote there is the output
on_tty() {
	local q
	printf -v q '%q ' "$@"
	script -qfec "$q" /dev/null
}

# the line: "\rput 'big': D / 64.0 MiB (P%)", erased at the end
LINE_RE=$'\r(put|get) \'[a-z0-9]+\': [0-9.]+ / 64\\.0 MiB \\([0-9]+%\\)\033\\[K'

@test "progress: a put of 64 MiB on a terminal shows its progress on stderr, then erases it" {
	run -0 on_tty mc-cli put big2 "$BATS_FILE_TMPDIR/big"
	[[ "$output" =~ $LINE_RE ]]
	[[ "$output" == *"put 'big2': "* ]]
	[[ "$output" == *$'\r\033[K' ]]
	mc-cli rm big2
}

@test "progress: a get of 64 MiB on a terminal shows its progress, and the bytes are whole" {
	run -0 on_tty mc-cli get big -o "$BATS_TEST_TMPDIR/got"
	[[ "$output" =~ $LINE_RE ]]
	[[ "$output" == *"get 'big': "* ]]
	cmp "$BATS_FILE_TMPDIR/big" "$BATS_TEST_TMPDIR/got"
}

@test "progress: an object under 64 MiB shows none on a terminal" {
	run -0 on_tty mc-cli get small -o "$BATS_TEST_TMPDIR/got"
	refute_output --partial "MiB"
	run -0 on_tty mc-cli put --upsert small "$BATS_FILE_TMPDIR/small"
	refute_output --partial "MiB"
}

@test "progress: a pipe gets none, however big the object" {
	mc-cli put --upsert big "$BATS_FILE_TMPDIR/big" 2>"$BATS_TEST_TMPDIR/put.err"
	mc-cli get big 2>"$BATS_TEST_TMPDIR/get.err" | cmp "$BATS_FILE_TMPDIR/big" -
	[ ! -s "$BATS_TEST_TMPDIR/put.err" ]
	[ ! -s "$BATS_TEST_TMPDIR/get.err" ]
}

@test "progress: --progress shows it on a pipe and for a small object, --no-progress hides it on a terminal" {
	mc-cli --progress get small -o "$BATS_TEST_TMPDIR/got" 2>"$BATS_TEST_TMPDIR/err"
	grep -qF "get 'small': " "$BATS_TEST_TMPDIR/err"
	# given after the command too, as every global option may be
	mc-cli put --upsert small "$BATS_FILE_TMPDIR/small" --progress 2>"$BATS_TEST_TMPDIR/err"
	grep -qF "put 'small': " "$BATS_TEST_TMPDIR/err"
	run -0 on_tty mc-cli --no-progress get big -o "$BATS_TEST_TMPDIR/got"
	refute_output --partial "MiB"
	run -0 on_tty mc-cli put --upsert big "$BATS_FILE_TMPDIR/big" --no-progress
	refute_output --partial "MiB"
}
