#!/usr/bin/env bats
#
# Eviction in the master (hierarchical eviction seed): plans executed with revalidation, the
# built-in planner against the mc-evict-plan pipeline, fallbacks driven by
# actual evictions, the safety boundaries fallback never relaxes, and the
# triggers (high watermark, a put with no space, a put over quota).
#
# Every test runs its own master (on the fake clock) and peers, since
# eviction changes what they hold. Objects come from mc-fill, all 4 KiB
# so byte counts are exact: key PREFIX + six digits.
#
# The peers leave DRAM to the master's rounds (eviction mode master):
# these are the rounds' tests; peers that evict for themselves are
# local-evict.bats's and selfevict.bats's.
#
# slow: about 11 s alone on two cores, up to 45 s beside the trace
# replays and under ASan: 24 tests, each filling its own cluster past
# a watermark before the round it checks.

load helpers

# The puts here cross the watermarks while the fake clock stands still,
# and what is checked is the eviction ahead of need that follows: their
# copies are old the moment they commit (--young 0), as before young
# copies were kept (tests/cli/young.bats checks --young itself).
export MC_YOUNG=0

export MC_EVICTION_MODE=master

OBJ=4096
POLICIES="$BATS_TEST_DIRNAME/../../examples/policies"

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-evict-plan mc-fill
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# fill TENANT PREFIX N [MC-FILL PUT ARGS...]: N objects of 4 KiB.
fill() {
	local tenant="$1" prefix="$2" n="$3"
	shift 3
	mc-fill -t "$tenant" --prefix "$prefix" --count "$n" --min-size "$OBJ" --max-size "$OBJ" \
		"$@" put >/dev/null
}

# key PREFIX I: mc-fill's key number I.
key() {
	printf '%s%06d' "$1" "$2"
}

# policy NAME TEXT: write a policy file, print its path.
policy() {
	printf '%s\n' "$2" >"$BATS_TEST_TMPDIR/$1.policy"
	echo "$BATS_TEST_TMPDIR/$1.policy"
}

# present TENANT KEY
present() {
	mc-cli -t "$1" exist "$2"
}

# count_present TENANT PREFIX N: how many of mc-fill's N keys remain.
count_present() {
	local n=0 k
	for ((k = 0; k < $3; k++)); do
		if mc-cli -t "$1" exist "$(key "$2" "$k")" 2>/dev/null; then
			n=$((n + 1))
		fi
	done
	echo "$n"
}

# report_stage FILE ID: stage record ID of a JSON-lines report.
report_stage() {
	jq -c --argjson id "$2" 'select(.t == "stage" and .id == $id)' "$1"
}

# dram_used: what the master counts on the peers' DRAM, in bytes.
dram_used() {
	mc-cli --json peers | jq '[.. | objects | select(has("peer_id")) | .tiers[]? |
		select(.tier == "dram") | .used] | add'
}

# peer_reports BYTES: the peer's own heartbeat says it holds BYTES of DRAM.
peer_reports() {
	[ "$(mc-cli --json peers | jq '[.. | objects | select(has("peer_id")) | .tiers[]? |
		select(.tier == "dram") | .reported] | add')" -eq "$1" ]
}

evicted_down_to() {
	advance_clock 2000
	[ "$(dram_used)" -le "$1" ]
}

# Type-split tenant A with a tenant fallback, everything else by lru,
# and a global fallback; lowerbounds equal to targets.
TENANT_TYPE='lowerbound 100%
assign tenant by weight
  scope A
    assign type by usage
      scope kv
        evict lru
      scope hidden
        evict lru
    fallback
  scope *
    evict lru
fallback'

@test "evict --target: the built-in planner's round frees the target and peers drop the copies" {
	mc_start_master --evict-policy "$(policy p "$TENANT_TYPE")"
	mc_start_peers 1
	fill A a/ 20 --type kv
	run mc-cli --json evict --target $((5 * OBJ))
	assert_success
	# a report: stage records with actual bytes, nothing failed
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_bytes] | add' <<<"$output")" -eq $((5 * OBJ)) ]
	[ "$(jq -s '[.[] | select(.t == "stage") | .failures | length] | add' <<<"$output")" -eq 0 ]
	[ "$(count_present A a/ 20)" -eq 15 ]
	# the master no longer counts them on the peer, and the peer freed them
	[ "$(dram_used)" -eq $((15 * OBJ)) ]
	wait_until 5 peer_reports $((15 * OBJ))
}

