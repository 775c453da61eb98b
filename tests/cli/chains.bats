#!/usr/bin/env bats
#
# Prefix chains and the built-in kv policy (examples/policies/kv.policy):
# a put names its parent (--parent, or --chain by the key convention
# NAME#N), the master keeps each block's LRFU value and its ghosts, and
# the candidate view carries depth, children, orphan and probation, so
# the built-in planner and mc-evict-plan plan the same. Every test runs
# its own master with no --evict-policy: the default is what is tested.

load helpers

OBJ=100000

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-evict-plan
	mc_test_dir
	head -c "$OBJ" /dev/zero >"$BATS_TEST_TMPDIR/block"
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# put KEY [PUT ARGS...]: one KV block of OBJ bytes.
put() {
	local k="$1"
	shift
	mc-cli put --type kv "$@" "$k" "$BATS_TEST_TMPDIR/block"
}

# reads KEY N: read KEY N times.
reads() {
	local i
	for ((i = 0; i < $2; i++)); do
		mc-cli get "$1" >/dev/null || return 1
	done
}

# cand KEY: the candidate record of KEY as JSON.
cand() {
	mc-cli --json candidates | jq -c --arg k "$1" 'select(.key == $k)'
}

# victims PLAN: the keys a JSON plan names in its evict stages, in order.
victims() {
	jq -r 'select(.t == "stage" and .kind == "evict") | .victims[].key' "$1"
}

@test "chains: a put with --parent shows the chain in mc-cli candidates --json" {
	mc_start_master
	mc_start_peers 1
	put conv/a
	put conv/b --parent conv/a
	put conv/c --parent conv/b
	cand conv/a | jq_true '.children == 1 and (has("depth") | not) and (has("orphan") | not)'
	cand conv/b | jq_true '.depth == 1 and .children == 1'
	cand conv/c | jq_true '.depth == 2 and (has("children") | not) and .crf > 0'
	# a parent that is not cached: the block is an orphan, one deep
	put conv/x --parent conv/nowhere
	cand conv/x | jq_true '.orphan == 1 and .depth == 1'
}

@test "chains: --chain derives the parent by the key convention NAME#N" {
	mc_start_master
	mc_start_peers 1
	put 'doc#0' --chain
	put 'doc#1' --chain
	put 'doc#2' --chain
	cand 'doc#0' | jq_true '.children == 1'
	cand 'doc#2' | jq_true '.depth == 2'
	run mc-cli put --type kv --chain --parent 'doc#1' 'doc#3' "$BATS_TEST_TMPDIR/block"
	assert_failure 64
	assert_output --partial "--chain and --parent"
	run mc-cli put --type kv --parent self self "$BATS_TEST_TMPDIR/block"
	assert_failure
	assert_output --partial "cannot be its own parent"
	run mc-cli put --type kv --parent "$(printf 'k%.0s' {1..4097})" long "$BATS_TEST_TMPDIR/block"
	assert_failure
	assert_output --partial "key length 4097 out of range"
}

@test "chains: a chain whose head was evicted loses its orphaned tail first" {
	mc_start_master
	mc_start_peers 1
	put 'c#0' --chain
	put 'c#1' --chain
	put 'c#2' --chain
	put x1
	put x2
	put x3
	# the chain is read often, as prompts read it: head to tail
	local i
	for i in 1 2 3 4 5; do
		reads 'c#0' 1
		reads 'c#1' 1
		reads 'c#2' 1
	done
	reads x1 1
	reads x2 1
	reads x3 1
	mc-cli --json evict --target $((1 * OBJ)) --dry-run >"$BATS_TEST_TMPDIR/before.plan"
	[ "$(victims "$BATS_TEST_TMPDIR/before.plan" | head -n 1)" = x1 ]
	# the head is evicted: the plan of that round, with c#0 for its victim
	jq -c --argjson v "$(cand 'c#0' | jq -c '{tenant, key, version, peer, tier, bytes}')" \
		'if .t == "stage" then .victims = [$v] else . end' "$BATS_TEST_TMPDIR/before.plan" |
		head -n 2 | mc-cli evict --plan - >/dev/null
	run mc-cli exist 'c#0'
	assert_failure
	cand 'c#1' | jq_true '.orphan == 1'
	cand 'c#2' | jq_true '(has("orphan") | not)'
	# what hung from it is unreachable: gone first, before the blocks it outvalues
	mc-cli --json evict --target $((2 * OBJ)) --dry-run >"$BATS_TEST_TMPDIR/after.plan"
	[ "$(victims "$BATS_TEST_TMPDIR/after.plan" | head -n 1)" = 'c#1' ]
	mc-cli evict --target $((2 * OBJ)) >/dev/null
	run mc-cli exist 'c#1'
	assert_failure
	mc-cli exist x2
	mc-cli exist x3
}

@test "chains: a chain read as a whole gives up its tail before its head" {
	mc_start_master
	mc_start_peers 1
	put 'p#0' --chain
	put 'p#1' --chain
	put 'p#2' --chain
	# a prompt reads its prefix in order, so the tail is the most recent read
	local i
	for i in 1 2 3; do
		reads 'p#0' 1
		reads 'p#1' 1
		reads 'p#2' 1
	done
	mc-cli --json evict --target $((1 * OBJ)) --dry-run >"$BATS_TEST_TMPDIR/plan"
	[ "$(victims "$BATS_TEST_TMPDIR/plan" | head -n 1)" = 'p#2' ]
	cand 'p#2' | jq_true --argjson p "$(cand 'p#1' | jq .crf)" '.crf < $p'
}

