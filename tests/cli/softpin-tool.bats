#!/usr/bin/env bats
#
# mc-softpin: the tool's own behaviour (flags, exit codes, output formats,
# --json) against a real master and peer. The soft-pin semantics
# themselves are pinned by the master's suites; here time moves only by
# the fake clock, so deadlines and remaining times are exact.

load helpers

ISO_RE='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-softpin
	mc_file_dir
	# Peers must outlive every clock move here: a long --peer-ttl.
	mc_start_master --peer-ttl 1000h --put-timeout 1000h
	mc_start_peers 1
}

teardown_file() {
	mc_stop_everything
}

# put_pin KEY ACTION [TENANT]: a small object written with --soft-pin ACTION.
put_pin() {
	echo "value of $1" | mc-cli -t "${3:-default}" put "$1" --soft-pin "$2"
}

# ---- conventions ----

@test "softpin-tool: --version prints the program and version" {
	run -0 mc-softpin --version
	assert_output "mc-softpin $MC_VERSION"
}

@test "softpin-tool: --help names every command and option" {
	run -0 mc-softpin --help
	assert_output --partial show
	assert_output --partial ls
	assert_output --partial stats
	assert_output --partial expire
	assert_output --partial --due-within
	assert_output --partial --limit
}

@test "softpin-tool: --list-options lists options and commands for completions" {
	run -0 mc-softpin --list-options
	assert_line --regexp $'^--master\tADDR\t'
	assert_line --regexp $'^--tenant\tSTR\t'
	assert_line --regexp $'^--json\t-\t'
	assert_line --regexp $'^--due-within\tDURATION\t'
	assert_line --regexp $'^--limit\tN\t'
	assert_line --regexp $'^cmd\tshow\t'
	assert_line --regexp $'^cmd\tls\t'
	assert_line --regexp $'^cmd\tstats\t'
	assert_line --regexp $'^cmd\texpire\t'
}

# ---- usage errors: exit 64, naming what was wrong ----

@test "softpin-tool: no command exits 64" {
	run -64 mc-softpin
	assert_output --partial "mc-softpin: missing command"
}

@test "softpin-tool: an unknown command exits 64 naming it" {
	run -64 mc-softpin frobnicate
	assert_output --partial "mc-softpin: unknown command 'frobnicate'"
}

@test "softpin-tool: an unknown option exits 64 naming it" {
	run -64 mc-softpin ls --bogus
	assert_output --partial "mc-softpin: unknown option '--bogus'"
}

@test "softpin-tool: a bad --due-within exits 64 naming the flag and value" {
	run -64 mc-softpin ls --due-within soon
	assert_output --partial "mc-softpin: invalid --due-within 'soon'"
}

@test "softpin-tool: --limit 0 exits 64" {
	run -64 mc-softpin ls --limit 0
	assert_output --partial "mc-softpin: invalid --limit '0'"
}

@test "softpin-tool: show without a key exits 64" {
	run -64 mc-softpin show
	assert_output --partial "mc-softpin: show: missing KEY"
}

@test "softpin-tool: an extra argument exits 64 naming it" {
	run -64 mc-softpin show a b
	assert_output --partial "unexpected argument 'b'"
	run -64 mc-softpin stats x
	assert_output --partial "unexpected argument 'x'"
}

@test "softpin-tool: an ls-only option on another command exits 64" {
	run -64 mc-softpin stats --due-within 1m
	assert_output --partial "option '--due-within' belongs to 'ls'"
	run -64 mc-softpin expire --limit 5
	assert_output --partial "option '--limit' belongs to 'ls'"
}

@test "softpin-tool: an unreachable master exits 69 saying where" {
	run -69 mc-softpin -m "unix:$BATS_TEST_TMPDIR/nobody.sock" stats
	assert_output --regexp "^mc-softpin: cannot connect to unix:.*nobody.sock: "
	run -69 mc-softpin -m 127.0.0.1:1 ls
	assert_output "mc-softpin: cannot connect to 127.0.0.1:1: connection refused"
}

# ---- show ----

@test "softpin-tool: show of an active pin prints state, ISO deadline and exact remaining" {
	local now
	now="$(clock_now)"
	put_pin show1 enable:10m
	run -0 mc-softpin show show1
	assert_line "key: show1"
	assert_line "tenant: default"
	assert_line "state: active"
	assert_line --regexp "^deadline: $ISO_RE \\($((now + 600000))\\)\$"
	assert_line "remaining: 10m (600000 ms)"
	advance_clock 500
	run -0 mc-softpin show show1
	assert_line "remaining: 9m59.5s (599500 ms)"
	assert_line --regexp "\\($((now + 600000))\\)\$"
}

@test "softpin-tool: show renders the deadline as UTC" {
	local now want
	now="$(clock_now)"
	put_pin show-utc enable:1h
	want="$(TZ=UTC date -d "@$(((now + 3600000) / 1000))" +%Y-%m-%dT%H:%M:%S)"
	run -0 mc-softpin show show-utc
	assert_line --regexp "^deadline: $want\\.[0-9]{3}Z "
}

@test "softpin-tool: show of an unpinned key says disabled with no deadline" {
	put_pin show-plain preserve
	run -0 mc-softpin show show-plain
	assert_line "state: disabled"
	assert_line "deadline: -"
	assert_line "remaining: -"
}

@test "softpin-tool: show of an absent key exits 1 saying not found" {
	run -1 mc-softpin show no-such-key
	assert_output "mc-softpin: cannot show 'no-such-key': not found"
}