@test "evict --target --dry-run answers the plan and evicts nothing" {
	mc_start_master --evict-policy "$(policy p "$TENANT_TYPE")"
	mc_start_peers 1
	fill A a/ 10 --type kv
	run mc-cli --json evict --target $((3 * OBJ)) --dry-run
	assert_success
	[ "$(jq -s '[.[] | select(.t == "stage") | .victims | length] | add' <<<"$output")" -ge 3 ]
	[ "$(count_present A a/ 10)" -eq 10 ]
}

@test "the pipeline candidates | mc-evict-plan | evict --plan - evicts what the plan says" {
	local pol
	pol="$(policy p "$TENANT_TYPE")"
	mc_start_master
	mc_start_peers 2
	fill A a/ 10 --type kv
	fill B b/ 10 --type kv
	run bash -c "mc-cli candidates | mc-evict-plan -p '$pol' --target $((6 * OBJ)) | mc-cli --json evict --plan -"
	assert_success
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_objects] | add' <<<"$output")" -eq 6 ]
	[ $(($(count_present A a/ 10) + $(count_present B b/ 10))) -eq 14 ]
}

@test "the built-in planner and the pipeline give identical plans for the same state and policy" {
	local pol
	pol="$(policy p "$TENANT_TYPE")"
	mc_start_master --evict-policy "$pol"
	mc_start_peers 2
	fill A a/ 12 --type kv
	fill A h/ 6 --type hidden
	fill B b/ 9 --type kv
	mc_hold_lease "$(key a/ 3)" A 2>/dev/null || true
	mc-cli --json evict --target $((10 * OBJ)) --lowerbound $((8 * OBJ)) --dry-run \
		>"$BATS_TEST_TMPDIR/builtin.jsonl"
	mc-cli candidates | mc-evict-plan -p "$pol" --target $((10 * OBJ)) \
		--lowerbound $((8 * OBJ)) --json >"$BATS_TEST_TMPDIR/pipeline.jsonl"
	# the same stages and victims (headers differ only in the policy label)
	diff <(jq -c 'select(.t != null)' "$BATS_TEST_TMPDIR/builtin.jsonl") \
		<(jq -c 'select(.t != null)' "$BATS_TEST_TMPDIR/pipeline.jsonl")
	[ "$(jq -s '[.[] | select(.t == "stage")] | length' "$BATS_TEST_TMPDIR/builtin.jsonl")" -ge 3 ]
}

@test "the built-in planner and the pipeline give identical results on identical clusters" {
	local pol
	pol="$(policy p "$TENANT_TYPE")"
	# cluster one: the built-in planner
	mc_use_dir "$BATS_TEST_TMPDIR/one"
	mc_start_master --evict-policy "$pol"
	mc_start_peer peer1 --host-id h1
	fill A a/ 10 --type kv
	fill B b/ 10 --type kv
	mc-cli --json evict --target $((7 * OBJ)) >"$BATS_TEST_TMPDIR/one.jsonl"
	mc_stop_all
	# cluster two, built the same way: the pipeline
	mc_use_dir "$BATS_TEST_TMPDIR/two"
	mc_start_master
	mc_start_peer peer1 --host-id h1
	fill A a/ 10 --type kv
	fill B b/ 10 --type kv
	mc-cli candidates | mc-evict-plan -p "$pol" --target $((7 * OBJ)) |
		mc-cli --json evict --plan - >"$BATS_TEST_TMPDIR/two.jsonl"
	# peer addresses differ by directory: compare without them
	diff <(jq -c 'select(.t == "stage") | del(.failures)' "$BATS_TEST_TMPDIR/one.jsonl") \
		<(jq -c 'select(.t == "stage") | del(.failures)' "$BATS_TEST_TMPDIR/two.jsonl")
	# 3.5 objects' worth from each tenant: 4 each, whole objects
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_bytes] | add' "$BATS_TEST_TMPDIR/one.jsonl")" -eq $((8 * OBJ)) ]
}

