#!/usr/bin/env bats
#
# The shipped systemd units and the example master configuration: the
# directories a sandboxed daemon writes exist and are writable to it, the
# snapshot jobs prune where the master saves, and the configuration runs.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli mc-snapshot
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

EX="$MC_ROOT/examples"

# unit_value FILE KEY: the values of KEY= in a unit file, one a line.
unit_value() {
	sed -n "s/^$2=//p" "$1"
}

# conf_value FILE NAME: the value of "NAME = VALUE" in a --config file.
conf_value() {
	sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$1"
}

@test "units: the master's sandbox lets it write the snapshot-dir of its config" {
	local unit="$EX/systemd/mc-master.service" dir state
	# the unit reads the example config where its comment says to copy it
	run -0 unit_value "$unit" ExecStart
	assert_output --partial '--config /etc/mc/master.conf'
	run -0 grep -c 'examples/mc-master.conf to /etc/mc/master.conf' "$unit"
	# ProtectSystem=strict: only its state (or a listed) directory is writable
	run -0 unit_value "$unit" ProtectSystem
	assert_output strict
	dir=$(conf_value "$EX/mc-master.conf" snapshot-dir)
	state=$(unit_value "$unit" StateDirectory)
	[ -n "$state" ]
	assert_equal "$dir" "/var/lib/$state"
}

@test "units: the snapshot timer and cron prune the directory the master saves into" {
	local dir
	dir=$(conf_value "$EX/mc-master.conf" snapshot-dir)
	run -0 unit_value "$EX/cron/mc-snapshot.service" Environment
	assert_line "MC_SNAPSHOT_DIR=$dir"
	run -0 unit_value "$EX/cron/mc-snapshot.service" ReadWritePaths
	assert_output "$dir"
	run -0 grep -x "MC_SNAPSHOT_DIR=$dir" "$EX/cron/mc-snapshot.crontab"
}

@test "units: a master on the example config restores its newest snapshot after kill -9" {
	local snap="$MC_DIR/snap" flags
	# its addresses and directory moved to the test's; flags win over the file
	flags=(--config "$EX/mc-master.conf" --http 127.0.0.1:0 --snapshot-dir "$snap")
	mc_start_master "${flags[@]}"
	mc_start_peers 1
	echo 'kept' | mc-cli put kept
	run -0 mc-snapshot save
	[ "$(mc_snap_files "$snap" | wc -l)" -eq 1 ]
	mc_kill9 master
	mc_start_master "${flags[@]}"
	run -0 mc-cli exist kept
}
