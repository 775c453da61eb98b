#!/usr/bin/env bats
#
# --json output read the way scripts read it, with jq (which holds every
# number as a double, exact only up to 2^53): each field of stat (key and
# cluster), ls, peers, candidates and mc-softpin is held against the text
# output of the same command, so that nothing is lost or rounded on the
# way. The master starts from a snapshot whose version counter is past
# 2^53, so the versions of the objects written here need all 64 bits.

load helpers

ISO_RE='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
# 2^53 + 1: the first integer a double cannot hold
BIG_VERSION=9007199254740993

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-softpin mc-snapgen
	mc_file_dir
	mc-snapgen --count 0 --next-version "$BIG_VERSION" -o "$BATS_FILE_TMPDIR/start.mcs"
	# peers outlive every clock move here
	mc_start_master --restore "$BATS_FILE_TMPDIR/start.mcs" --peer-ttl 1000h \
		--put-timeout 1000h
	mc_start_peers 1 --dram 64MiB
	# "hello" has a checksum past 2^53 (9555e8555c62dcfd)
	printf hello | mc-cli put hello
	printf 'soft pinned' | mc-cli put pinned --soft-pin enable:1h
}

teardown_file() {
	mc_stop_everything
}

# iso MS (in jq): the text output's ISO 8601 form of a time in ms
JQ_ISO='def iso: if . == 0 then "-" else
	((. / 1000 | floor | strftime("%Y-%m-%dT%H:%M:%S")) + "." +
	 ("00" + (. % 1000 | tostring))[-3:] + "Z") end;'

# text_field NAME: the value of "NAME: value" in $text
text_field() {
	sed -n "s/^$1: //p" <<<"$text"
}

# bytes_of SIZE: a size as mc prints it (5B, 4KiB, 1.5MiB) in bytes, and
# the rounding it allows (half a hundredth of its unit): "BYTES SLACK"
bytes_of() {
	awk -v s="$1" 'BEGIN {
		n = s; sub(/[A-Za-z]+$/, "", n); u = substr(s, length(n) + 1)
		m = u == "B" ? 1 : u == "KiB" ? 2^10 : u == "MiB" ? 2^20 : u == "GiB" ? 2^30 : -1
		if (m < 0) exit 1
		printf "%.0f %.0f\n", n * m, m / 200 + 0.5 }'
}

# size_matches EXACT TEXT: the exact byte count prints as TEXT
size_matches() {
	local got slack
	read -r got slack < <(bytes_of "$2") || return 1
	local d=$(($1 - got))
	[ "${d#-}" -le "$slack" ] || {
		echo "# $1 bytes shown as '$2'" >&2
		return 1
	}
}

@test "json: stat KEY gives every field the text shows, the checksum as its hex string" {
	run -0 mc-cli stat hello
	local text="$output"
	run -0 mc-cli --json stat hello
	local json="$output"
	# jq keeps strings whole: the checksum and the version past 2^53 are strings
	assert_equal "$(jq -r '.checksum | type' <<<"$json")" string
	assert_equal "$(jq -r '.checksum' <<<"$json")" "$(text_field checksum)"
	[[ "$(text_field checksum)" != 00[01]* ]] # past 2^53, or the test proves nothing
	assert_equal "$(text_field version)" "$BIG_VERSION"
	assert_equal "$(jq -r '.version' <<<"$json")" "$BIG_VERSION"
	assert_equal "$(jq -r '.replicas[0].version' <<<"$json")" "$BIG_VERSION"
	local f
	for f in key tenant type access_count; do
		assert_equal "$(jq -r ".$f" <<<"$json")" "$(text_field "$f")"
	done
	assert_equal "$(jq -r '"\(.size) (5B)"' <<<"$json")" "$(text_field size)"
	assert_equal "$(jq -r '.group // "-"' <<<"$json")" "$(text_field group)"
	assert_equal "$(jq -r 'if .hard_pin then "yes" else "no" end' <<<"$json")" \
		"$(text_field hard_pin)"
	for f in created last_access lease_deadline; do
		assert_equal "$(jq -r "$JQ_ISO .$f | iso" <<<"$json")" "$(text_field "$f")"
	done
	[[ "$(text_field created)" =~ ^$ISO_RE$ ]]
	assert_equal "$(jq -r '.replicas | length' <<<"$json")" "$(text_field replicas)"
	assert_equal "$(jq -r '.replicas[] | "  peer \(.peer_id) \(.addr) \(.tier) \(.state)"' \
		<<<"$json")" "$(grep '^  peer ' <<<"$text")"
}

