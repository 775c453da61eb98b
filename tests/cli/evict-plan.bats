#!/usr/bin/env bats
#
# mc-evict-plan, the pure planning filter of the eviction pipeline
#   mc-cli candidates | mc-evict-plan -p POLICY --target 2GiB | mc-cli evict --plan -
# Views are written here as JSON lines (man/mc-candidates.5) and, where
# the msgpack form matters, packed by fixtures/evict-plan/mp; policies are
# files (man/mc-policy.5). No daemon runs: the filter reads, plans and
# writes, and the plan depends on the view alone (its clock is the view's
# created time).

load helpers

MP="$BATS_TEST_DIRNAME/fixtures/evict-plan/mp"
NOW=1700000000000

setup() {
	mc_require_bins mc-evict-plan
	VIEW="$BATS_TEST_TMPDIR/view.jsonl"
	POLICY="$BATS_TEST_TMPDIR/test.policy"
	view_header >"$VIEW"
}

# ---- building views and policies ----

view_header() {
	printf '{"format":"mc-candidates","version":1,"created":%s}\n' "$NOW"
}

# cand KEY TENANT TYPE BYTES AGE_MS [LEASE_IN_MS] [SOFT_PIN_IN_MS]: one
# candidate record last read AGE_MS before the view was taken; a lease or
# soft pin running out that long after it (0: none) keeps it out of the
# first pass.
cand() {
	local lease=0 pin=0
	[ "${6:-0}" -gt 0 ] && lease=$((NOW + $6))
	[ "${7:-0}" -gt 0 ] && pin=$((NOW + $7))
	printf '{"key":"%s","version":1,"tenant":"%s","type":"%s","peer":"peer-1","tier":"dram",' \
		"$1" "$2" "$3"
	printf '"bytes":%s,"created":%s,"last_access":%s,"access_count":1,' \
		"$4" $((NOW - 3600000)) $((NOW - $5))
	printf '"lease_expiry":%s,"soft_pin_deadline":%s}\n' "$lease" "$pin"
}

# add KEY TENANT TYPE BYTES AGE_MS [LEASE_IN_MS] [SOFT_PIN_IN_MS]: append to $VIEW.
add() {
	cand "$@" >>"$VIEW"
}

# add_many PREFIX TENANT TYPE N BYTES: N candidates PREFIX1..PREFIXN, the
# lower numbers read longer ago.
add_many() {
	local n
	for ((n = 1; n <= $4; n++)); do
		add "$1$n" "$2" "$3" "$5" $((100000 - n * 100))
	done
}

policy() {
	cat >"$POLICY"
}

# The tenant/type policy of the seed: tenants A and B split the target by
# usage, A's types split it again, A has a fallback of its own, and a
# global fallback closes the plan.
tenant_type_policy() {
	policy <<-'EOF'
		# global -> tenant -> type
		assign tenant by usage
		  scope A
		    assign type by usage
		      scope hidden
		        evict lru
		      scope kv
		        evict lru
		    fallback
		  scope B
		    evict lru
		fallback
	EOF
}

# A view for it: A holds 8 hidden and 8 kv of 100 bytes, B 4 kv of 100.
tenant_type_view() {
	add_many ah A hidden 8 100
	add_many ak A kv 8 100
	add_many bk B kv 4 100
}

# plan ARGS...: the plan as JSON lines.
plan() {
	mc-evict-plan --json "$@"
}

# stages: the stage records of a JSON plan on stdin as one array, each
# with its continuation records' victims appended.
stages() {
	jq -s -c 'reduce .[] as $r ([];
		if $r.t == "stage" then . + [$r]
		elif $r.t == "victims" then .[-1].victims += $r.victims
		else . end)'
}

# victim_keys: the keys of every victim of a JSON plan, in plan order.
victim_keys() {
	stages | jq -r '.[].victims[].key'
}

# ---- conventions ----

