#!/usr/bin/env bats
#
# mc-bench gen: synthetic traces of five workload families, in the form
# replay and sim read, the same for the same seed, with ids that name
# prefixes, and each family shaped as mc-bench(1) says.

load helpers

setup_file() {
	mc_require_bins mc-bench
}

# check FILE PYTHON: run PYTHON with the trace's requests in reqs (a list
# of dicts); it prints "ok" when its condition holds.
check() {
	local file=$1
	shift
	run /usr/bin/python3 -c "
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
$1" "$file"
	echo "$output"
	assert_success
	assert_output ok
}

@test "gen: every family writes --requests lines of well-formed trace, each block a full 512 tokens but the last" {
	local f
	for f in chat agent zipf scan phase; do
		run -0 mc-bench gen "$f" --requests 500
		[ "$(wc -l <<<"$output")" -eq 500 ]
		printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/$f"
		check "$BATS_TEST_TMPDIR/$f" '
ok = len(reqs) == 500
last = 0
for r in reqs:
    n = len(r["hash_ids"])
    ok = ok and n > 0 and (n - 1) * 512 < r["input_length"] <= n * 512
    ok = ok and r["output_length"] > 0 and r["timestamp"] >= last
    last = r["timestamp"]
print("ok" if ok else "bad")'
	done
}

@test "gen: the same seed gives the same trace, another seed another" {
	mc-bench gen chat -n 300 --seed 7 >"$BATS_TEST_TMPDIR/a"
	mc-bench gen chat -n 300 --seed 7 >"$BATS_TEST_TMPDIR/b"
	mc-bench gen chat -n 300 --seed 8 >"$BATS_TEST_TMPDIR/c"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	! cmp -s "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/c"
}

@test "gen: an id names a prefix: it always follows the same id, at the same depth" {
	local f
	for f in chat agent scan; do
		mc-bench gen "$f" -n 2000 >"$BATS_TEST_TMPDIR/$f"
		check "$BATS_TEST_TMPDIR/$f" '
before, shared = {}, 0
ok = True
for r in reqs:
    prev = None
    for depth, i in enumerate(r["hash_ids"]):
        if i in before:
            shared += 1
            ok = ok and before[i] == (prev, depth)
        before[i] = (prev, depth)
        prev = i
print("ok" if ok and shared > 0 else "bad %d" % shared)'
	done
}

@test "gen chat: a turn resends its whole conversation so far, so prefixes grow" {
	mc-bench gen chat -n 3000 >"$BATS_TEST_TMPDIR/t"
	check "$BATS_TEST_TMPDIR/t" '
seen, grown = set(), 0
for r in reqs:
    ids = r["hash_ids"]
    # an earlier whole request (longer than a system prompt) is a prefix of this one
    if any(tuple(ids[:k]) in seen for k in range(7, len(ids))):
        grown += 1
    seen.add(tuple(ids))
print("ok" if grown > len(reqs) / 2 else "bad %d" % grown)'
}

@test "gen agent: every task runs under one of three long system prompts" {
	mc-bench gen agent -n 3000 >"$BATS_TEST_TMPDIR/t"
	check "$BATS_TEST_TMPDIR/t" '
heads = {tuple(r["hash_ids"][:12]) for r in reqs}
print("ok" if len(heads) <= 3 and all(len(r["hash_ids"]) >= 13 for r in reqs) else "bad %d" % len(heads))'
}

@test "gen zipf: documents of Zipf popularity: the top one is asked for far more than the median" {
	mc-bench gen zipf -n 5000 >"$BATS_TEST_TMPDIR/t"
	check "$BATS_TEST_TMPDIR/t" '
from collections import Counter
docs = Counter(r["hash_ids"][1] for r in reqs)
counts = sorted(docs.values(), reverse=True)
print("ok" if counts[0] >= 20 * counts[len(counts) // 2] and len(docs) < len(reqs) / 2 else "bad %s" % counts[:3])'
}

@test "gen scan: about a fifth of the requests are long documents read once" {
	mc-bench gen scan -n 5000 >"$BATS_TEST_TMPDIR/t"
	check "$BATS_TEST_TMPDIR/t" '
from collections import Counter
uses = Counter(i for r in reqs for i in r["hash_ids"][1:-1])
once = sum(1 for r in reqs if len(r["hash_ids"]) >= 34 and all(uses[i] == 1 for i in r["hash_ids"][1:-1]))
print("ok" if 0.15 * len(reqs) < once < 0.25 * len(reqs) else "bad %d" % once)'
}

@test "gen phase: the second half asks for documents the first half never did" {
	mc-bench gen phase -n 4000 >"$BATS_TEST_TMPDIR/t"
	check "$BATS_TEST_TMPDIR/t" '
half = len(reqs) // 2
first = {i for r in reqs[:half] for i in r["hash_ids"][1:]}
second = {i for r in reqs[half:] for i in r["hash_ids"][1:]}
reuse_first = len(first) < sum(len(r["hash_ids"]) - 1 for r in reqs[:half]) / 2
print("ok" if reuse_first and len(first & second) == 0 else "bad %d" % len(first & second))'
}

@test "gen: sim reads what gen writes, from a pipe" {
	run -0 bash -c 'mc-bench gen zipf -n 2000 | mc-bench sim --capacity 0.05 -'
	assert_line --regexp '^sim policy=.* prefix_hit_ratio=0\.[0-9]+ '
}

@test "gen: an unknown family exits 64 naming it and the families; none is a usage error" {
	run -64 mc-bench gen sessions
	assert_output --partial "unknown trace family 'sessions': one of chat agent zipf scan phase"
	run -64 mc-bench gen
}