@test "victims that fail revalidation lead to a fallback for exactly the shortfall" {
	local pol
	pol="$(policy p "$TENANT_TYPE")"
	mc_start_master --lease-ttl 1h
	mc_start_peers 1
	fill A k/ 10 --type kv
	fill A h/ 10 --type hidden
	# 8 objects: 4 kv + 4 hidden, then a tenant fallback reserve, then global
	mc-cli candidates | mc-evict-plan -p "$pol" --target $((8 * OBJ)) --json \
		>"$BATS_TEST_TMPDIR/plan.jsonl"
	run report_stage "$BATS_TEST_TMPDIR/plan.jsonl" 1
	assert_output --partial '"scope":"tenant=A/type=kv"'
	# between plan and execution, two kv victims get read (their lease renews)
	for k in $(jq -r 'select(.t == "stage" and .id == 1) | .victims[0:2][] | .key' \
		"$BATS_TEST_TMPDIR/plan.jsonl"); do
		mc_hold_lease "$k" A
	done
	mc-cli --json evict --plan "$BATS_TEST_TMPDIR/plan.jsonl" >"$BATS_TEST_TMPDIR/report.jsonl"
	run report_stage "$BATS_TEST_TMPDIR/report.jsonl" 1
	[ "$(jq '.evicted_objects' <<<"$output")" -eq 2 ]
	[ "$(jq '[.failures[] | select(.reason == "lease renewed")] | length' <<<"$output")" -eq 2 ]
	# the tenant fallback ran for the two objects missing, and no more
	local fb
	fb="$(jq -c 'select(.t == "stage" and .kind == "fallback" and .scope == "tenant=A")' \
		"$BATS_TEST_TMPDIR/report.jsonl")"
	[ "$(jq '.ran' <<<"$fb")" = true ]
	[ "$(jq '.evicted_objects' <<<"$fb")" -eq 2 ]
	# the global fallback's condition was met: it did not run
	fb="$(jq -c 'select(.t == "stage" and .kind == "fallback" and .scope == "")' \
		"$BATS_TEST_TMPDIR/report.jsonl")"
	[ "$(jq '.ran' <<<"$fb")" = false ]
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_bytes] | add' \
		"$BATS_TEST_TMPDIR/report.jsonl")" -eq $((8 * OBJ)) ]
}

@test "the tenant fallback runs before the global one and stays in its tenant" {
	local pol
	pol="$(policy p "$TENANT_TYPE")"
	mc_start_master --lease-ttl 1h
	mc_start_peers 1
	fill A k/ 4 --type kv
	fill A h/ 8 --type hidden
	fill B b/ 10 --type kv
	mc-cli candidates | mc-evict-plan -p "$pol" --target $((8 * OBJ)) --json \
		>"$BATS_TEST_TMPDIR/plan.jsonl"
	# every kv victim of A fails: A falls short and covers it inside A
	for k in $(jq -r 'select(.t == "stage" and .scope == "tenant=A/type=kv") | .victims[].key' \
		"$BATS_TEST_TMPDIR/plan.jsonl"); do
		mc_hold_lease "$k" A
	done
	mc-cli --json evict --plan "$BATS_TEST_TMPDIR/plan.jsonl" >"$BATS_TEST_TMPDIR/report.jsonl"
	local ids
	ids="$(jq -r 'select(.t == "stage" and .kind == "fallback") | "\(.scope)=\(.ran)"' \
		"$BATS_TEST_TMPDIR/report.jsonl" | paste -sd' ')"
	[ "$ids" = "tenant=A=true =false" ]
	# B lost nothing beyond its own stage
	local bst
	bst="$(jq -c 'select(.t == "stage" and .scope == "tenant=B")' "$BATS_TEST_TMPDIR/report.jsonl")"
	[ "$(count_present B b/ 10)" -eq $((10 - $(jq '.evicted_objects' <<<"$bst"))) ]
}

