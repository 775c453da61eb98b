#!/usr/bin/env bats
#
# The master's one door for state changes (cmd/mc-master/state.c): a
# master at --log-level debug logs one line per change record, a copy of
# the objects and replicas is rebuilt from those lines alone (mirror,
# below), and it must equal what the master's own snapshot holds
# (mc-snapdump) after puts, upserts, removals, an eviction, pins, leases,
# a restore and the reconciliation that follows one. A change that does
# not go through the door leaves the copy behind, and the test fails.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-snapshot mc-snapdump mc-rpc
}

setup() {
	mc_test_dir
	SNAPDIR="$MC_DIR/snap"
	mkdir -p "$SNAPDIR"
}

teardown() {
	mc_stop_all
}

teardown_file() {
	mc_stop_everything
}

# Young copies would keep the eviction from choosing them; peers outlive
# every move of the fake clock.
master_flags=(--log-level debug --young 0 --peer-ttl 1h --snapshot-dir)

start_master() {
	mc_start_master "${master_flags[@]}" "$SNAPDIR" --http 127.0.0.1:0 "$@"
}

# mirror LOG: the objects and replicas that the "state:" lines of LOG
# describe, in mc-snapdump's words, sorted. A record about an object the
# copy does not hold comes out as an "unknown" line, so it cannot pass.
mirror() {
	awk '
	/ state: / {
		line = $0
		sub(/^.* state: /, "", line)
		n = split(line, w, " ")
		kind = w[1]
		id = w[2]
		if (kind == "reset") {
			for (k in live)
				delete live[k]
			for (k in R)
				delete R[k]
			next
		}
		for (k in P)
			delete P[k]
		for (i = 3; i <= n; i++) {
			eq = index(w[i], "=")
			P[substr(w[i], 1, eq - 1)] = substr(w[i], eq + 1)
		}
		if (kind ~ /^group_/ || kind ~ /^write_/)
			next
		if (kind != "object_create" && !(id in live)) {
			print "unknown " kind " " id
			next
		}
		if (kind == "object_create" || kind == "object_set") {
			live[id] = 1
			split("version size checksum type group hard_pin lease sp sp_deadline sp_ttl", f, " ")
			for (i in f)
				O[id, f[i]] = P[f[i]]
		} else if (kind == "object_drop") {
			delete live[id]
		} else if (kind == "pin_set") {
			O[id, "sp"] = P["sp"]
			O[id, "sp_deadline"] = P["sp_deadline"]
			O[id, "sp_ttl"] = P["sp_ttl"]
		} else if (kind == "lease_set") {
			O[id, "lease"] = P["lease"]
		} else if (kind == "replica_add" || kind == "replica_set") {
			R[id " " P["rep"]] = "rep=" P["rep"] " peer=" P["peer"] " tier=" P["tier"] \
				" state=" P["state"] " version=" P["version"] " dynamic=" P["dynamic"]
		} else if (kind == "replica_drop") {
			delete R[id " " P["rep"]]
		}
	}
	END {
		for (id in live)
			printf "object %s version=%s size=%s checksum=%s type=%s group=%s hard_pin=%s lease=%s sp=%s sp_deadline=%s sp_ttl=%s\n",
				id, O[id, "version"], O[id, "size"], O[id, "checksum"], O[id, "type"],
				O[id, "group"], O[id, "hard_pin"], O[id, "lease"], O[id, "sp"],
				O[id, "sp_deadline"], O[id, "sp_ttl"]
		for (k in R) {
			split(k, a, " ")
			print (a[1] in live ? "replica " : "orphan ") a[1] " " R[k]
		}
	}' "$1" | sort
}

# mirror_matches: the copy rebuilt from the master's log equals its
# snapshot, which must hold something.
mirror_matches() {
	local f="$BATS_TEST_TMPDIR/now.mcs"
	mc-snapshot save -o "$f" || return 1
	mc-snapdump "$f" | sort >"$BATS_TEST_TMPDIR/store.txt" || return 1
	mirror "$MC_DIR/master.log" >"$BATS_TEST_TMPDIR/mirror.txt"
	[ -s "$BATS_TEST_TMPDIR/store.txt" ] || return 1
	if ! diff -u "$BATS_TEST_TMPDIR/store.txt" "$BATS_TEST_TMPDIR/mirror.txt" >&2; then
		echo "# the store (-) and the copy built from its change records (+) differ" >&2
		return 1
	fi
}