@test "chains: new blocks past the probationary segment are evicted first, oldest first" {
	# a 1.1 MB tier: the segment is half of it, five blocks of 100 kB
	mc_start_master
	MC_PEER_DRAM=1100000 mc_start_peers 1
	put old
	reads old 1
	local n
	for n in 1 2 3 4 5 6 7; do
		put "new$n"
	done
	# the five newest compete; new1 and new2 are on probation
	cand new1 | jq_true '.probation == 1'
	cand new2 | jq_true '.probation == 1'
	for n in 3 4 5 6 7; do
		cand "new$n" | jq_true 'has("probation") | not'
	done
	cand old | jq_true 'has("probation") | not'
	mc-cli --json evict --target $((2 * OBJ)) --dry-run >"$BATS_TEST_TMPDIR/plan"
	[ "$(victims "$BATS_TEST_TMPDIR/plan" | head -n 2 | paste -sd,)" = new1,new2 ]
}

@test "chains: a key evicted and written again resumes its value from a ghost" {
	mc_start_master --http 127.0.0.1:0
	mc_start_peers 1
	local n
	# others, so the half-life (in accesses, per object cached) is not tiny
	for n in 1 2 3 4 5 6 7 8 9; do put "o$n"; done
	put g
	reads g 4
	local was
	was="$(cand g | jq .crf)"
	mc-cli rm g
	put g
	# its old value, a little decayed, plus the write: not a new block's 1
	cand g | jq_true --argjson was "$was" '.crf > 3 and .crf <= $was + 1 and .access_count == 0 and
		(has("probation") | not)'
	[ "$(mc_metric master mc_history_resumed)" = 1 ]
	[ "$(mc_metric master mc_history_evicted)" = 1 ]
	[ "$(mc_metric master mc_history_ghosts)" = 0 ]
}

@test "chains: mc-evict-plan and the built-in planner agree on a view with chains and ghost values" {
	MC_PEER_DRAM=2000000 mc_start_master
	MC_PEER_DRAM=2000000 mc_start_peers 1
	local n
	for n in 0 1 2 3; do put "a#$n" --chain; done
	for n in 0 1 2; do put "b#$n" --chain; done
	reads 'a#0' 2
	reads 'b#1' 3
	put ghost
	reads ghost 6
	mc-cli rm ghost
	put ghost
	mc-cli rm 'b#0'
	for n in 1 2 3 4 5 6 7 8; do put "n$n"; done
	mc-cli --json candidates >"$BATS_TEST_TMPDIR/view.jsonl"
	# the view carries what kv ranks by: a resumed value, an orphan, probation
	jq_any '.key == "ghost" and .crf > 5' <"$BATS_TEST_TMPDIR/view.jsonl"
	jq_any '.key == "b#1" and .orphan == 1' <"$BATS_TEST_TMPDIR/view.jsonl"
	jq_any '.probation == 1' <"$BATS_TEST_TMPDIR/view.jsonl"
	mc-cli --json evict --target $((6 * OBJ)) --dry-run >"$BATS_TEST_TMPDIR/builtin.jsonl"
	mc-cli candidates | mc-evict-plan --target $((6 * OBJ)) --json \
		>"$BATS_TEST_TMPDIR/pipeline.jsonl"
	diff <(jq -c 'select(.t != null)' "$BATS_TEST_TMPDIR/builtin.jsonl") \
		<(jq -c 'select(.t != null)' "$BATS_TEST_TMPDIR/pipeline.jsonl")
	[ "$(victims "$BATS_TEST_TMPDIR/builtin.jsonl" | wc -l)" -ge 6 ]
	head -n 1 "$BATS_TEST_TMPDIR/builtin.jsonl" | jq_true '.policy == "kv.policy"'
}

@test "chains: chains and values survive a snapshot restore" {
	mc_start_master --snapshot-dir "$MC_DIR/snap" --peer-ttl 1h
	mc_start_peers 1
	put 'r#0' --chain
	put 'r#1' --chain
	local i
	for i in 1 2 3; do
		reads 'r#0' 1
		reads 'r#1' 1
	done
	cand 'r#1' | jq -c 'del(.created, .last_access)' >"$BATS_TEST_TMPDIR/before"
	mc-snapshot save >/dev/null
	mc_kill9 master
	mc_start_master --snapshot-dir "$MC_DIR/snap" --peer-ttl 1h --restore latest
	wait_until 20 mc_live_peer_count_is 1
	wait_until 20 eval '[ -n "$(cand "r#1")" ]'
	cand 'r#1' | jq -c 'del(.created, .last_access)' >"$BATS_TEST_TMPDIR/after"
	diff "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	cand 'r#1' | jq_true '.depth == 1 and .crf > 2'
	cand 'r#0' | jq_true '.children == 1'
}

@test "chains: make install puts the shipped policies under share/mc/policies" {
	run -0 make -s -C "$BATS_TEST_DIRNAME/../.." install PREFIX=/usr \
		DESTDIR="$BATS_TEST_TMPDIR/root"
	cmp "$BATS_TEST_TMPDIR/root/usr/share/mc/policies/kv.policy" \
		"$BATS_TEST_DIRNAME/../../examples/policies/kv.policy"
}
