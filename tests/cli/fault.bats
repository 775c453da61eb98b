#!/usr/bin/env bats
#
# Fault injection (MC_FAULT; the points are in mc-wire(5)): each
# point fires the way its real fault would, deterministically: nth for
# one operation in a sequence, always for every one, pause to stop a
# daemon in the middle of an operation until a file appears, so a test
# can kill it there. No test waits on time.

load helpers

setup() {
	mc_require_bins mc-master mc-peer mc-cli mc-rpc mc-snapshot
	mc_test_dir
	export MC_FAULT_DIR="$MC_DIR/faults"
	mkdir -p "$MC_FAULT_DIR"
}

teardown() {
	mc_stop_everything
}

# peer_objects PEER: the copies PEER holds.
peer_objects() {
	mc-rpc "$(mc_addr "$1")" peer_stats | jq '[.tiers[].objects] | add'
}

@test "fault: write:nth=2 fails the second write only; that put commits nothing" {
	mc_start_master
	MC_FAULT=write:nth=2 mc_start_peer p1
	echo one | mc-cli put k1
	run -1 mc-cli put k2 <<<"two"
	assert_output --partial "fault injected: write"
	echo three | mc-cli put k3
	[ "$(mc-cli get k1)" = one ] && [ "$(mc-cli get k3)" = three ]
	run -1 mc-cli get k2
	assert_output --partial "not found"
}

@test "fault: read:always fails every read of a peer; the client reads the other replica" {
	mc_start_master
	mc_start_peer p1
	MC_FAULT=read:always mc_start_peer p2
	mc_random_file "$BATS_TEST_TMPDIR/src" 100000
	mc-cli put --replicas 2 both <"$BATS_TEST_TMPDIR/src"
	for _ in 1 2 3 4; do
		mc-cli get both | cmp - "$BATS_TEST_TMPDIR/src"
	done
}

@test "fault: read:pause stops a read in the middle; killing that peer there, the client falls back" {
	mc_start_master
	mkdir -p "$MC_DIR/f1" "$MC_DIR/f2"
	MC_FAULT=read:pause MC_FAULT_DIR="$MC_DIR/f1" mc_start_peer p1
	MC_FAULT=read:pause MC_FAULT_DIR="$MC_DIR/f2" mc_start_peer p2
	mc_random_file "$BATS_TEST_TMPDIR/src" 100000
	mc-cli put --replicas 2 paused <"$BATS_TEST_TMPDIR/src"
	mc-cli get paused >"$BATS_TEST_TMPDIR/got" &
	local reader=$! victim other
	wait_until 10 test -e "$MC_DIR/f1/read.paused" -o -e "$MC_DIR/f2/read.paused"
	if [ -e "$MC_DIR/f1/read.paused" ]; then victim=p1 other=f2; else victim=p2 other=f1; fi
	# the survivor lets its read through; the paused one dies in the middle of its read
	touch "$MC_DIR/$other/read"
	kill -9 "$(mc_pid "$victim")"
	wait "$reader"
	cmp "$BATS_TEST_TMPDIR/src" "$BATS_TEST_TMPDIR/got"
}

@test "fault: reply.put_end:always loses put_end's answer, not its work" {
	MC_FAULT=reply.put_end:always mc_start_master
	mc_start_peer p1
	run -69 mc-cli put done <<<"committed"
	[ "$(mc-cli get done)" = committed ]
}

@test "fault: drop:always loses the master's drop; the copy stays on the peer" {
	mc_start_master
	MC_FAULT=drop:always mc_start_peer p1
	echo x | mc-cli put gone
	[ "$(peer_objects p1)" -eq 1 ]
	mc-cli rm gone
	run -1 mc-cli get gone
	wait_until 10 grep -q "fault injected: a drop of 'gone' lost" "$MC_DIR/p1.log"
	[ "$(peer_objects p1)" -eq 1 ]
}

@test "fault: task.send:always loses the drop task on its way; the peer keeps the copy" {
	MC_FAULT=task.send:always mc_start_master
	mc_start_peer p1
	echo x | mc-cli put lost
	mc-cli rm lost
	wait_until 10 grep -q "fault injected: 1 drop tasks for peer" "$MC_DIR/master.log"
	[ "$(peer_objects p1)" -eq 1 ]
}

@test "fault: snapshot.write:always fails a save with a clear error" {
	MC_FAULT=snapshot.write:always mc_start_master --snapshot-dir "$MC_DIR/snaps"
	mc_start_peer p1
	echo x | mc-cli put s
	run -1 mc-snapshot save
	assert_output --partial "fault injected: snapshot write"
}

@test "fault: snapshot.write:pause, then kill -9 of master and writer: the next start removes the temporary" {
	MC_FAULT=snapshot.write:pause mc_start_master --snapshot-dir "$MC_DIR/snaps"
	mc_start_peer p1
	echo x | mc-cli put s
	mc-snapshot save >/dev/null 2>&1 &
	local saver=$!
	wait_until 10 test -e "$MC_FAULT_DIR/snapshot.write.paused"
	ls -A "$MC_DIR/snaps" | grep -q '^\.mc-snapshot-'
	# the master and its writer child, both at once
	local writer
	writer="$(pgrep -P "$(mc_pid master)")"
	[ -n "$writer" ]
	kill -9 "$writer" "$(mc_pid master)"
	wait "$saver" || true
	# the new master starts once both are gone: a process SIGKILL has not
	# torn down yet still answers on its socket
	mc_kill9 master
	wait_until 10 mc_gone "$writer"
	mc_start_master --snapshot-dir "$MC_DIR/snaps"
	run ! bash -c "ls -A '$MC_DIR/snaps' | grep -q '^\.mc-snapshot-'"
}