@test "evict-plan: --version prints the program and version" {
	run -0 mc-evict-plan --version
	assert_output "mc-evict-plan $MC_VERSION"
}

@test "evict-plan: --help names every option" {
	run -0 mc-evict-plan --help
	assert_output --regexp '[Uu]sage'
	for opt in --policy --target --lowerbound --soft-pinned-pass --json --explain --check \
		--input; do
		assert_output --partial -- "$opt"
	done
}

@test "evict-plan: --list-options lists every option for the completions" {
	run -0 mc-evict-plan --list-options
	assert_line --regexp $'^--policy\tFILE\t'
	assert_line --regexp $'^--target\tSIZE\t'
	assert_line --regexp $'^--lowerbound\tSIZE\t'
	assert_line --regexp $'^--soft-pinned-pass\t-\t'
	assert_line --regexp $'^--json\t-\t'
	assert_line --regexp $'^--explain\t-\t'
	assert_line --regexp $'^--check\t-\t'
	assert_line --regexp $'^--input\tFILE\t'
}

# ---- planning ----

@test "evict-plan: one ranker takes victims in its order until the target" {
	policy <<<"evict lru"
	add k1 A kv 100 5000
	add k2 A kv 100 1000
	add k3 A kv 100 4000
	add k4 A kv 100 2000
	add k5 A kv 100 3000
	run -0 plan -p "$POLICY" --target 250 <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.format == "mc-plan" and .target == 250 and
		.created == 1700000000000 and .policy == "test.policy"'
	stages <<<"$output" | jq_true 'length == 1 and .[0].scope == "" and
		.[0].kind == "evict" and .[0].id == 1'
	# least recently read first, and no more once 250 bytes are reached
	assert_equal "$(victim_keys <<<"$output" | paste -sd,)" "k1,k3,k5"
}

@test "evict-plan: the default policy is the built-in kv.policy: kv blocks by kv, the rest by lease" {
	add late A general 100 0 0
	add early A general 100 0 0
	add hot A kv 100 0 0
	add cold A kv 100 0 0
	# lease_expiry orders the rest: expired leases, oldest first; kv goes
	# by the LRFU value the master sent
	jq -c 'if .key == "late" then .lease_expiry = 1699999999000
		elif .key == "early" then .lease_expiry = 1699999990000
		elif .key == "hot" then .crf = 5 elif .key == "cold" then .crf = 1 else . end' \
		"$VIEW" >"$VIEW.tmp"
	mv "$VIEW.tmp" "$VIEW"
	run -0 plan --target 200 <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.policy == "kv.policy"'
	st="$(stages <<<"$output")"
	jq_true '[.[] | select(.kind == "evict") | {scope, keys: [.victims[].key]}] ==
		[{"scope": "type=kv", "keys": ["cold"]}, {"scope": "type=general", "keys": ["early"]}]' <<<"$st"
	jq_true '.[-1].kind == "fallback" and .[-1].scope == ""' <<<"$st"
}

@test "evict-plan: a tenant/type policy runs leaves, then the tenant fallback, then the global one" {
	tenant_type_policy
	tenant_type_view
	run -0 plan -p "$POLICY" --target 1000 <"$VIEW"
	local st
	st="$(stages <<<"$output")"
	# depth first, children in policy order, a scope's fallback after them
	assert_equal "$(jq -r '.[] | "\(.kind) \(.scope)"' <<<"$st" | paste -sd,)" \
		"evict tenant=A/type=hidden,evict tenant=A/type=kv,fallback tenant=A,evict tenant=B,fallback "
	# ids count from 1 in plan order
	jq_true '[.[].id] == [range(1; length + 1)]' <<<"$st"
	# every stage's victims lie inside its scope
	jq_true 'all(.[] | select(.scope == "tenant=A/type=hidden") | .victims[];
			.tenant == "A" and (.key | startswith("ah")))' <<<"$st"
	jq_true 'all(.[] | select(.scope == "tenant=A/type=kv") | .victims[];
			.tenant == "A" and (.key | startswith("ak")))' <<<"$st"
	jq_true 'all(.[] | select(.scope == "tenant=A") | .victims[]; .tenant == "A")' <<<"$st"
	jq_true 'all(.[] | select(.scope == "tenant=B") | .victims[]; .tenant == "B")' <<<"$st"
	# the leaves have victims; fallbacks name the scope whose lowerbound they serve
	jq_true 'all(.[] | select(.kind == "evict"); .victims | length > 0)' <<<"$st"
	jq_true 'all(.[] | select(.kind == "fallback"); .cond_scope == .scope)' <<<"$st"
	# no candidate appears twice
	jq_true '[.[].victims[].key] | length == (unique | length)' <<<"$st"
}