@test "json: cluster stat gives exact bytes and ms under names with the unit, text human sizes" {
	run -0 mc-cli stat
	local text="$output"
	# text: for people; no bare byte counts
	assert_line --regexp '^uptime: [0-9.]+(ms|s|m|h|d)$'
	assert_line --regexp '^  - tier=dram used=[0-9.]+(B|KiB|MiB) capacity=64MiB$'
	refute_output --partial 67108864
	run -0 mc-cli --json stat
	local json="$output"
	local f
	for f in objects peers evict_rounds evicted_objects version; do
		assert_equal "$(jq -r ".$f" <<<"$json")" "$(text_field "$f")"
	done
	size_matches "$(jq -r '.bytes' <<<"$json")" "$(text_field bytes)"
	size_matches "$(jq -r '.evicted_bytes' <<<"$json")" "$(text_field evicted)"
	assert_equal "$(jq -r '.tiers[0].capacity_bytes' <<<"$json")" 67108864
	size_matches "$(jq -r '.tiers[0].used_bytes' <<<"$json")" \
		"$(sed -n 's/^  - tier=dram used=\([^ ]*\) .*/\1/p' <<<"$text")"
	# uptime was read first in the text, then in JSON
	local shown slack
	shown="$(text_field uptime)"
	[[ "$shown" =~ ^([0-9.]+)(ms|s)$ ]]
	local ms
	ms="$(awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[2]}" \
		'BEGIN { printf "%.0f", u == "s" ? n * 1000 : n }')"
	[ "$(jq -r '.uptime_ms' <<<"$json")" -ge $((ms - 10)) ]
	# every tenant line, field by field
	assert_equal "$(jq -r '.tenants[] | "\(.tenant) \(.objects)"' <<<"$json")" \
		"$(sed -n 's/^  - tenant=\([^ ]*\) objects=\([0-9]*\) .*/\1 \2/p' <<<"$text")"
	local line t b
	while read -r t b; do
		size_matches "$(jq -r --arg t "$t" '.tenants[] | select(.tenant == $t) | .bytes' \
			<<<"$json")" "$b"
	done < <(sed -n 's/^  - tenant=\([^ ]*\) .* bytes=\([^ ]*\)$/\1 \2/p' <<<"$text")
}

@test "json: ls lists the text's keys with the versions past 2^53 exact" {
	run -0 mc-cli ls
	local text="$output"
	run -0 mc-cli --json ls
	assert_equal "$(jq -r '.key' <<<"$output")" "$text"
	assert_equal "$(jq -r 'select(.key == "hello") | .version' <<<"$output")" "$BIG_VERSION"
	assert_equal "$(jq -r 'select(.key == "hello") | .size' <<<"$output")" 5
}

@test "json: peers gives each column of the table" {
	run -0 mc-cli peers
	local text="$output"
	run -0 mc-cli --json peers
	local json="$output" id addr host domain cell used cap rep
	# the columns are set apart by two blanks or more
	id="$(awk -F'  +' 'NR == 2 { print $1 }' <<<"$text")"
	addr="$(awk -F'  +' 'NR == 2 { print $2 }' <<<"$text")"
	host="$(awk -F'  +' 'NR == 2 { print $3 }' <<<"$text")"
	domain="$(awk -F'  +' 'NR == 2 { print $4 }' <<<"$text")"
	cell="$(awk -F'  +' 'NR == 2 { print $NF }' <<<"$text")"
	assert_equal "$(jq -r '.peer_id' <<<"$json")" "$id"
	assert_equal "$(jq -r '.addr' <<<"$json")" "$addr"
	assert_equal "$(jq -r '.host' <<<"$json")" "$host"
	assert_equal "$(jq -r '.domain' <<<"$json")" "$domain"
	[[ "$cell" =~ ^([^/]+)/([^ ]+)\ \(peer:\ ([^\)]+)\)$ ]]
	used="${BASH_REMATCH[1]}" cap="${BASH_REMATCH[2]}" rep="${BASH_REMATCH[3]}"
	size_matches "$(jq -r '.tiers[0].used' <<<"$json")" "$used"
	size_matches "$(jq -r '.tiers[0].capacity' <<<"$json")" "$cap"
	size_matches "$(jq -r '.tiers[0].reported' <<<"$json")" "$rep"
}