# plan_for TENANT KEY [STAGE FIELDS]: a one-victim plan (JSON lines) for the
# current version of KEY's first copy.
plan_for() {
	local st
	st="$(mc-cli -t "$1" --json stat "$2" | jq -c '.. | objects | select(has("replicas") and has("version"))')"
	jq -nc '{format: "mc-plan", version: 1, created: 1, target: 4096, lowerbound: 0}'
	jq -nc --arg t "$1" --arg k "$2" --argjson st "$st" --argjson extra "${3:-{\}}" \
		'{t: "stage", id: 1, scope: "", kind: "evict", target: 4096, lowerbound: 0,
		  victims: [{tenant: $t, key: $k, version: $st.version, peer: $st.replicas[0].addr,
			     tier: $st.replicas[0].tier, bytes: $st.size}]} + $extra'
}

# A fallback stage whose condition is unmet: fallback relaxes scopes, not safety.
FALLBACK='{"kind":"fallback","cond_scope":"","cond_lowerbound":4096}'

# evict_one_fails TENANT KEY REASON [STAGE FIELDS]
evict_one_fails() {
	plan_for "$1" "$2" "${4:-}" >"$BATS_TEST_TMPDIR/one.jsonl"
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/one.jsonl"
	assert_success
	[ "$(jq -r 'select(.t == "stage") | .failures[0].reason' <<<"$output")" = "$3" ]
	present "$1" "$2"
}

@test "safety: hard pins, leases and versions are revalidated" {
	mc_start_master --lease-ttl 1h
	mc_start_peers 1
	echo x | mc-cli put pinned --hard-pin
	echo x | mc-cli put leased
	echo x | mc-cli put upserted
	evict_one_fails default pinned pinned
	evict_one_fails default pinned pinned "$FALLBACK"
	mc_hold_lease leased
	evict_one_fails default leased "lease renewed"
	evict_one_fails default leased "lease renewed" "$FALLBACK"
	plan_for default upserted >"$BATS_TEST_TMPDIR/old.jsonl"
	echo y | mc-cli put upserted --upsert
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/old.jsonl"
	assert_success
	[ "$(jq -r 'select(.t == "stage") | .failures[0].reason' <<<"$output")" = "version changed" ]
	# a victim already gone, and one evicted twice in the same plan
	echo x | mc-cli put twice
	plan_for default twice >"$BATS_TEST_TMPDIR/twice.jsonl"
	jq -c 'if .t == "stage" then .victims += .victims else . end' \
		"$BATS_TEST_TMPDIR/twice.jsonl" >"$BATS_TEST_TMPDIR/dup.jsonl"
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/dup.jsonl"
	[ "$(jq -r 'select(.t == "stage") | .failures[0].reason' <<<"$output")" = "already evicted" ]
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/twice.jsonl"
	[ "$(jq -r 'select(.t == "stage") | .failures[0].reason' <<<"$output")" = "gone" ]
}

@test "safety: an active soft pin holds unless the second pass is allowed" {
	mc_start_master
	mc_start_peers 1
	echo x | mc-cli put soft --soft-pin enable:1h
	evict_one_fails default soft pinned
	# a fallback stage does not relax it either
	evict_one_fails default soft pinned "$FALLBACK"
	# the soft-pinned pass without --allow-evict-soft-pinned: still held
	evict_one_fails default soft pinned '{"kind":"fallback","cond_scope":"","cond_lowerbound":4096,"soft_pinned":true}'
	mc_stop_all
	mc_test_dir
	mc_use_dir "$BATS_TEST_TMPDIR/allowed"
	mc_start_master --allow-evict-soft-pinned
	mc_start_peers 1
	echo x | mc-cli put soft --soft-pin enable:1h
	evict_one_fails default soft pinned
	plan_for default soft '{"kind":"fallback","cond_scope":"","cond_lowerbound":4096,"soft_pinned":true}' \
		>"$BATS_TEST_TMPDIR/second.jsonl"
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/second.jsonl"
	assert_success
	[ "$(jq 'select(.t == "stage") | .evicted_objects' <<<"$output")" -eq 1 ]
	run present default soft
	assert_failure
}

