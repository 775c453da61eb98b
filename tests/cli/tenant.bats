#!/usr/bin/env bats
#
# Tenant isolation: a key lives in (tenant, key); one tenant can neither
# see nor remove another's keys.

load helpers

setup_file() {
	mc_require_bins mc-master mc-peer mc-cli
	mc_file_dir
	mc_start_master --peer-ttl 1h --put-timeout 1h
	mc_start_peers 2
}

teardown_file() {
	mc_stop_everything
}

@test "tenant: b cannot get a's key (exit 1, not found)" {
	echo secret | mc-cli -t a put t-get
	run -1 mc-cli -t b get t-get
	assert_output --partial "not found"
	refute_output --partial secret
}

@test "tenant: b's exist of a's key exits 1" {
	echo secret | mc-cli -t a put t-exist
	mc-cli -t a exist t-exist
	run -1 mc-cli -t b exist t-exist
}

@test "tenant: b's ls does not list a's keys" {
	echo secret | mc-cli -t a put t-ls/one
	run -0 mc-cli -t b ls t-ls/
	assert_output ''
	run -0 mc-cli -t b ls
	refute_output --partial t-ls/one
	run -0 mc-cli -t a ls t-ls/
	assert_output t-ls/one
}

@test "tenant: b's stat of a's key fails with not found" {
	echo secret | mc-cli -t a put t-stat
	run -1 mc-cli -t b stat t-stat
	assert_output --partial "not found"
	MC_TENANT=a mc_stat_json t-stat | jq_true '.key == "t-stat"'
}

@test "tenant: b cannot rm a's key, which stays readable by a" {
	echo secret | mc-cli -t a put t-rm
	run -1 mc-cli -t b rm t-rm
	run -1 mc-cli -t b rm t-rm --force
	[ "$(mc-cli -t a get t-rm)" = secret ]
}

@test "tenant: b's rm --prefix leaves a's keys alone" {
	echo secret | mc-cli -t a put t-pfx/1
	mc-cli -t b rm --prefix t-pfx/ --force || true
	[ "$(mc-cli -t a get t-pfx/1)" = secret ]
}

@test "tenant: the same key in two tenants holds two different values" {
	echo from-a | mc-cli -t a put shared
	echo from-b | mc-cli -t b put shared
	[ "$(mc-cli -t a get shared)" = from-a ]
	[ "$(mc-cli -t b get shared)" = from-b ]
	mc-cli -t a rm shared --force
	[ "$(mc-cli -t b get shared)" = from-b ]
	run -1 mc-cli -t a get shared
}

@test "tenant: MC_TENANT selects the tenant like -t" {
	echo env-a | MC_TENANT=a mc-cli put t-env
	[ "$(mc-cli -t a get t-env)" = env-a ]
	run -1 env MC_TENANT=b mc-cli get t-env
}

@test "tenant: -t beats MC_TENANT" {
	echo flag-b | MC_TENANT=a mc-cli -t b put t-prec
	[ "$(mc-cli -t b get t-prec)" = flag-b ]
	run -1 mc-cli -t a exist t-prec
}

@test "tenant: the default tenant is a tenant of its own" {
	echo dflt | mc-cli put t-default
	run -1 mc-cli -t a exist t-default
	[ "$(mc-cli -t default get t-default)" = dflt ]
}

@test "tenant: cluster stats count objects per tenant" {
	echo 1234 | mc-cli -t statsy put s1
	echo 1234 | mc-cli -t statsy put s2
	mc-cli --json stat | jq_any '.. | objects | select(.tenant? == "statsy") | .objects == 2 and .bytes == 10'
}

@test "tenant: a name with control bytes or spaces is refused and not interned" {
	run mc-cli -t $'bad\ttenant' ls
	assert_failure
	assert_output --partial "printable ASCII"
	run mc-cli -t 'two words' exist k
	assert_failure
	run -0 mc-cli --json stat
	refute_output --partial "bad"
	refute_output --partial "two words"
}