@test "softpin-tool: show --json is one object with tenant, key and the master's fields" {
	put_pin show-json enable:2h
	run -0 mc-softpin show show-json --json
	assert_equal "${#lines[@]}" 1
	jq_true '.tenant == "default" and .key == "show-json" and .state == "active"
		and .remaining_ms == 7200000 and (.deadline | type) == "number"' <<<"$output"
}

@test "softpin-tool: show looks in the tenant of -t, then MC_TENANT" {
	put_pin show-t enable:1h acme
	run -1 mc-softpin show show-t
	run -0 mc-softpin -t acme show show-t
	assert_line "tenant: acme"
	assert_line "state: active"
	MC_TENANT=acme run -0 mc-softpin show show-t --json
	jq_true '.tenant == "acme" and .state == "active"' <<<"$output"
}

@test "softpin-tool: show grants no read lease (rm needs no --force after it)" {
	put_pin show-nolease enable:1h
	mc-softpin show show-nolease >/dev/null
	mc-cli rm show-nolease
}

# ---- ls ----

@test "softpin-tool: ls prints one line per pin: deadline, remaining, tenant, key" {
	put_pin ls-a enable:3h
	run -0 mc-softpin ls
	assert_line --regexp "^$ISO_RE  3h +default  ls-a\$"
	refute_line --partial show-plain
}

@test "softpin-tool: ls lists pins of every tenant soonest first" {
	run -0 mc-softpin ls --json
	jq -s -e 'length >= 2 and ([.[].deadline] == ([.[].deadline] | sort))' <<<"$output"
	jq_any '.tenant == "acme" and .key == "show-t"' <<<"$output"
	jq_any '.tenant == "default" and .key == "ls-a"' <<<"$output"
}

@test "softpin-tool: ls --json prints one object per pin with remaining_ms" {
	run -0 mc-softpin ls --json
	jq_true '(.tenant | type) == "string" and (.key | type) == "string"
		and (.deadline | type) == "number" and (.remaining_ms | type) == "number"' \
		<<<"$output"
	jq_any '.key == "ls-a" and .remaining_ms == 10800000' <<<"$output"
}

@test "softpin-tool: ls --due-within lists only the pins due that soon" {
	put_pin ls-soon enable:90s
	put_pin ls-late enable:20h
	run -0 mc-softpin ls --due-within 2m
	assert_line --regexp "^$ISO_RE  1m30s +default  ls-soon\$"
	refute_line --partial ls-late
	refute_line --partial ls-a
}

@test "softpin-tool: ls --limit caps the list and says on stderr that more exist" {
	run --separate-stderr -0 mc-softpin ls --limit 1
	assert_equal "${#lines[@]}" 1
	[[ "$stderr" == *"more pins than listed"* ]]
	run --separate-stderr -0 mc-softpin ls --limit 10000
	[ -z "$stderr" ]
}

@test "softpin-tool: ls with nothing due prints nothing and exits 0" {
	run -0 mc-softpin ls --due-within 1ms
	assert_output ""
}

# ---- stats ----

@test "softpin-tool: stats prints the gauge, index and cleanup counters" {
	run -0 mc-softpin stats
	assert_line --regexp '^active: [0-9]+$'
	assert_line --regexp '^heap: [0-9]+$'
	assert_line --regexp '^live: [0-9]+$'
	assert_line --regexp '^rebuilds: [0-9]+$'
	assert_line --regexp '^cleanup_runs: [0-9]+$'
	assert_line --regexp '^expired: [0-9]+$'
	assert_line "default_ttl: 30m (1800000 ms)"
	assert_line "max_ttl: 1d (86400000 ms)"
}

@test "softpin-tool: stats --json is one object whose live count matches ls" {
	local n
	n="$(mc-softpin ls --json | wc -l)"
	run -0 mc-softpin stats --json
	assert_equal "${#lines[@]}" 1
	jq_true --argjson n "$n" '.live == $n and .active == $n and .heap >= .live
		and .default_ttl_ms == 1800000 and .max_ttl_ms == 86400000' <<<"$output"
}

# ---- expire ----

@test "softpin-tool: expire with nothing due prints expired: 0 only" {
	run -0 mc-softpin expire
	assert_output "expired: 0"
	run -0 mc-softpin expire --json
	jq_true '.expired == 0 and .items == []' <<<"$output"
}

@test "softpin-tool: expire clears a due pin and names its tenant and key" {
	local before after
	put_pin exp-1 enable:1s
	before="$(mc-softpin stats --json | jq .expired)"
	advance_clock 1000
	run -0 mc-softpin expire --json
	jq_true '.expired == (.items | length)' <<<"$output"
	# The background sweep (every 100 ms) may have been first; either
	# way the pin is gone and counted once.
	if [ "$(jq .expired <<<"$output")" -gt 0 ]; then
		jq_true '.items[0].tenant == "default" and .items[0].key == "exp-1"' <<<"$output"
	fi
	run -0 mc-softpin show exp-1
	assert_line "state: disabled"
	after="$(mc-softpin stats --json | jq .expired)"
	assert_equal "$after" "$((before + 1))"
	run -0 mc-softpin ls
	refute_line --partial exp-1
}

@test "softpin-tool: expire text names each expired pin on its own line" {
	put_pin exp-2 enable:1s
	advance_clock 1000
	run -0 mc-softpin expire
	assert_line --index 0 --regexp '^expired: [01]$'
	if [ "${lines[0]}" = "expired: 1" ]; then
		assert_line --index 1 --regexp "^$ISO_RE  default  exp-2\$"
	fi
	run -0 mc-softpin show exp-2
	assert_line "state: disabled"
}