@test "safety: groups go all or none" {
	mc_start_master --lease-ttl 1h
	mc_start_peers 2
	echo 1 | mc-cli put g1 --group grp
	echo 2 | mc-cli put g2 --group grp --replicas 2
	# a read leases every member; a member that joins later has no lease
	mc_hold_lease g1
	echo 3 | mc-cli put g3 --group grp
	evict_one_fails default g1 "lease renewed"
	evict_one_fails default g3 "group member leased"
	evict_one_fails default g3 "group member leased" "$FALLBACK"
	present default g2
	mc_stop_all
	mc_use_dir "$BATS_TEST_TMPDIR/free"
	mc_start_master
	mc_start_peers 2
	echo 1 | mc-cli put g1 --group grp
	echo 2 | mc-cli put g2 --group grp --replicas 2
	echo 3 | mc-cli put g3 --group grp
	echo 4 | mc-cli put alone
	plan_for default g1 >"$BATS_TEST_TMPDIR/g.jsonl"
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/g.jsonl"
	assert_success
	# the whole group: 3 members, 4 copies
	[ "$(jq 'select(.t == "stage") | .evicted_objects' <<<"$output")" -eq 4 ]
	for k in g1 g2 g3; do
		run present default "$k"
		assert_failure
	done
	present default alone
}

@test "safety: an object being written is busy" {
	mc_start_master --put-timeout 1h
	mc_start_peers 1
	echo x | mc-cli put inflight
	plan_for default inflight >"$BATS_TEST_TMPDIR/busy.jsonl"
	# an upsert started and not finished
	mc-rpc "$MC_MASTER" put_start key=inflight size:=2 checksum:=1 upsert:=true >/dev/null
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/busy.jsonl"
	assert_success
	[ "$(jq -r 'select(.t == "stage") | .failures[0].reason' <<<"$output")" = "replica busy" ]
	present default inflight
	jq -c --argjson f "$FALLBACK" 'if .t == "stage" then . + $f else . end' \
		"$BATS_TEST_TMPDIR/busy.jsonl" >"$BATS_TEST_TMPDIR/busy-fb.jsonl"
	run mc-cli --json evict --plan "$BATS_TEST_TMPDIR/busy-fb.jsonl"
	[ "$(jq -r 'select(.t == "stage") | .failures[0].reason' <<<"$output")" = "replica busy" ]
	present default inflight
}

@test "a tier above the high watermark is brought down to the low one" {
	MC_PEER_DRAM=400KiB
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 0.5 --evict-low-watermark 0.25
	mc_start_peers 1
	# 60 of 100 pages: above 0.5, so the sweep starts a round down to 25
	fill A w/ 60 --type kv
	# the commit that took it over starts the round
	wait_until 10 evicted_down_to $((25 * OBJ))
	[ "$(count_present A w/ 60)" -eq $(($(dram_used) / OBJ)) ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="watermark"}')" -ge 1 ]
	[ "$(mc_metric master 'mc_evicted_objects_total{kind="evict",trigger="watermark"}')" -ge 35 ]
}

@test "a put into a full tier waits for its round and succeeds" {
	MC_PEER_DRAM=40KiB
	# a high watermark of 1: no watermark round, only the put's own
	# a wait long enough for the round on a loaded machine (the default is 50 ms)
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 1 --evict-low-watermark 0.5 \
		--log-level debug --put-wait 10s
	mc_start_peers 1
	fill A n/ 10 --type kv
	# the master's own answer: placed once the round made room
	run -0 mc-rpc --tenant A "$MC_MASTER" put_start key=big size:=$((3 * OBJ)) checksum:=1
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_put_waits_total{outcome="placed"}')" -eq 1 ]
	# down to the low mark with the waiting put placed: 40 + 12 - 20 KiB went
	grep -q "eviction round 1 (no_space, peer 1 dram): .*usage_at_start=40960 low=20480 waiting=12288 target=32768" \
		"$MC_DIR/master.log"
	[ "$(count_present A n/ 10)" -eq 2 ]
	# a copy larger than any peer waits for nothing and starts no round
	head -c $((50 * OBJ)) /dev/zero >"$BATS_TEST_TMPDIR/huge"
	run -1 mc-cli -t A put huge "$BATS_TEST_TMPDIR/huge"
	assert_output --partial "is larger than any tier"
	refute_output --partial "waited"
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 1 ]
}