@test "evict-plan: assign by usage splits the target by each scope's bytes" {
	tenant_type_policy
	tenant_type_view
	# A holds 1600 of 2000 bytes, B 400: a target of 1000 is 800 and 200,
	# and A's 800 is 400 and 400 between its two types
	run -0 plan -p "$POLICY" --target 1000 <"$VIEW"
	local st
	st="$(stages <<<"$output")"
	jq_true '.[] | select(.scope == "tenant=A/type=hidden") | .target == 400' <<<"$st"
	jq_true '.[] | select(.scope == "tenant=A/type=kv") | .target == 400' <<<"$st"
	jq_true '.[] | select(.scope == "tenant=B") | .target == 200' <<<"$st"
	# each leaf reaches its target in its own least recently read order
	jq_true '.[] | select(.scope == "tenant=A/type=hidden") |
		[.victims[].key] == ["ah1", "ah2", "ah3", "ah4"]' <<<"$st"
	jq_true '.[] | select(.scope == "tenant=B") | [.victims[].key] == ["bk1", "bk2"]' <<<"$st"
}

@test "evict-plan: the global fallback takes from the tenant over its share first" {
	policy <<-'EOF'
		assign tenant by weight
		  scope A
		    evict lru
		  scope B
		    evict lru
		fallback
	EOF
	# equal weights; A holds 1200 bytes, B 400, and B's are the oldest
	local n
	for ((n = 1; n <= 12; n++)); do
		add "a$n" A kv 100 $((1000 + n))
	done
	for ((n = 1; n <= 4; n++)); do
		add "b$n" B kv 100 $((900000 + n))
	done
	run -0 plan -p "$POLICY" --target 400 <"$VIEW"
	local st
	st="$(stages <<<"$output")"
	assert_equal "$(jq -r '.[] | "\(.kind) \(.scope)"' <<<"$st" | paste -sd,)" \
		"evict tenant=A,evict tenant=B,fallback "
	# 200 bytes each by weight
	jq_true '.[] | select(.kind == "evict") | .target == 200' <<<"$st"
	# the global fallback reserve comes from A, far over its half, although
	# B's last two are older than anything of A's
	jq_true '.[] | select(.kind == "fallback") |
		(.victims | length > 0) and all(.victims[]; .tenant == "A")' <<<"$st"
	jq_true '.[] | select(.kind == "fallback") | .cond_scope == "" and .cond_lowerbound == 400' \
		<<<"$st"
}

@test "evict-plan: leased and soft-pinned candidates are not victims of the first pass" {
	add free1 A kv 100 5000
	add leased A kv 100 9000 60000
	add pinned A kv 100 8000 0 60000
	add both A kv 100 7000 60000 60000
	add free2 A kv 100 4000
	policy <<<"evict lru"
	run -0 plan -p "$POLICY" --target 100% <"$VIEW"
	assert_equal "$(victim_keys <<<"$output" | paste -sd,)" "free1,free2"
	# nothing is marked for the second pass without --soft-pinned-pass
	stages <<<"$output" | jq_true 'all(.[]; (.soft_pinned // false) == false)'
}

