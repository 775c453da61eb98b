#!/usr/bin/env bats
#
# mc-cli evict, the client side (hierarchical eviction seed): its arguments, checking a plan
# before anything is sent (bad input exits 65 naming the record, without
# ever connecting), an unreachable master (69), and a round trip against
# a master: a dry run prints a plan, and that plan fed back through
# --plan prints a report.

load helpers

# An address where nothing listens: a client that tries it exits 69.
NOWHERE="unix:$BATS_FILE_TMPDIR/nothing-listens.sock"

HDR='{"format":"mc-plan","version":1,"created":1,"target":2,"lowerbound":1}'
VICTIM='{"tenant":"a","key":"k","version":1,"peer":"p","tier":"dram","bytes":9}'

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# plan_file NAME LINES...: a JSON-lines plan in the test's directory.
plan_file() {
	local f="$BATS_TEST_TMPDIR/$1"
	shift
	printf '%s\n' "$@" >"$f"
	echo "$f"
}

@test "evict: neither --plan nor --target is a usage error" {
	run mc-cli -m "$NOWHERE" evict
	assert_failure 64
	assert_output --partial "give --plan FILE or --target SIZE"
}

@test "evict: --plan and --target together are a usage error" {
	run mc-cli -m "$NOWHERE" evict --plan - --target 1GiB </dev/null
	assert_failure 64
	assert_output --partial "--plan and --target exclude each other"
}

@test "evict: --dry-run and the filters go with --target only" {
	run mc-cli -m "$NOWHERE" evict --plan - --dry-run </dev/null
	assert_failure 64
	assert_output --partial "--dry-run goes with --target, not --plan"
	run mc-cli -m "$NOWHERE" evict --plan - --tenant a </dev/null
	assert_failure 64
	assert_output --partial "--tenant goes with --target"
}

@test "evict: a bad --target names the flag" {
	run mc-cli -m "$NOWHERE" evict --target 12parsecs
	assert_failure 64
	assert_output --partial "invalid --target '12parsecs'"
	run mc-cli -m "$NOWHERE" evict --target 0
	assert_failure 64
	assert_output --partial "invalid --target '0'"
}

@test "evict: a bad percentage names the flag, as mc-evict-plan does" {
	run mc-cli -m "$NOWHERE" evict --target 120%
	assert_failure 64
	assert_output --partial "invalid --target '120%': a percentage is at most 100%"
	run mc-cli -m "$NOWHERE" evict --target 0%
	assert_failure 64
	assert_output --partial "invalid --target '0%'"
	run mc-cli -m "$NOWHERE" evict --target 1MiB --lowerbound 5.1234567%
	assert_failure 64
	assert_output --partial "invalid --lowerbound '5.1234567%'"
}

@test "evict: a --lowerbound over --target is a usage error" {
	run mc-cli -m "$NOWHERE" evict --target 1MiB --lowerbound 2MiB
	assert_failure 64
	assert_output --partial "--lowerbound is over --target"
}

@test "evict: --raw and --json together are a usage error" {
	run mc-cli -m "$NOWHERE" --json evict --target 1MiB --raw
	assert_failure 64
	assert_output --partial "--raw and --json exclude each other"
}

@test "evict: a bad JSON plan exits 65 naming the line, before connecting" {
	local f
	f="$(plan_file bad.json "$HDR" \
		'{"t":"stage","id":1,"scope":"","kind":"evict","target":1,"lowerbound":0,"victims":[]}' \
		'{"t":"stage","id":2,"scope":"","kind":"purge","target":1,"lowerbound":0,"victims":[]}')"
	run mc-cli -m "$NOWHERE" evict --plan "$f"
	assert_failure 65
	assert_output --partial "bad plan '$f': line 3: field 'kind': unknown stage kind 'purge'"
	refute_output --partial "connect"
}

@test "evict: a bad plan on stdin exits 65 naming the victim" {
	run mc-cli -m "$NOWHERE" evict --plan - < <(printf '%s\n' "$HDR" \
		'{"t":"stage","id":1,"scope":"","kind":"evict","target":1,"lowerbound":0,"victims":['"$VICTIM"',{"tenant":"a","key":"k2","version":-1,"peer":"p","tier":"dram","bytes":1}]}')
	assert_failure 65
	assert_output --partial "bad plan on standard input: line 2: victim 2: field 'version'"
}

@test "evict: blank lines before a JSON plan still count in line numbers" {
	local f
	f="$(plan_file blank.json "" "" "$HDR" '{"id":1}')"
	run mc-cli -m "$NOWHERE" evict --plan "$f"
	assert_failure 65
	assert_output --partial "line 4: field 't': missing"
}

@test "evict: a truncated msgpack plan exits 65 naming the record" {
	# a valid msgpack header map, then a map that promises more than is there
	printf '\x85\xa6format\xa7mc-plan\xa7version\x01\xa7created\x01\xa6target\x02\xaalowerbound\x01\x83\xa1t' \
		>"$BATS_TEST_TMPDIR/cut.plan"
	run mc-cli -m "$NOWHERE" evict --plan "$BATS_TEST_TMPDIR/cut.plan"
	assert_failure 65
	assert_output --partial "record 1: truncated"
}

