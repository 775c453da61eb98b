#!/usr/bin/env bats
#
# mc-bench against a real cluster: its commands finish, count what they
# did, and replay drives the client's batch get and batch put paths.
#
# slow: about 12 s alone on two cores, over 30 s beside the trace
# replays: its sim cases run the simulator over generated traces and the
# given trace's first 6000 requests.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-bench
	mc_file_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h
	MC_PEER_DRAM=64MiB mc_start_peers 2
	# Three requests sharing the prefix block 0, and a fourth that
	# repeats the first exactly.
	cat >"$MC_DIR/trace.jsonl" <<-'EOF'
		{"timestamp": 0, "input_length": 2048, "output_length": 10, "hash_ids": [0, 1, 2, 3]}
		{"timestamp": 1, "input_length": 1536, "output_length": 10, "hash_ids": [0, 4, 5]}
		{"timestamp": 2, "input_length": 1024, "output_length": 10, "hash_ids": [0, 6]}
		{"timestamp": 3, "input_length": 2048, "output_length": 10, "hash_ids": [0, 1, 2, 3]}
	EOF
}

teardown_file() {
	mc_stop_everything
}

# field NAME: the value of NAME=... in $output.
field() {
	sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<"$output"
}

@test "bench: replay counts prefix hits and parks the missing blocks through batch calls" {
	run -0 mc-bench replay --prefix r1 --block-bytes 4KiB "$MC_DIR/trace.jsonl"
	assert_output --partial "replay requests=4 blocks=13"
	# block 0 hits from the second request on, and the fourth repeats the first
	[ "$(field prefix_hits)" = 6 ]
	[ "$(field prefix_hit_ratio)" = 0.4615 ]
	[ "$(field found)" = 6 ]
	[ "$(field puts)" = 7 ]
	[ "$(field put_failures)" = 0 ]
	# every parked block reads back at its size
	run -0 mc-cli stat r1-5 --json
	assert_output --partial '"size":4096'
}

@test "bench: a second replay of the same trace hits every block" {
	run -0 mc-bench replay --prefix r2 --block-bytes 1KiB "$MC_DIR/trace.jsonl"
	run -0 mc-bench replay --prefix r2 --block-bytes 1KiB "$MC_DIR/trace.jsonl"
	[ "$(field prefix_hits)" = 13 ]
	[ "$(field prefix_hit_ratio)" = 1.0000 ]
	[ "$(field puts)" = 0 ]
}

@test "bench: replay reads only the leading run found and writes only what the cache lacks" {
	# r4-1 exists, r4-0 does not: the request misses at once, so r4-1 is
	# neither read (no access) nor written again
	echo x | mc-cli put r4-1
	local before
	before="$(mc_stat_json r4-1 | jq -r '.access_count')"
	printf '{"timestamp": 0, "hash_ids": [0, 1, 2]}\n' >"$BATS_TEST_TMPDIR/gap.jsonl"
	run -0 mc-bench replay --prefix r4 --block-bytes 1KiB "$BATS_TEST_TMPDIR/gap.jsonl"
	[ "$(field prefix_hits)" = 0 ]
	[ "$(field found)" = 1 ]
	[ "$(field block_hit_ratio)" = 0.3333 ]
	[ "$(field puts)" = 2 ]
	[ "$(mc_stat_json r4-1 | jq -r '.access_count')" = "$before" ]
	# still the one-byte object, not rewritten as a block
	[ "$(mc_stat_json r4-1 | jq -r '.size')" = 2 ]
}

@test "bench: replay reports the master's rounds, evictions and occupancy" {
	run -0 mc-bench replay --prefix r5 --block-bytes 1KiB "$MC_DIR/trace.jsonl"
	for f in rounds evicted_bytes occupancy_min occupancy_mean put_retries requests_per_s \
		p50_us p90_us p99_us; do
		[ -n "$(field "$f")" ]
	done
}

@test "bench: replay --limit stops after that many requests" {
	run -0 mc-bench replay --prefix r3 --limit 2 --block-bytes 1KiB "$MC_DIR/trace.jsonl"
	assert_output --partial "replay requests=2 blocks=7"
}

@test "bench: a trace line without hash_ids exits 65 naming the line" {
	printf '{"timestamp": 0}\n' >"$BATS_TEST_TMPDIR/bad.jsonl"
	run -65 mc-bench replay "$BATS_TEST_TMPDIR/bad.jsonl"
	assert_output --partial "bad.jsonl:1: no hash_ids array"
}

@test "bench: get reads every request it was asked for, without failures" {
	run -0 mc-bench get --prefix g --size 64KiB --keys 8 --clients 2 --requests 50
	assert_output --partial "get clients=2 size=65536 ops=100 failures=0"
}