@test "json: candidates carry the stat text's fields, the version past 2^53 exact" {
	run -0 mc-cli stat hello
	local text="$output"
	run -0 mc-cli --json candidates
	local rec
	rec="$(jq -c 'select(.key == "hello")' <<<"$output")"
	assert_equal "$(jq -r '.version' <<<"$rec")" "$(text_field version)"
	assert_equal "$(jq -r '.tenant' <<<"$rec")" "$(text_field tenant)"
	assert_equal "$(jq -r '.type' <<<"$rec")" "$(text_field type)"
	assert_equal "$(jq -r '"\(.bytes) (5B)"' <<<"$rec")" "$(text_field size)"
	assert_equal "$(jq -r '.access_count' <<<"$rec")" "$(text_field access_count)"
	assert_equal "$(jq -r "$JQ_ISO .created | iso" <<<"$rec")" "$(text_field created)"
	assert_equal "$(jq -r "$JQ_ISO .last_access | iso" <<<"$rec")" \
		"$(text_field last_access)"
	assert_equal "$(jq -r '"  peer \(.peer) \(.tier)"' <<<"$rec")" \
		"$(grep '^  peer ' <<<"$text" | awk '{ print "  peer " $3 " " $4 }')"
}

@test "json: a candidate view with versions past 2^53 plans the same through JSON" {
	mc_require_bins mc-evict-plan
	mc-cli --json candidates >"$BATS_TEST_TMPDIR/view.jsonl"
	mc-cli candidates >"$BATS_TEST_TMPDIR/view.mp"
	run -0 mc-evict-plan --json --target 1 -i "$BATS_TEST_TMPDIR/view.jsonl"
	local from_json="$output"
	run -0 mc-evict-plan --json --target 1 -i "$BATS_TEST_TMPDIR/view.mp"
	assert_equal "$(jq -c 'del(.created)' <<<"$from_json")" "$(jq -c 'del(.created)' <<<"$output")"
	assert_equal "$(jq -r 'select(.t == "stage") | .victims[] | select(.key == "hello") |
		.version' <<<"$from_json")" "$BIG_VERSION"
}

@test "json: mc-softpin show, ls and stats give the text's fields" {
	run -0 mc-softpin show pinned
	local text="$output"
	run -0 mc-softpin --json show pinned
	local json="$output" deadline
	assert_equal "$(jq -r '.state' <<<"$json")" "$(text_field state)"
	assert_equal "$(jq -r '.key' <<<"$json")" "$(text_field key)"
	assert_equal "$(jq -r '.tenant' <<<"$json")" "$(text_field tenant)"
	deadline="$(jq -r '.deadline' <<<"$json")"
	assert_equal "$(jq -r "$JQ_ISO .deadline | \"\(iso) (\(.))\"" <<<"$json")" \
		"$(text_field deadline)"
	assert_equal "$(jq -r '.remaining_ms' <<<"$json")" \
		"$(text_field remaining | sed 's/.*(\([0-9]*\) ms)$/\1/')"

	run -0 mc-softpin ls
	text="$output"
	run -0 mc-softpin --json ls
	assert_equal "$(jq -r "$JQ_ISO \"\(.deadline | iso) \(.tenant) \(.key)\"" <<<"$output")" \
		"$(awk '{ print $1, $3, $4 }' <<<"$text")"

	run -0 mc-softpin stats
	text="$output"
	run -0 mc-softpin --json stats
	local f json_stats="$output" before after
	for f in active heap live rebuilds expired; do
		assert_equal "$(jq -r ".$f" <<<"$output")" "$(text_field "$f")"
	done
	# every sweep of the master's timer counts a cleanup run, so between
	# two calls it may move: the JSON's lies between the texts around it
	before="$(text_field cleanup_runs)"
	run -0 mc-softpin stats
	text="$output"
	after="$(text_field cleanup_runs)"
	output="$json_stats"
	(($(jq -r '.cleanup_runs' <<<"$output") >= before))
	(($(jq -r '.cleanup_runs' <<<"$output") <= after))
	assert_equal "$(jq -r '.default_ttl_ms' <<<"$output")" \
		"$(text_field default_ttl | sed 's/.*(\([0-9]*\) ms)$/\1/')"
}