@test "evict-plan: --soft-pinned-pass adds a last stage over soft pins whose lease ran out" {
	add free1 A kv 100 5000
	add pin_late A kv 100 8000 0 90000
	add pin_soon A kv 100 9000 0 30000
	add leased_pin A kv 100 7000 60000 60000
	policy <<<"evict lru"
	run -0 plan -p "$POLICY" --target 100% --soft-pinned-pass <"$VIEW"
	local st
	st="$(stages <<<"$output")"
	jq_true '.[0].kind == "evict" and [.[0].victims[].key] == ["free1"]' <<<"$st"
	# soonest deadline first; a candidate still leased is never planned
	jq_true '.[-1].soft_pinned == true and .[-1].kind == "fallback" and
		.[-1].cond_scope == "" and [.[-1].victims[].key] == ["pin_soon", "pin_late"]' <<<"$st"
	jq_true '[.[].victims[].key] | index("leased_pin") == null' <<<"$st"
}

@test "evict-plan: --target as a percentage of the view's bytes" {
	add_many k A kv 10 100
	run -0 plan --target 20% <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.target == 200'
	# the first stage's (the built-in policy's fallback lists more, to run if short)
	assert_equal "$(stages <<<"$output" | jq '.[0].victims | length')" 2
	run -0 plan --target 12.5% <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.target == 125'
	run -0 plan --target 0% <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.target == 0'
	assert_equal "$(victim_keys <<<"$output" | wc -l)" 0
}

@test "evict-plan: --lowerbound in bytes, as a percentage of the target, or the policy's" {
	add_many k A kv 10 100
	run -0 plan --target 400 --lowerbound 100 <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.target == 400 and .lowerbound == 100'
	run -0 plan --target 400 --lowerbound 50% <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.lowerbound == 200'
	# without one, the root's lowerbound fraction from the policy
	policy <<-'EOF'
		lowerbound 80%
		evict lru
	EOF
	run -0 plan -p "$POLICY" --target 400 <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.lowerbound == 320'
	# and the default policy's is the whole target
	run -0 plan --target 400 <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.lowerbound == 400'
}

@test "evict-plan: msgpack and JSON views give the same plan, and -i reads a file" {
	tenant_type_policy
	tenant_type_view
	"$MP" pack <"$VIEW" >"$BATS_TEST_TMPDIR/view.mcc"
	plan -p "$POLICY" --target 1000 --soft-pinned-pass <"$VIEW" >"$BATS_TEST_TMPDIR/from-json"
	plan -p "$POLICY" --target 1000 --soft-pinned-pass <"$BATS_TEST_TMPDIR/view.mcc" \
		>"$BATS_TEST_TMPDIR/from-msgpack"
	cmp "$BATS_TEST_TMPDIR/from-json" "$BATS_TEST_TMPDIR/from-msgpack"
	plan -p "$POLICY" --target 1000 --soft-pinned-pass -i "$BATS_TEST_TMPDIR/view.mcc" \
		>"$BATS_TEST_TMPDIR/from-file" </dev/null
	cmp "$BATS_TEST_TMPDIR/from-json" "$BATS_TEST_TMPDIR/from-file"
	# JSON lines may start with blank lines
	{ printf '\n  \n'; cat "$VIEW"; } |
		plan -p "$POLICY" --target 1000 --soft-pinned-pass >"$BATS_TEST_TMPDIR/blank-first"
	cmp "$BATS_TEST_TMPDIR/from-json" "$BATS_TEST_TMPDIR/blank-first"
	# the msgpack plan holds the same records as the JSON one
	mc-evict-plan -p "$POLICY" --target 1000 --soft-pinned-pass <"$VIEW" |
		"$MP" unpack >"$BATS_TEST_TMPDIR/unpacked"
	diff <(jq -S -c . "$BATS_TEST_TMPDIR/from-json") \
		<(jq -S -c . "$BATS_TEST_TMPDIR/unpacked")
}