@test "bench: get whose objects do not fit fails naming the key, and frees what it held" {
	# under make test SANITIZE=1 a leak on this path is an exit status of its own
	run -1 mc-bench get --prefix gbig --size 100MiB --keys 1 --requests 1
	assert_output --partial "cannot put 'gbig-"
}

@test "bench: lookup answers whole batches over several connections" {
	run -0 mc-bench lookup --prefix lk --keys 500 --batch 16 --clients 3 --requests 20
	assert_output --partial "lookup clients=3 batch=16 ops=960 failures=0"
}

@test "bench: fill creates exactly --count objects" {
	run -0 mc-bench fill --prefix fl --count 300 --key-len 24 --size 4KiB
	assert_output --partial "fill count=300"
	run -0 mc-cli ls fl-
	[ "${#lines[@]}" -eq 300 ]
}

@test "bench: a bad flag value names the flag and exits 64" {
	run -64 mc-bench --clients 0 get
	assert_output --partial "--clients"
	run -64 mc-bench nosuch
	assert_output --partial "unknown command 'nosuch'"
}

@test "bench: fill past the cluster's capacity fails naming the key and the reason" {
	run -1 mc-bench fill --prefix full --count 300 --size 1MiB
	assert_output --regexp "put 'full-[0-9]+\.*': no_space"
}

@test "mc-bench sim --eviction-mode: local and master run on the same trace; a bad mode is refused" {
	local m l trace="$BATS_TEST_TMPDIR/conv.jsonl"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 16KiB --peers 2 \
		--eviction-mode master "$MC_DIR/trace.jsonl"
	jq -e '.results[0] | (.policy | endswith(":local") | not) and .evictions > 0' \
		<<<"$output" >/dev/null
	m="$(jq -c '.results[0] | del(.policy, .seconds)' <<<"$output")"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 16KiB --peers 2 \
		--eviction-mode local "$MC_DIR/trace.jsonl"
	jq -e '.results[0] | (.policy | endswith(":local")) and .prefix_hit_ratio > 0' \
		<<<"$output" >/dev/null
	# the repeated request finds its prefix either way: nothing here tells the views apart
	# (but the time each took)
	[ "$(jq -c '.results[0] | del(.policy, .seconds)' <<<"$output")" = "$m" ]
	# four peers of a real trace: the peers' own views rank otherwise than the master's
	mc_trace "$trace"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 2% --limit 2000 --peers 4 \
		--eviction-mode master "$trace"
	m="$(jq '.results[0].block_hit_ratio' <<<"$output")"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 2% --limit 2000 --peers 4 \
		--eviction-mode local "$trace"
	l="$(jq '.results[0].block_hit_ratio' <<<"$output")"
	[ "$l" != "$m" ]
	run -64 mc-bench sim --capacity 2 --eviction-mode ranked "$MC_DIR/trace.jsonl"
	assert_output --partial "eviction-mode"
	assert_output --partial "must be 'local' or 'master'"
	run -64 mc-bench sim --capacity 2 --peers 0 "$MC_DIR/trace.jsonl"
	assert_output --partial "invalid --peers '0'"
}

# sim_chat FILE: a generated chat trace of 5,000 requests, its tier at 20% holding more
# copies than a round's smallest window (MC_PLAN_WINDOW_MIN), so windows and the whole differ.
sim_chat() {
	[ -s "$1" ] || mc-bench gen chat --seed 1 --requests 5000 >"$1"
}

@test "mc-bench sim: the headroom band by default, the watermark band with --high/--low, named in text and --json" {
	local trace="$BATS_FILE_TMPDIR/chat.jsonl" head marks
	sim_chat "$trace"
	run -0 mc-bench sim --block-bytes 4KiB --capacity 20% "$trace"
	assert_output --partial ", band headroom,"
	[ "$(field band)" = headroom ]
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 20% "$trace"
	head="$output"
	jq -e '.band == "headroom" and (has("high") | not) and (has("low") | not)' <<<"$head"
	run -0 mc-bench sim --block-bytes 4KiB --capacity 20% --high 0.9 --low 0.7 "$trace"
	assert_output --partial ", band watermarks 0.90/0.70,"
	[ "$(field band)" = watermarks ]
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 20% --high 0.9 --low 0.7 "$trace"
	marks="$output"
	jq -e '.band == "watermarks" and .high == 0.9 and .low == 0.7' <<<"$marks"
	# a thin band keeps the tier fuller in many more, smaller rounds
	jq -n -e --argjson h "$head" --argjson m "$marks" \
		'$h.rounds > 4 * $m.rounds and $h.occupancy_mean > $m.occupancy_mean + 0.1'
	# one watermark alone pairs with the other's usual value
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 20% --high 0.95 "$trace"
	jq -e '.band == "watermarks" and .high == 0.95 and .low == 0.7' <<<"$output"
	run -64 mc-bench sim --capacity 20% --high 0.5 --low 0.7 "$trace"
	assert_output --partial "invalid --high/--low"
}