@test "evict: empty input is not a plan (65)" {
	run mc-cli -m "$NOWHERE" evict --plan - </dev/null
	assert_failure 65
	assert_output --partial "not an mc-plan stream"
}

@test "evict: a missing plan file fails naming it" {
	run mc-cli -m "$NOWHERE" evict --plan "$BATS_TEST_TMPDIR/none.plan"
	assert_failure 1
	assert_output --partial "cannot read plan '$BATS_TEST_TMPDIR/none.plan'"
}

@test "evict: a good plan with no master to take it exits 69" {
	local f
	f="$(plan_file good.json "$HDR" \
		'{"t":"stage","id":1,"scope":"","kind":"evict","target":1,"lowerbound":0,"victims":['"$VICTIM"']}')"
	run mc-cli -m "$NOWHERE" evict --plan "$f"
	assert_failure 69
	assert_output --partial "cannot connect to $NOWHERE"
	run mc-cli -m "$NOWHERE" evict --target 1MiB
	assert_failure 69
}

# ---- against a master ----

# cluster: a master, two peers and seven objects of 100000 bytes. The
# policy is one global scope by lease, so the plans printed are one stage
# (the built-in default splits kv from the rest: tests/cli/chains.bats).
cluster() {
	mc_test_dir
	printf 'evict lease\n' >"$BATS_TEST_TMPDIR/lease.policy"
	mc_start_master --peer-ttl 1000h --put-timeout 1000h --lease-ttl 1000h \
		--evict-policy "$BATS_TEST_TMPDIR/lease.policy"
	mc_start_peers 2
	local n
	for n in 1 2 3 4 5 6; do
		head -c 100000 /dev/zero | mc-cli put "k$n" --type kv
	done
	head -c 100000 /dev/zero | mc-cli -t bob put b1 --type hidden
}

@test "evict: a dry run prints the master's plan and evicts nothing" {
	cluster
	run mc-cli evict --target 250000 --dry-run
	assert_success
	assert_line --regexp '^stage 1 evict global  3 victims 292\.9[0-9]KiB'
	assert_line --partial "planned 3 victims"
	run mc-cli --json evict --target 250000 --dry-run
	assert_success
	head -n 1 <<<"$output" | jq_true '.format == "mc-plan" and .target == 250000'
	[ "$(tail -n +2 <<<"$output" | jq -s '[.[].victims[]] | length')" -eq 3 ]
	mc-cli exist k1
	mc-cli exist k6
}

@test "evict: --target takes a percentage of the view's bytes, as mc-evict-plan does" {
	cluster
	local total want
	mc-cli --json candidates >"$BATS_TEST_TMPDIR/view.json"
	total="$(tail -n +2 "$BATS_TEST_TMPDIR/view.json" | jq -s 'map(.bytes) | add')"
	want=$(((total * 20 + 99) / 100))
	run mc-cli --json evict --target 20% --lowerbound 50% --dry-run
	assert_success
	head -n 1 <<<"$output" | jq_true --argjson t "$want" \
		'.target == $t and .lowerbound == (($t + 1) / 2 | floor)'
	# the same plan's numbers as the offline planner's over the same view
	mc-evict-plan -p "$BATS_TEST_TMPDIR/lease.policy" --target 20% --lowerbound 50% --json \
		<"$BATS_TEST_TMPDIR/view.json" | head -n 1 |
		jq_true --argjson t "$want" '.target == $t and .lowerbound == (($t + 1) / 2 | floor)'
	# a round run for a percentage reports the bytes it stood for
	run mc-cli --json evict --target 20% --tenant bob -t bob
	assert_success
	head -n 1 <<<"$output" | jq_true '.round.target == 20000 and .round.usage_at_start == 100000'
	run -1 mc-cli -t bob exist b1
}

@test "evict: a size --lowerbound above a percentage --target is refused by the master" {
	cluster
	run mc-cli evict --target 1% --lowerbound 1MiB --dry-run
	assert_failure 64
	assert_output --partial "lowerbound 1MiB is above the target of"
}

@test "evict: a dry-run plan fed back through --plan prints a report" {
	cluster
	mc-cli --json evict --target 250000 --dry-run >"$BATS_TEST_TMPDIR/round.plan"
	# one victim gets a lease first, so the report has a failure to show
	local leased
	leased="$(jq -r 'select(.t == "stage") | .victims[0].key' "$BATS_TEST_TMPDIR/round.plan")"
	mc_hold_lease "$leased"
	run mc-cli evict --plan "$BATS_TEST_TMPDIR/round.plan"
	assert_success
	assert_line --regexp '^stage 1 evict global  planned 3 obj [0-9.]+KiB  evicted 2 obj '
	assert_line "  failed default/$leased: lease renewed"
	assert_line --regexp '^evicted 2 objects, '
	mc-cli exist "$leased"
}