@test "with --put-wait 0 a put into a full tier fails at once; its round still runs" {
	MC_PEER_DRAM=40KiB
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 1 --evict-low-watermark 0.5 \
		--put-wait 0
	mc_start_peers 1
	fill A n/ 10 --type kv
	# the master's own answer, without the client's one retry
	run -1 mc-rpc --tenant A "$MC_MASTER" put_start key=big size:=$((3 * OBJ)) checksum:=1
	assert_output --partial "no_space"
	refute_output --partial "waited"
	[ "$(mc_metric master 'mc_put_waits_total{outcome="placed"}')" -eq 0 ]
	head -c $((3 * OBJ)) /dev/zero >"$BATS_TEST_TMPDIR/big"
	wait_until 10 mc-cli -t A put big "$BATS_TEST_TMPDIR/big"
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -ge 1 ]
	[ "$(count_present A n/ 10)" -le 7 ]
}

@test "the client asks once more, after a pause, when a put is refused for no space" {
	MC_PEER_DRAM=40KiB
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 1 --put-wait 0 --lease-ttl 1h
	mc_start_peers 1
	fill A n/ 10 --type kv
	# every copy held by a reader: the tier stays full
	local k
	for ((k = 0; k < 10; k++)); do
		mc_hold_lease "$(key n/ "$k")" A
	done
	head -c $((3 * OBJ)) /dev/zero >"$BATS_TEST_TMPDIR/big"
	local before
	before="$(mc_metric master 'mc_requests_total{method="put_start"}')"
	run -1 mc-cli -t A put big "$BATS_TEST_TMPDIR/big"
	assert_output --partial "no space"
	[ "$(mc_metric master 'mc_requests_total{method="put_start"}')" -eq $((before + 2)) ]
	# a copy no tier could hold is refused for good: no second ask
	head -c $((50 * OBJ)) /dev/zero >"$BATS_TEST_TMPDIR/huge"
	before="$(mc_metric master 'mc_requests_total{method="put_start"}')"
	run -1 mc-cli -t A put huge "$BATS_TEST_TMPDIR/huge"
	assert_output --partial "larger than any tier"
	[ "$(mc_metric master 'mc_requests_total{method="put_start"}')" -eq $((before + 1)) ]
}

@test "a put whose round frees nothing fails naming its wait; the next fails at once" {
	MC_PEER_DRAM=40KiB
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 1 --evict-low-watermark 0.5 \
		--put-wait 200ms --lease-ttl 1h
	mc_start_peers 1
	fill A n/ 10 --type kv
	# every copy held by a reader: no round can free anything
	local k
	for ((k = 0; k < 10; k++)); do
		mc_hold_lease "$(key n/ "$k")" A
	done
	# the master's answer: it waited for the round, which freed nothing
	run -1 mc-rpc --tenant A "$MC_MASTER" put_start key=big size:=$((3 * OBJ)) checksum:=1
	assert_output --partial "no_space"
	assert_output --regexp "waited [0-9]+ ms for eviction"
	[ "$(mc_metric master 'mc_put_waits_total{outcome="failed"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 1 ]
	# its scope rests: the next put starts no round and does not wait
	run -1 mc-rpc --tenant A "$MC_MASTER" put_start key=big2 size:=$((3 * OBJ)) checksum:=1
	assert_output --partial "no_space"
	refute_output --partial "waited"
	[ "$(mc_metric master 'mc_put_waits_total{outcome="failed"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 1 ]
	# once its rest is over (on the fake clock) a put starts a round again
	advance_clock 100
	run -1 mc-rpc --tenant A "$MC_MASTER" put_start key=big3 size:=$((3 * OBJ)) checksum:=1
	assert_output --regexp "waited [0-9]+ ms for eviction"
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="no_space"}')" -eq 2 ]
	[ "$(count_present A n/ 10)" -eq 10 ]
}

@test "puts pipelined behind a waiting put are answered in order" {
	MC_PEER_DRAM=40KiB
	mc_start_master --http 127.0.0.1:0 --evict-high-watermark 1 --evict-low-watermark 0.5 \
		--put-wait 10s
	mc_start_peers 1
	fill A n/ 10 --type kv
	# mc-fill pipelines its puts: the first waits, the rest queue behind it
	fill A p/ 4 --type kv
	[ "$(count_present A p/ 4)" -eq 4 ]
	[ "$(mc_metric master 'mc_put_waits_total{outcome="placed"}')" -ge 1 ]
}

@test "a put over its tenant's quota waits for a round inside that tenant" {
	# ten objects: 4 KiB each, charged with its 8-byte key and 256 bytes of overhead
	printf 'A 43600\n' >"$BATS_TEST_TMPDIR/quotas"
	mc_start_master --http 127.0.0.1:0 --quota-file "$BATS_TEST_TMPDIR/quotas" \
		--evict-low-watermark 0.5 --put-wait 10s
	mc_start_peers 1
	fill A q/ 10 --type kv
	fill B q/ 10 --type kv
	mc-cli -t A put over <<<"x"
	[ "$(count_present B q/ 10)" -eq 10 ]
	[ "$(count_present A q/ 10)" -le 5 ]
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="quota"}')" -eq 1 ]
	# stat shows the quota
	mc-cli -t A --json stat | jq -e '.. | objects | select(.quota_bytes? == 43600)' >/dev/null
	# an object larger than the whole quota is refused at once, without a round
	head -c $((11 * OBJ)) /dev/zero >"$BATS_TEST_TMPDIR/huge"
	run mc-cli -t A put huge "$BATS_TEST_TMPDIR/huge"
	assert_failure
	assert_output --partial "more than tenant 'A''s whole quota"
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="quota"}')" -eq 1 ]
	[ "$(count_present A q/ 10)" -ge 1 ]
}