@test "mc-bench sim: mean and minimum occupancy from the first eviction, for the model and every reference" {
	local trace="$BATS_FILE_TMPDIR/chat.jsonl"
	sim_chat "$trace"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 20% "$trace"
	jq -e '.results | length == 8 and all(has("occupancy_mean") and has("occupancy_min") and
		.occupancy_min > 0 and .occupancy_min <= .occupancy_mean and .occupancy_mean <= 1)' \
		<<<"$output"
	jq -e '.occupancy_mean == .results[0].occupancy_mean and
		.occupancy_min == .results[0].occupancy_min' <<<"$output"
	# the headroom band keeps a slice free and frees one more, a slice being 1/64 of the
	# tier here, down to a whole block below that (and printed to four places)
	jq -e '.occupancy_min >= 1 - 2 / 64 - 4096 / .capacity_bytes - 0.0001 and
		.occupancy_mean < 1' <<<"$output"
	# on demand with whole blocks, textbook LRU stays exactly full once it filled
	jq -e '.results[] | select(.policy == "lru") | .occupancy_mean == 1 and .occupancy_min == 1' \
		<<<"$output"
	run -0 mc-bench sim --block-bytes 4KiB --capacity 20% --high 0.9 --low 0.7 "$trace"
	# watermarks: between the marks, the low one its minimum
	[ "$(field occupancy_min)" = 0.7000 ] ||
		awk -v m="$(field occupancy_min)" 'BEGIN { exit !(m >= 0.69 && m < 0.71) }'
	awk -v m="$(field occupancy_mean)" 'BEGIN { exit !(m > 0.7 && m < 0.9) }'
	# a tier that never filled has no occupancy to report
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 64MiB "$MC_DIR/trace.jsonl"
	jq -e 'all(.results[]; .evictions == 0 and .occupancy_mean == 0 and .occupancy_min == 0)' \
		<<<"$output"
}

@test "mc-bench sim: lru-leaf is among the references, and every reference evicts on demand" {
	local trace="$BATS_FILE_TMPDIR/chat.jsonl"
	sim_chat "$trace"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 20% "$trace"
	jq -e '[.results[1:][].policy] == ["lru", "fifo", "lfu", "lfu-restart", "s3fifo", "arc",
		"lru-leaf"]' <<<"$output"
	# one block per write at full capacity: as many rounds as evictions
	jq -e 'all(.results[] | select(.policy | IN("lru", "lru-leaf", "lfu", "arc"));
		.rounds == .evictions and .evictions > 0)' <<<"$output"
	# the tree counts: evicting only leaves is not LRU over blocks
	jq -e '(.results[] | select(.policy == "lru") | .prefix_hit_ratio) !=
		(.results[] | select(.policy == "lru-leaf") | .prefix_hit_ratio)' <<<"$output"
	run -0 mc-bench sim --block-bytes 4KiB --capacity 20% "$trace"
	assert_output --partial "references evict on demand at full capacity"
	assert_output --regexp $'\nlru-leaf +0\.[0-9]{4} '
}

@test "mc-bench sim --whole-view: rounds plan over every copy; by default over a window" {
	local trace="$BATS_FILE_TMPDIR/chat.jsonl" win whole
	sim_chat "$trace"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 20% "$trace"
	win="$output"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 20% --whole-view "$trace"
	whole="$output"
	jq -n -e --argjson w "$win" --argjson a "$whole" '$w.view == "windowed" and
		$a.view == "whole" and $w.rounds > 0 and $a.rounds > 0 and
		$w.viewed < $a.viewed / 2 and $a.regrown == 0'
	run -0 mc-bench sim --block-bytes 4KiB --capacity 20% --whole-view "$trace"
	assert_output --partial ", whole view;"
	[ "$(field view)" = whole ]
}

@test "mc-bench sim: a window plans as the whole view would, with the lowest by worth beside the coldest" {
	local trace="$BATS_TEST_TMPDIR/head.jsonl" win whole
	# the trace's first 6000 requests whatever MC_TEST_TRACE_REQUESTS says:
	# copies read lately whose worth is low are what the coldest miss
	zstd -dcq "$MC_ROOT/tests/cli/fixtures/traces/conversation_trace.jsonl.zst" | head -n 6000 >"$trace"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 2% "$trace"
	win="$output"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 2% --whole-view "$trace"
	whole="$output"
	echo "# window $(jq .prefix_hit_ratio <<<"$win"), whole $(jq .prefix_hit_ratio <<<"$whole")" >&3
	jq -n -e --argjson w "$win" --argjson a "$whole" \
		'$w.view == "windowed" and $a.view == "whole" and
		($w.prefix_hit_ratio - $a.prefix_hit_ratio | fabs) <= 0.003' >/dev/null
}