# plan_keys FILE: the keys of a JSON-lines plan's victims, one a line.
plan_keys() {
	jq -r 'select(.t == "stage") | .victims[].key' "$1"
}

@test "evict: a plan whose every entry is gone exits 1, counting them" {
	cluster
	mc-cli --json evict --target 250000 --dry-run >"$BATS_TEST_TMPDIR/round.plan"
	local k
	for k in $(plan_keys "$BATS_TEST_TMPDIR/round.plan"); do
		mc-cli rm "$k"
	done
	run mc-cli evict --plan - <"$BATS_TEST_TMPDIR/round.plan"
	assert_failure 1
	assert_line --regexp '^  failed default/k[0-9]: gone$'
	assert_line "mc-cli: nothing evicted: 3 of 3 planned entries named missing objects"
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/round.plan"
	assert_failure 1
	assert_output --partial "3 of 3 planned entries named missing objects"
}

@test "evict: a plan with some entries gone succeeds and counts the missing ones" {
	cluster
	mc-cli --json evict --target 250000 --dry-run >"$BATS_TEST_TMPDIR/round.plan"
	mc-cli rm "$(plan_keys "$BATS_TEST_TMPDIR/round.plan" | head -n 1)"
	run mc-cli evict --plan "$BATS_TEST_TMPDIR/round.plan"
	assert_success
	assert_line --regexp '^evicted 2 objects, '
	assert_line "mc-cli: 1 of 3 planned entries named missing objects"
}

@test "evict: --json prints the report as JSON lines, --raw as msgpack" {
	cluster
	mc-cli --json evict --target 150000 --dry-run >"$BATS_TEST_TMPDIR/a.plan"
	run mc-cli --json evict --plan - <"$BATS_TEST_TMPDIR/a.plan"
	assert_success
	head -n 1 <<<"$output" | jq_true '.format == "mc-report"'
	tail -n +2 <<<"$output" | jq_true '.t == "stage" and .ran and .evicted_objects == 2'
	mc-cli evict --target 100000 --raw >"$BATS_TEST_TMPDIR/raw.report"
	# a msgpack map whose first entry is format: "mc-report" (two header bytes
	# show as dots)
	[ "$(head -c 18 "$BATS_TEST_TMPDIR/raw.report" | LC_ALL=C tr -c 'a-z-' '.')" = \
		"..format.mc-report" ]
}

@test "evict: a round's report says what the round was for" {
	cluster
	local now
	now="$(clock_now)"
	run mc-cli --json evict --target 100000 --tenant bob -t bob
	assert_success
	head -n 1 <<<"$output" | jq_true --argjson now "$now" '.round.trigger == "manual" and
		.round.scope == "tenant bob" and .round.usage_at_start == 100000 and
		.round.target == 100000 and .round.queued_at == $now and .round.started_at == $now'
	run mc-cli evict --target 100000
	assert_success
	assert_line --regexp '^round manual  usage at start [0-9.]+KiB  target 97\.6[0-9]KiB$'
}

@test "evict: --peer by an address nobody has fails naming it" {
	cluster
	run mc-cli evict --target 1MiB --peer unix:/nowhere.sock --dry-run
	assert_failure 1
	assert_output --partial "no peer 'unix:/nowhere.sock'"
}

@test "evict: a key that is not text crosses every JSON stream as {\"b64\":...}" {
	mc_test_dir
	mc_start_master --peer-ttl 1000h --put-timeout 1000h --lease-ttl 1000h
	mc_start_peers 1
	local key b64
	key=$'blk\xff\x01 end'
	b64="$(printf '%s' "$key" | base64)"
	head -c 1000 /dev/zero | mc-cli put "$key"
	head -c 1000 /dev/zero | mc-cli put café
	# mc-cli stat and candidates: text stays a string, bytes become base64
	run mc-cli --json stat "$key"
	assert_success
	jq_true --arg b "$b64" '.key == {"b64": $b}' <<<"$output"
	mc-cli --json candidates >"$BATS_TEST_TMPDIR/view.json"
	tail -n +2 "$BATS_TEST_TMPDIR/view.json" | jq -s --arg b "$b64" \
		'map(.key) | sort_by(type) | . == [{"b64": $b}, "café"]' | grep -qx true
	# mc-evict-plan reads it and plans it; mc-cli evict reads that plan back
	printf 'evict lru\n' >"$BATS_TEST_TMPDIR/lru.policy"
	mc-evict-plan -p "$BATS_TEST_TMPDIR/lru.policy" --target 2000 --json \
		<"$BATS_TEST_TMPDIR/view.json" >"$BATS_TEST_TMPDIR/plan.json"
	jq -s --arg b "$b64" '[.[1:][].victims[].key] | index({"b64": $b}) != null' \
		"$BATS_TEST_TMPDIR/plan.json" | grep -qx true
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/plan.json"
	assert_success
	tail -n +2 <<<"$output" | jq_true '.t == "stage" and .evicted_objects == 2'
	run mc-cli exist "$key"
	assert_failure 1
}