@test "evict-plan: runs as the master's --evict-planner command, msgpack in and out" {
	tenant_type_policy
	tenant_type_view
	"$MP" pack <"$VIEW" >"$BATS_TEST_TMPDIR/view.mcc"
	# the way mc-master(8) starts it, with SIGPIPE ignored as the master has it
	EP_POLICY="$POLICY" sh -c 'trap "" PIPE; mc-evict-plan -p "$EP_POLICY" "$@"' sh \
		--target 1000 --lowerbound 500 --soft-pinned-pass \
		<"$BATS_TEST_TMPDIR/view.mcc" >"$BATS_TEST_TMPDIR/plan.mcp"
	"$MP" unpack <"$BATS_TEST_TMPDIR/plan.mcp" >"$BATS_TEST_TMPDIR/unpacked"
	head -n 1 "$BATS_TEST_TMPDIR/unpacked" |
		jq_true '.format == "mc-plan" and .target == 1000 and .lowerbound == 500'
	plan -p "$POLICY" --target 1000 --lowerbound 500 --soft-pinned-pass <"$VIEW" |
		jq -S -c . >"$BATS_TEST_TMPDIR/json"
	diff "$BATS_TEST_TMPDIR/json" <(jq -S -c . "$BATS_TEST_TMPDIR/unpacked")
}

@test "evict-plan: --explain shows every scope with its usage, target and chosen bytes" {
	tenant_type_policy
	tenant_type_view
	run -0 mc-evict-plan -p "$POLICY" --target 1000 --explain <"$VIEW"
	for scope in tenant=A/type=hidden tenant=A/type=kv tenant=A tenant=B; do
		assert_output --partial "$scope"
	done
	assert_output --partial usage
	assert_output --partial target
	assert_output --partial chosen
	# text for people, not a plan
	refute_output --partial '"format"'
}

@test "evict-plan: --check loads the policy, reads no input and says ok" {
	tenant_type_policy
	run -0 timeout 10 mc-evict-plan -p "$POLICY" --check </dev/zero
	assert_output "$POLICY: ok"
	run -0 timeout 10 mc-evict-plan --check </dev/zero
	assert_output --partial ": ok"
}

# ---- errors ----

@test "evict-plan: a bad policy names its file and line, exit 65" {
	policy <<-'EOF'
		# a comment

		evict lruu
	EOF
	run -65 mc-evict-plan -p "$POLICY" --target 1 <"$VIEW"
	assert_output --regexp '^mc-evict-plan: .*test\.policy.*line 3'
	run -65 mc-evict-plan -p "$POLICY" --check
	assert_output --partial "line 3"
}

@test "evict-plan: a missing policy or input file is named, exit 1" {
	run -1 mc-evict-plan -p "$BATS_TEST_TMPDIR/nosuch.policy" --target 1 <"$VIEW"
	assert_output --partial "nosuch.policy"
	run -1 mc-evict-plan --target 1 -i "$BATS_TEST_TMPDIR/nosuch.view"
	assert_output --partial "cannot open '$BATS_TEST_TMPDIR/nosuch.view'"
}

@test "evict-plan: a bad view stream names the record, exit 65" {
	add k1 A kv 100 1000
	# the second candidate without its bytes
	cand k2 A kv 100 1000 | jq -c 'del(.bytes)' >>"$VIEW"
	run -65 mc-evict-plan --target 1 --json <"$VIEW"
	assert_output --regexp "^mc-evict-plan: bad candidate view on stdin: line 3: field 'bytes'"
	# the same stream in msgpack form counts records after the header
	"$MP" pack <"$VIEW" >"$BATS_TEST_TMPDIR/bad.mcc"
	run -65 mc-evict-plan --target 1 --json -i "$BATS_TEST_TMPDIR/bad.mcc"
	assert_output --regexp "^mc-evict-plan: bad candidate view in '.*bad\.mcc': record 2: field 'bytes'"
	# not a view at all
	run -65 mc-evict-plan --target 1 --json <<<'{"format":"mc-plan","version":1}'
	assert_output --partial "not an mc-candidates stream"
	run -65 mc-evict-plan --target 1 --json </dev/null
	assert_output --partial "bad candidate view on stdin"
}