# ---- --json: every command, one record, the same fields as its line ----

# same_record: the JSON object in $json holds every key=value of the line
# in $line, value for value, and names its mode
same_record() {
	local mode="$1" k v
	jq -e --arg m "$mode" '.mode == $m' <<<"$json" >/dev/null
	[[ "$line" == "$mode "* ]]
	for kv in ${line#"$mode "}; do
		k="${kv%%=*}" v="${kv#*=}"
		# numbers compare as numbers (jq prints 0.5000 as 0.5), the rest as text
		jq -e --arg k "$k" --arg v "$v" \
			'has($k) and ((.[$k] | tostring) == $v or
			 ((.[$k] | type) == "number" and .[$k] == ($v | tonumber)))' \
			<<<"$json" >/dev/null || {
			echo "# $mode: field $k=$v is not in $json" >&2
			return 1
		}
	done
}

@test "bench: --json prints get's record as one JSON object" {
	run -0 mc-bench get --prefix gj --size 4KiB --keys 4 --clients 2 --requests 10
	local line="$output"
	run -0 mc-bench --json get --reuse --prefix gj --size 4KiB --keys 4 --clients 2 \
		--requests 10
	local json="$output"
	jq -e '.clients == 2 and .size == 4096 and .ops == 20 and .failures == 0 and
		(.p99_us | type == "number")' <<<"$json"
	# the fields that do not measure time are the line's
	line="$(sed -E 's/ (seconds|ops_per_s|gb_per_s|p50_us|p99_us|max_us|cpu_s|cpu_s_per_gb)=[^ ]*//g' \
		<<<"$line")"
	same_record get
	[ "$(jq -r 'keys | join(" ")' <<<"$json")" = \
		"clients cpu_s cpu_s_per_gb failures gb_per_s max_us mode ops ops_per_s p50_us p99_us seconds size" ]
}

@test "bench: --json prints lookup's record as one JSON object" {
	run -0 mc-bench lookup --json --prefix lkj --keys 50 --batch 8 --clients 1 --requests 5
	local json="$output"
	jq -e '.mode == "lookup" and .batch == 8 and .ops == 40 and .failures == 0' <<<"$json"
	[ "$(jq -r 'keys | join(" ")' <<<"$json")" = \
		"batch clients cpu_s cpu_s_per_gb failures gb_per_s max_us mode ops ops_per_s p50_us p99_us seconds" ]
}

@test "bench: --json prints fill's record as one JSON object" {
	run -0 mc-bench fill --json --prefix flj --count 20 --key-len 24 --size 1KiB
	local json="$output"
	jq -e '.mode == "fill" and .count == 20 and .key_len == 24 and
		(.seconds | type == "number") and (.objects_per_s | type == "number")' <<<"$json"
}

@test "bench: --json prints replay's record with every field of its line" {
	run -0 mc-bench replay --prefix rj1 --block-bytes 1KiB "$MC_DIR/trace.jsonl"
	local line="$output"
	run -0 mc-bench replay --json --prefix rj2 --block-bytes 1KiB "$MC_DIR/trace.jsonl"
	local json="$output"
	jq -e '.requests == 4 and .blocks == 13 and .put_failures == 0' <<<"$json"
	# the two runs wrote under other prefixes: drop what timing and the master's totals move
	line="$(sed -E 's/ (seconds|requests_per_s|p50_us|p90_us|p99_us|rounds|evicted_bytes|occupancy_min|occupancy_mean)=[^ ]*//g' \
		<<<"$line")"
	same_record replay
}

@test "bench: --json prints sim's record with its line's fields and every policy's results" {
	run -0 mc-bench sim --block-bytes 4KiB --capacity 16KiB "$MC_DIR/trace.jsonl"
	local line
	# the record, not the heading above the table
	line="$(grep '^sim [a-z_]*=' <<<"$output" | sed -E 's/ (model_)?seconds=[^ ]*//g')"
	run -0 mc-bench sim --json --block-bytes 4KiB --capacity 16KiB "$MC_DIR/trace.jsonl"
	local json="$output"
	same_record sim
	jq -e '(.results | length) > 5 and .results[0].policy == .policy and
		.capacity_bytes == 16384 and .block_bytes == 4096' <<<"$json"
}