# reconciled KEY...: every replica of each KEY is confirmed by a live peer, and `after`
# (--replicas 2) has both of its own.
reconciled() {
	local k
	for k in "$@"; do
		mc_stat_json "$k" | jq -e 'all(.replicas[]; .confirmed)' >/dev/null || return 1
	done
	mc_stat_json after | jq -e '.replicas | length == 2' >/dev/null
}

# pins_expired N: the master's soft-pin cleanup ended N pins or more.
pins_expired() {
	[ "$(sp_stat expired)" -ge "$1" ]
}

# changes KIND: mc_state_changes_total{kind="KIND"} on the master.
changes() {
	mc_series master mc_state_changes_total "kind=\"$1\""
}

# put KEY BYTES [OPTIONS...]
put() {
	local key="$1" bytes="$2"
	shift 2
	mc_random_file "$BATS_TEST_TMPDIR/data" "$bytes"
	mc-cli put "$key" "$BATS_TEST_TMPDIR/data" "$@" >/dev/null
}

# puts, upserts, removals, a group, pins and a lease on two peers
some_changes() {
	put a 1000 --replicas 2
	put b 2000 --group g
	put c 3000 --group g --hard-pin
	put d 4000 --soft-pin enable:1h
	put a 1000 --upsert --replicas 2
	put b 5000 --upsert
	put gone 100
	mc-cli rm gone
	mc-cli get c >/dev/null
	# a lease kept, and one released at once
	mc_hold_lease a
	mc-cli get d >/dev/null
}

@test "state: a copy built from the change records alone equals the store after puts, upserts, rm, pins, leases, an eviction and a pin's expiry" {
	start_master
	mc_start_peers 2
	some_changes
	mirror_matches
	for ((i = 0; i < 20; i++)); do
		put "e$i" 10000
	done
	run -0 mc-cli --json evict --target 50000
	mirror_matches
	mc-cli rm c
	mirror_matches
	# d's pin runs out, and the sweep ends it
	advance_clock 3601000
	wait_until 10 pins_expired 1
	mirror_matches
}

@test "state: after a restore into a running master, the copy follows the reset and what the file holds" {
	start_master
	mc_start_peers 2
	some_changes
	local f="$BATS_TEST_TMPDIR/saved.mcs"
	mc-snapshot save -o "$f"
	put later 700
	mc-cli rm d
	run -0 mc-snapshot restore "$f" --force
	grep -q ' state: reset$' "$MC_DIR/master.log"
	mirror_matches
}

@test "state: after a restart with --restore, the copies adopted and confirmed by reconciliation are in the copy" {
	start_master
	mc_start_peers 2
	some_changes
	mc-snapshot save >/dev/null
	put after 800 --replicas 2
	put b 6000 --upsert
	mc_kill9 master
	start_master --restore latest
	# both peers' inventories in: the log holds no change the snapshot below misses
	wait_until 20 reconciled a b c d after
	mirror_matches
}

@test "state: mc_state_changes_total counts the changes of each kind" {
	start_master
	mc_start_peers 1
	[ "$(changes object_create)" -eq 0 ]
	put k 1000 --group g2
	[ "$(changes object_create)" -eq 1 ]
	[ "$(changes group_create)" -eq 1 ]
	[ "$(changes write_begin)" -eq 1 ]
	[ "$(changes write_end)" -eq 1 ]
	[ "$(changes replica_add)" -eq 1 ]
	# completed: ended by put_end, written by the peer's confirmation
	[ "$(changes replica_set)" -ge 1 ]
	mc-cli get k >/dev/null
	[ "$(changes lease_set)" -ge 1 ]
	mc-cli rm k
	[ "$(changes replica_drop)" -eq 1 ]
	[ "$(changes object_drop)" -eq 1 ]
	[ "$(changes group_drop)" -eq 1 ]
	[ "$(changes reset)" -eq 0 ]
}

@test "state: at the default log level nothing reads the records, and every change is still counted" {
	mc_start_master --http 127.0.0.1:0
	mc_start_peers 1
	put k 1000 --soft-pin enable:1h
	[ "$(changes object_create)" -eq 1 ]
	[ "$(changes pin_set)" -ge 1 ]
	local leases
	leases=$(changes lease_set)
	mc-cli get k >/dev/null
	mc-cli get k >/dev/null
	# each get takes a lease and gives it back
	[ "$(changes lease_set)" -ge $((leases + 2)) ]
	run -1 grep -c "state: " "$MC_DIR/master.log"
}