@test "evict-plan: a bad flag names itself, exit 64" {
	run -64 mc-evict-plan --target 12XB <"$VIEW"
	assert_output --regexp "^mc-evict-plan: invalid --target '12XB': "
	run -64 mc-evict-plan --target 150% <"$VIEW"
	assert_output --regexp "^mc-evict-plan: invalid --target '150%': "
	run -64 mc-evict-plan --target 1GiB --lowerbound x% <"$VIEW"
	assert_output --regexp "^mc-evict-plan: invalid --lowerbound 'x%': "
	run -64 mc-evict-plan --target 1KiB --lowerbound 2KiB <"$VIEW"
	assert_output --regexp "^mc-evict-plan: invalid --lowerbound '2KiB': "
	run -64 mc-evict-plan --target 1 --no-such-flag <"$VIEW"
	assert_output --partial "no-such-flag"
	run -64 mc-evict-plan --target 1 stray <"$VIEW"
	assert_output --partial "unexpected argument 'stray'"
	run -64 mc-evict-plan --target 1 --json --explain <"$VIEW"
	assert_output --regexp "^mc-evict-plan: invalid --json: "
}

@test "evict-plan: --target is required, exit 64" {
	run -64 mc-evict-plan --json <"$VIEW"
	assert_output --regexp "^mc-evict-plan: missing --target"
}

@test "evict-plan: an empty view gives a plan without victims, exit 0" {
	run -0 plan --target 1GiB <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.format == "mc-plan" and .target == 1073741824'
	assert_equal "$(victim_keys <<<"$output" | wc -l)" 0
	tenant_type_policy
	run -0 plan -p "$POLICY" --target 50% --soft-pinned-pass <"$VIEW"
	head -n 1 <<<"$output" | jq_true '.target == 0'
	assert_equal "$(victim_keys <<<"$output" | wc -l)" 0
	# the msgpack form too
	"$MP" pack <"$VIEW" >"$BATS_TEST_TMPDIR/empty.mcc"
	run -0 plan --target 1GiB -i "$BATS_TEST_TMPDIR/empty.mcc"
	assert_equal "$(victim_keys <<<"$output" | wc -l)" 0
}

# first_bytes ARGS...: the plan's first 100 bytes go to a reader that then
# exits; the status is the filter's (timeout's 124 if it hung).
first_bytes() {
	set -o pipefail
	timeout 30 mc-evict-plan --target 100% "$@" <"$VIEW" | head -c 100 >/dev/null
}

@test "evict-plan: a reader that goes away stops the filter quietly" {
	# 50000 candidates: far more plan than a pipe holds
	awk 'BEGIN {
		for (n = 1; n <= 50000; n++)
			printf "{\"key\":\"key-%d\",\"version\":1,\"tenant\":\"A\",\"type\":\"kv\",\"peer\":\"peer-1\",\"tier\":\"dram\",\"bytes\":4096,\"created\":1,\"last_access\":%d,\"access_count\":1,\"lease_expiry\":0,\"soft_pin_deadline\":0}\n", n, n
	}' >>"$VIEW"
	run first_bytes --json
	# killed by SIGPIPE: it neither loops nor hangs, and says nothing
	assert_equal "$status" 141
	assert_output ""
	run first_bytes
	assert_equal "$status" 141
	assert_output ""
}

@test "evict-plan: refuses to write a msgpack plan to a terminal" {
	# script(1) is in bsdutils, which every Debian system has: a missing one fails
	command -v script >/dev/null || {
		echo "# script(1) is not installed (bsdutils)" >&2
		return 1
	}
	run script -qec "mc-evict-plan --target 1 -i '$VIEW'" /dev/null
	assert_failure
	assert_output --partial "refusing to write a plan to a terminal"
}
