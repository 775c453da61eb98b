#!/usr/bin/env bats
#
# Snapshots whose checksums are good but whose contents are hostile.
# mc-snapgen --hostile writes each one through the libmc writer, so the
# file verifies and only the master's checks of what the records say
# stand between it and the store. A refused file stops `--restore FILE`
# with status 65 and one line naming what was wrong, and leaves a running
# master as it was.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-snapshot mc-snapgen mc-fill
}

setup() {
	mc_test_dir
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# refused CASE REGEX [MASTER ARGS...]: the file of CASE passes verify, and
# a master asked to start from it exits 65 with exactly one line, which
# names the file and matches REGEX.
refused() {
	local c="$1" why="$2" f="$BATS_TEST_TMPDIR/$1.mcs"
	shift 2
	mc-snapgen --count 12 --hostile "$c" -o "$f"
	run -0 mc-snapshot verify "$f"
	run -65 timeout 10 mc-master --listen "unix:$MC_DIR/refused.sock" --log-level warn \
		--restore "$f" "$@"
	assert_equal "${#lines[@]}" 1
	assert_output --regexp "^mc-master: cannot restore '$f': $why\$"
}

@test "hostile snapshot: every case mc-snapgen can write is tried here" {
	local c
	for c in $(mc-snapgen --hostile list | awk '{ print $1 }'); do
		grep -q "refused $c " "$BATS_TEST_FILENAME" || {
			echo "# no test refuses --hostile $c" >&2
			return 1
		}
	done
}

@test "hostile snapshot: the same file without the fault restores" {
	mc-snapgen --count 12 -o "$BATS_TEST_TMPDIR/good.mcs"
	mc_start_master --restore "$BATS_TEST_TMPDIR/good.mcs" --max-tenants 8 \
		--max-types-per-tenant 4
	mc-cli --json stat | jq -e '.objects == 12'
}

# ---- counters that could not advance ----

@test "hostile snapshot: a file without a meta record is refused" {
	refused no-meta 'no meta record'
}

@test "hostile snapshot: a second meta record is refused" {
	refused two-metas 'meta record listed twice'
}

@test "hostile snapshot: next_version 2^64-1 is refused: the next put would wrap to version 1" {
	refused next-version-max 'meta record: next_version 18446744073709551615 leaves no version to write'
}

@test "hostile snapshot: next_version not above an object's version is refused" {
	refused next-version-behind 'meta record: next_version 12 is not above version 12, which the file holds'
}

@test "hostile snapshot: a replica version beyond the last one a put hands out is refused" {
	refused replica-version-max 'object record: replica version 18446744073709551615 out of range'
}

@test "hostile snapshot: next_replica_id past 32 bits is refused" {
	refused next-replica-id-max 'meta record: next_replica_id 4294967297 beyond the replica ids'
}

@test "hostile snapshot: next_peer_id past 32 bits is refused" {
	refused next-peer-id-max 'meta record: next_peer_id 4294967296 beyond the peer ids'
}

@test "hostile snapshot: an access counter at its maximum is refused" {
	refused access-seq-max 'meta record: access_seq at its maximum'
}

@test "hostile snapshot: an object's access sequence at its maximum is refused" {
	refused seq-max 'object record: access sequence at its maximum'
}

# ---- duplicates ----

@test "hostile snapshot: two tenant records of one name are refused" {
	refused dup-tenant-name "tenant 't1' listed twice"
}

@test "hostile snapshot: two tenant records of one id are refused" {
	refused dup-tenant-id 'tenant id 1 listed twice'
}

@test "hostile snapshot: two peer records of one id are refused" {
	refused dup-peer-id 'peer 1 listed twice'
}

@test "hostile snapshot: two objects of one key are refused" {
	refused dup-key 'object record: key listed twice'
}

@test "hostile snapshot: one object's two replicas of one id are refused" {
	refused dup-replica-id 'replica id 1 listed twice'
}

@test "hostile snapshot: replicas of two objects with one id are refused" {
	refused dup-replica-id-across 'replica id 1 listed twice'
}

# ---- sizes and limits ----

@test "hostile snapshot: an object of 2^64-1 bytes is refused" {
	refused huge-size 'object record: size 18446744073709551615 over the largest object \(1099511627776\)'
}

@test "hostile snapshot: an object of version 0 is refused" {
	refused version-zero 'object record: version 0 out of range'
}

@test "hostile snapshot: an object of version 2^64-1 is refused" {
	refused version-max 'object record: version 18446744073709551615 out of range'
}

@test "hostile snapshot: a key over the key limit is refused" {
	refused long-key 'object record: key of 4097 bytes over 4096'
}

@test "hostile snapshot: more tenants than --max-tenants are refused" {
	refused many-tenants 'tenant record: too many tenants \(8\): see --max-tenants' \
		--max-tenants 8
}

@test "hostile snapshot: one tenant's types beyond --max-types-per-tenant are refused" {
	refused many-types "object record: tenant 't1' has 4 data types already: see --max-types-per-tenant" \
		--max-types-per-tenant 4
}

@test "snapshot: the default type does not count against --max-types-per-tenant, as objects adopted from peers take it uncounted" {
	mc-snapgen --count 40 --general-every 2 -o "$BATS_TEST_TMPDIR/general.mcs"
	mc_start_master --restore "$BATS_TEST_TMPDIR/general.mcs" --max-types-per-tenant 2
	mc-cli --json stat | jq -e '.objects == 40'
}

@test "hostile snapshot: more peer records than the master could have known are refused" {
	refused many-peers 'more than 2048 peer records'
}

@test "snapshot: leases and soft pins a file makes last for ever are cut to what the master could grant from now" {
	local now
	now="$(clock_now)"
	mc-snapgen --count 12 --created "$now" --far-deadlines -o "$BATS_TEST_TMPDIR/far.mcs"
	mc_start_master --restore "$BATS_TEST_TMPDIR/far.mcs" --reconcile-timeout 1h \
		--lease-ttl 10s --max-soft-pin-ttl 1h
	local i t rec active=0
	for i in $(seq -f %08g 0 11); do
		# mc-snapgen spreads its objects over three tenants
		for t in default t1 t2; do
			rec="$(MC_TENANT=$t mc_stat_json "obj/$i" 2>/dev/null)" && break
		done
		jq -e --argjson l $((now + 10000)) '.lease_deadline == $l' <<<"$rec"
		if [ "$(jq -r .soft_pin <<<"$rec")" = active ]; then
			jq -e --argjson d $((now + 3600000)) '.soft_pin_deadline == $d' <<<"$rec"
			active=$((active + 1))
		fi
	done
	[ "$active" -gt 0 ]
}

# ---- references to nothing ----

@test "hostile snapshot: an object of a tenant without a tenant record is refused" {
	refused unlisted-tenant "object record: tenant 't9' has no tenant record"
}

@test "hostile snapshot: a replica on a peer the file does not list is refused" {
	refused unknown-peer 'object record: replica on peer 9, which the file does not list'
}

@test "hostile snapshot: a replica on a tier that does not exist is refused" {
	refused unknown-tier "object record: unknown tier 'tape'"
}

@test "hostile snapshot: a replica of id 0 is refused" {
	refused replica-id-zero 'object record: replica id 0 out of range'
}

# ---- header counts ----

@test "hostile snapshot: a header counting more objects than the records hold is refused" {
	refused header-objects 'header says 13 objects, the records hold 12'
}

@test "hostile snapshot: a header counting more peers than the records hold is refused" {
	refused header-peers 'header says 3 peers, the records hold 2'
}

@test "hostile snapshot: a header counting more tenants than the records hold is refused" {
	refused header-tenants 'header says 4 tenants, the records hold 3'
}

@test "hostile snapshot: a header counting more bytes than the records hold is refused" {
	refused header-bytes 'header says [0-9]+ bytes, the records hold [0-9]+'
}

# ---- a running master ----

@test "hostile snapshot: restore --force of a refused file leaves the running master as it was" {
	mc_start_master --max-tenants 8
	mc_start_peers 1
	mc-fill --prefix kept/ -n 20 put
	local before f="$BATS_TEST_TMPDIR/many.mcs"
	before="$(mc-cli --json stat | jq -S -c '{objects, bytes, tenants}')"
	mc-snapgen --count 12 --hostile many-tenants -o "$f"
	run -65 mc-snapshot restore --force "$f"
	assert_output --partial 'too many tenants (8)'
	assert_equal "$(mc-cli --json stat | jq -S -c '{objects, bytes, tenants}')" "$before"
	mc-fill --prefix kept/ -n 20 check
}

# ---- the version counter ----

# version_of KEY: KEY's version (past 2^53 --json gives it as a decimal
# string, which jq keeps whole).
version_of() {
	mc-cli --json stat "$1" | jq -r '.version'
}

@test "put: the version after the last one fails cleanly instead of wrapping, and the snapshot of that master restores" {
	local f="$BATS_TEST_TMPDIR/late.mcs" snaps="$MC_DIR/snap"
	# the last version a put hands out is 2^64-3; this file's counter is there
	mc-snapgen --count 12 --next-version 18446744073709551613 -o "$f"
	mc_start_master --restore "$f" --snapshot-dir "$snaps" --reconcile-timeout 1h
	mc_start_peers 1
	echo last | mc-cli put last
	assert_equal "$(version_of last)" 18446744073709551613
	run -1 mc-cli put one-more <<<"x"
	assert_output --partial 'no version left to write'
	mc_key_gone one-more
	mc-cli get last | grep -qx last

	run -0 mc-snapshot save
	mc_kill9 master
	mc_start_master --restore latest --snapshot-dir "$snaps" --reconcile-timeout 1h
	assert_equal "$(version_of last)" 18446744073709551613
	run -1 mc-cli put one-more <<<"x"
	assert_output --partial 'no version left to write'
}