@test "with --put-wait 0 a put over quota fails at once and its round runs" {
	# ten objects: 4 KiB each, charged with its 8-byte key and 256 bytes of overhead
	printf 'A 43600\n' >"$BATS_TEST_TMPDIR/quotas"
	mc_start_master --http 127.0.0.1:0 --quota-file "$BATS_TEST_TMPDIR/quotas" \
		--evict-low-watermark 0.5 --put-wait 0
	mc_start_peers 1
	fill A q/ 10 --type kv
	run mc-cli -t A put over <<<"x"
	assert_failure
	assert_output --partial "over its quota"
	wait_until 10 bash -c "mc-cli -t A put over <<<x"
	[ "$(count_present A q/ 10)" -le 5 ]
}

@test "an external planner plans the rounds; a failing or slow one falls back to the built-in" {
	local pol
	pol="$(policy p "$TENANT_TYPE")"
	mc_start_master --http 127.0.0.1:0 --evict-policy "$pol" \
		--evict-planner "mc-evict-plan -p '$pol'"
	mc_start_peers 1
	fill A a/ 10 --type kv
	mc-cli --json evict --target $((4 * OBJ)) --dry-run >"$BATS_TEST_TMPDIR/ext.jsonl"
	[ "$(mc_metric master mc_evict_planner_failures_total)" -eq 0 ]
	mc_stop_all
	mc_use_dir "$BATS_TEST_TMPDIR/bad"
	mc_start_master --http 127.0.0.1:0 --evict-policy "$pol" --evict-planner "false"
	mc_start_peers 1
	fill A a/ 10 --type kv
	run mc-cli --json evict --target $((4 * OBJ))
	assert_success
	[ "$(jq -s '[.[] | select(.t == "stage") | .evicted_objects] | add' <<<"$output")" -eq 4 ]
	[ "$(mc_metric master mc_evict_planner_failures_total)" -eq 1 ]
	grep -q "exited with status 1" "$MC_DIR/master.log"
	mc_stop_all
	mc_use_dir "$BATS_TEST_TMPDIR/slow"
	mc_start_master --http 127.0.0.1:0 --evict-planner "sleep 30 #" --evict-planner-timeout 300ms
	mc_start_peers 1
	fill A a/ 10 --type kv
	run mc-cli --json evict --target $((4 * OBJ))
	assert_success
	[ "$(mc_metric master mc_evict_planner_failures_total)" -eq 1 ]
	grep -q "timed out" "$MC_DIR/master.log"
}

