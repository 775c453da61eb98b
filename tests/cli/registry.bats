#!/usr/bin/env bats
#
# The method registry of each daemon (mc/conn.h): what --list-methods
# prints is what man/mc-wire.5 documents, names and flags, and every
# metric a daemon serves is listed in its man page.

load helpers

WIRE="$BATS_TEST_DIRNAME/../../man/mc-wire.5"
MAN="$BATS_TEST_DIRNAME/../../man"

setup() {
	mc_require_bins mc-master mc-peer mc-cli
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# documented SECTION_REGEX: method names under the matching .Sh sections, sorted.
documented() {
	awk -v re="$1" '
		/^\.Sh / { on = ($0 ~ re) }
		on && /^\.It Li [a-z_]+/ { print $3 }' "$WIRE" | sort -u
}

# flags_doc SUBSECTION: "NAME FLAGS" lines of one .Ss list under METHOD FLAGS.
flags_doc() {
	awk -v ss="$1" '
		/^\.Sh / { in_flags = ($0 == ".Sh METHOD FLAGS") }
		in_flags && /^\.Ss / { sub(/^\.Ss /, ""); on = ($0 == ss); next }
		on && /^\.It Li / { name = $3; next }
		on && name != "" && !/^\./ {
			gsub(/, /, ","); sub(/^\\-$/, "-"); print name, $0; name = "" }
		on && /^\.El/ { on = 0 }' "$WIRE"
}

@test "registry: the master's methods are the ones mc-wire(5) documents" {
	run -0 mc-master --list-methods
	diff <(awk '{ print $1 }' <<<"$output" | sort -u) <(documented '^\.Sh MASTER METHODS')
	# one entry per name
	[ "$(awk '{ print $1 }' <<<"$output" | sort | uniq -d)" = "" ]
}

@test "registry: the master's flags are the ones mc-wire(5) lists" {
	run -0 mc-master --list-methods
	diff <(sort <<<"$output") <(flags_doc Master | sort)
}

@test "registry: the peer's methods and flags are the ones mc-wire(5) documents" {
	run -0 mc-peer --list-methods
	diff <(awk '{ print $1 }' <<<"$output" | sort -u) <(documented '^\.Sh PEER ')
	diff <(sort <<<"$output") <( (flags_doc 'Peer data plane'; flags_doc 'Peer control connection') | sort)
}

@test "registry: an unknown method is refused by name, and counted nowhere" {
	mc_test_dir
	mc_start_master --http 127.0.0.1:0
	run -1 mc-rpc "$MC_MASTER" no_such_method
	assert_output --partial "unknown method 'no_such_method'"
	run -0 mc_scrape master
	refute_output --partial 'method="no_such_method"'
}

# served_metrics NAME: the metric family names daemon NAME serves.
served_metrics() {
	mc_scrape "$1" | awk '/^# TYPE / { print $3 }' | sort -u
}

# listed_metrics PAGE: the metric names a man page mentions.
listed_metrics() {
	grep -o 'mc_[a-z_]*' "$MAN/$1" | sort -u
}

# all_listed NAME PAGE: after some traffic, every metric daemon NAME serves
# is in man page PAGE.
all_listed() {
	echo x | mc-cli put k1
	mc-cli get k1 >/dev/null
	run comm -23 <(served_metrics "$1") <(listed_metrics "$2")
	assert_success
	assert_output ""
}

@test "registry: every metric the master serves is listed in mc-master(8)" {
	mc_test_dir
	mc_start_master --http 127.0.0.1:0
	mc_start_peers 1
	all_listed master mc-master.8
}

@test "registry: every metric the peer serves is listed in mc-peer(8)" {
	mc_test_dir
	mc_start_master
	mc_start_peer p1 --http 127.0.0.1:0
	all_listed p1 mc-peer.8
}

@test "registry: metric help speaks in one voice, a sentence each" {
	mc_test_dir
	mc_start_master --http 127.0.0.1:0
	mc_start_peer p1 --http 127.0.0.1:0
	local d
	for d in master p1; do
		run -0 mc_scrape "$d"
		# HELP lines that do not start with a capital or do not end with a period
		run awk '/^# HELP / { h = $0; sub(/^# HELP [^ ]+ /, "", h)
			if (h !~ /^[A-Z]/ || h !~ /\.$/) print }' <<<"$output"
		assert_output ""
	done
}
