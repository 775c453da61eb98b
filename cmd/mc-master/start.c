/*
 * Starting a master: its options' defaults, its modules in the order
 * they depend on each other, and the registry of what it serves. main.c
 * adds the options, the restore and the listener around them; anything
 * else that needs a whole master in one process (the request fuzzer)
 * starts it the same way.
 */
#include <stdio.h>

#include "mc/log.h"
#include "mc/young.h"
#include "auth.h"
#include "candidates.h"
#include "evict.h"
#include "objects.h"
#include "lease.h"
#include "msnap.h"
#include "ops.h"
#include "peerlink.h"
#include "put.h"
#include "rank.h"
#include "read.h"
#include "reconcile.h"
#include "softpin.h"
#include "start.h"
#include "state.h"

void
master_defaults(struct master_cfg *cfg)
{
	cfg->listen = MC_DEFAULT_MASTER;
	cfg->ready_fd = -1;
	cfg->lease_ttl = 10000;
	cfg->peer_ttl = 10000;
	cfg->task_ttl = 10 * 60 * 1000;
	cfg->put_timeout = 60000;
	cfg->snapshot_keep = 3;
	cfg->max_restore_bytes = 4ull << 30;
	cfg->reconcile_timeout = 30000;
	cfg->default_soft_pin_ttl = 30 * 60 * 1000;
	cfg->max_soft_pin_ttl = 24 * 60 * 60 * 1000;
	cfg->evict_high = 0.9;
	cfg->evict_low = 0.7;
	cfg->evict_lowerbound = -1; /* the policy's */
	cfg->evict_planner_timeout = 10000;
	cfg->evict_slice = 256;
	cfg->young = MC_YOUNG_DEFAULT_MS;
	cfg->put_wait = 50;
	cfg->write_ack_wait = 5000;
	cfg->grant_ttl = 30000;
	cfg->grant_cache = 65536;
}

int
master_start(struct master *m, uint32_t max_tenants, uint32_t max_types)
{
	struct mc_err err;

	if (store_init(&m->store, &err) != 0 ||
	    peers_init(&m->peers, m->base, &m->store, &err) != 0) {
		mc_complain("cannot start: %s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	m->store.max_tenants = max_tenants;
	m->store.max_types_per_tenant = max_types;
	/* the registry first: modules register their collectors as they start */
	if (mmetrics_init(m) != 0) {
		mc_complain("cannot start: out of memory for metrics");
		return MC_EXIT_SOFTWARE;
	}
	/* the door before any module that changes state through it */
	if (state_init(m, &err) != 0 || softpin_init(m, &err) != 0 || leases_init(m, &err) != 0) {
		mc_complain("cannot start: %s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	ops_hook_store(m);
	if (auth_open(m, &err) != 0) {
		mc_complain("cannot start: %s", err.msg);
		return err.code == MC_ERR_INVALID ? MC_EXIT_DATAERR : MC_EXIT_SOFTWARE;
	}
	if (!m->auth_on)
		mc_info("no --auth-file: every client may call everything, unauthenticated");
	if (evict_init(m, &err) != 0) {
		mc_complain("cannot start eviction: %s", err.msg);
		return err.code == MC_ERR_INVALID ? MC_EXIT_DATAERR : MC_EXIT_SOFTWARE;
	}
	if (mgrants_init(&m->grants, m->cfg.grant_ttl, m->cfg.grant_cache, m->mx.reg, &err) != 0 ||
	    put_init(m, &err) != 0) {
		mc_complain("cannot start: %s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	commit_init(m);
	moves_init(m);
	if (msnap_init(m, &err) != 0) {
		mc_complain("cannot start snapshots: %s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	return 0;
}

struct mc_registry *
master_registry(struct mc_metrics *metrics, struct mc_err *err)
{
	const struct mc_method *const tables[] = {
		read_methods,	    object_methods,  rank_methods,   put_methods,
		lease_methods,	    softpin_methods, evict_methods,  msnap_methods,
		peerlink_methods,   recon_methods,   commit_methods, moves_methods,
		candidates_methods,
	};
	struct mc_registry *r = mc_registry_new(metrics, err);

	for (size_t i = 0; r != NULL && i < sizeof(tables) / sizeof(tables[0]); i++)
		if (mc_registry_add(r, tables[i], err) != 0) {
			mc_registry_free(r);
			return NULL;
		}
	return r;
}