@test "SIGHUP reloads the policy; a broken one keeps the old" {
	local pol="$BATS_TEST_TMPDIR/live.policy"
	echo 'evict lru' >"$pol"
	mc_start_master --evict-policy "$pol"
	echo 'evict nosuch' >"$pol"
	kill -HUP "$(mc_pid master)"
	wait_until 5 grep -q "kept the old eviction policy" "$MC_DIR/master.log"
	grep -q "line 1" "$MC_DIR/master.log"
	echo 'evict fifo' >"$pol"
	kill -HUP "$(mc_pid master)"
	wait_until 5 grep -q "eviction policy 'live.policy' loaded" "$MC_DIR/master.log"
	mc_alive "$(mc_pid master)"
}

@test "bad plans close nothing: a malformed evict_plan is refused and the master serves on" {
	mc_start_master
	mc_start_peers 1
	head -c 300 /dev/urandom >"$BATS_TEST_TMPDIR/junk"
	run mc-rpc --bulk "$BATS_TEST_TMPDIR/junk" "$MC_MASTER" evict_plan
	assert_failure
	run mc-rpc "$MC_MASTER" evict_run
	assert_failure
	assert_output --partial "target"
	run mc-rpc "$MC_MASTER" evict_run target:=10 tier=tape
	assert_failure
	assert_output --partial "unknown tier"
	echo x | mc-cli put still
	present default still
}

@test "a bad eviction flag or policy stops the master at start, naming it" {
	run mc-master --evict-high-watermark 0.5 --evict-low-watermark 0.6
	[ "$status" -eq 64 ]
	assert_output --partial "watermark"
	echo 'assign color by weight' >"$BATS_TEST_TMPDIR/bad.policy"
	run mc-master --listen "unix:$MC_DIR/m.sock" --evict-policy "$BATS_TEST_TMPDIR/bad.policy"
	[ "$status" -eq 65 ]
	assert_output --partial "bad.policy: line 1"
	printf 'A lots\n' >"$BATS_TEST_TMPDIR/q"
	run mc-master --listen "unix:$MC_DIR/m.sock" --quota-file "$BATS_TEST_TMPDIR/q"
	[ "$status" -eq 65 ]
	assert_output --partial "line 1"
}

@test "eviction metrics: bytes by kind and trigger, failures by reason, fallbacks by level" {
	local pol
	pol="$(policy p "$TENANT_TYPE")"
	mc_start_master --http 127.0.0.1:0 --lease-ttl 1h --evict-policy "$pol"
	mc_start_peers 1
	fill A k/ 4 --type kv
	fill A h/ 4 --type hidden
	# a round of the master's own: 2 kv + 2 hidden, no fallback needed
	mc-cli evict --target $((4 * OBJ)) --lowerbound $((4 * OBJ)) >/dev/null
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="manual"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evicted_bytes_total{kind="evict",trigger="manual"}')" -eq $((4 * OBJ)) ]
	mc_scrape master | grep -q '^mc_evict_plan_seconds_count 1'
	mc_scrape master | grep -q '^mc_evict_exec_seconds_count 1'
	# a plan whose first kv victim gets read: the tenant fallback covers it
	mc-cli candidates | mc-evict-plan -p "$pol" --target $((2 * OBJ)) --json \
		>"$BATS_TEST_TMPDIR/plan.jsonl"
	mc_hold_lease "$(jq -r 'select(.t == "stage" and .id == 1) | .victims[0].key' \
		"$BATS_TEST_TMPDIR/plan.jsonl")" A
	mc-cli evict --plan "$BATS_TEST_TMPDIR/plan.jsonl" >/dev/null
	[ "$(mc_metric master 'mc_evict_rounds_total{trigger="plan"}')" -eq 1 ]
	mc_scrape master | grep -q '^mc_evict_failures_total{reason="lease renewed"} 1$'
	[ "$(mc_metric master 'mc_evict_fallbacks_total{level="1"}')" -eq 1 ]
	[ "$(mc_metric master 'mc_evicted_objects_total{kind="fallback",trigger="plan"}')" -eq 1 ]
}
