/*
 * Starting a master: its options' defaults, its modules in the order
 * they depend on each other, and the registry of what it serves. main.c
 * adds the options, the restore and the listener around them; anything
 * else that needs a whole master in one process (the request fuzzer)
 * starts it the same way.
 */
#include <stdio.h>

#include <stdlib.h>

#include "mc/log.h"
#include "mc/young.h"
#include "auth.h"
#include "candidates.h"
#include "commit.h"
#include "copies.h"
#include "evict.h"
#include "evict_jobs.h"
#include "grants.h"
#include "lease.h"
#include "mmetrics.h"
#include "moves.h"
#include "msnap.h"
#include "objects.h"
#include "ops.h"
#include "peerlink.h"
#include "peers.h"
#include "put.h"
#include "rank.h"
#include "read.h"
#include "reconcile.h"
#include "replicate.h"
#include "softpin.h"
#include "start.h"
#include "state.h"
#include "store.h"

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
	cfg->max_peer_capacity = 1ull << 50; /* 1 PiB: more than a host has, and finite */
	/* the seed's conservative defaults: off, 0.8 reads a second over 10 s, 2 replicas */
	cfg->dr_window = 10000;
	cfg->dr_qps = 0.8;
	cfg->dr_max_replicas = 2;
	cfg->dr_heat_entries = 1u << 16;
	cfg->dr_cooldown = 30000;
	cfg->dr_lease = 30000;
	cfg->dr_max_copies = 64;
}

/*
 * Every module, in the order they start: one may use in its init what
 * those before it set up (the store and the peer table first, then the
 * registry every collector joins, then the door state changes go
 * through, before any module that changes state). They stop in the
 * reverse order; the sweep and SIGHUP visit them in this one.
 */
static const struct master_module *const modules[] = {
	&store_module,	  &peers_module,      &mmetrics_module, &state_module,	&softpin_module,
	&lease_module,	  &ops_module,	      &auth_module,	&recon_module,	&evict_module,
	&mgrants_module,  &put_module,	      &commit_module,	&moves_module,	&msnap_module,
	&peerlink_module, &candidates_module, &rank_module,	&copies_module, &replicate_module,
	&read_module,	  &objects_module,
};
#define NMODULES (sizeof(modules) / sizeof(modules[0]))

/* Each module's state, in one block that struct master points into. */
struct master_parts {
	struct store store;
	struct peers peers;
	struct mmetrics mx;
	struct msnap snap;
	struct recon recon;
	struct softpin sp;
	struct leases leases;
	struct put_waits put_waits;
	struct commits commits;
	struct moves moves;
	struct mgrants grants;
	uint32_t tenant_conns[TENANTS_MAX];
};

int
master_alloc(struct master *m)
{
	struct master_parts *p;

	if (m->parts != NULL)
		return 0;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -1;
	m->parts = p;
	m->store = &p->store;
	m->peers = &p->peers;
	m->mx = &p->mx;
	m->snap = &p->snap;
	m->recon = &p->recon;
	m->sp = &p->sp;
	m->leases = &p->leases;
	m->put_waits = &p->put_waits;
	m->commits = &p->commits;
	m->moves = &p->moves;
	m->grants = &p->grants;
	m->tenant_conns = p->tenant_conns;
	return 0;
}

int
master_start(struct master *m, uint32_t max_tenants, uint32_t max_types)
{
	struct mc_err err = { 0 };

	if (master_alloc(m) != 0) {
		mc_complain("cannot start: out of memory");
		return MC_EXIT_SOFTWARE;
	}
	m->cfg.max_tenants = max_tenants;
	m->cfg.max_types = max_types;
	for (size_t i = 0; i < NMODULES; i++) {
		const struct master_module *mod = modules[i];

		if (mod->init != NULL && mod->init(m, &err) != 0) {
			mc_complain("cannot start %s: %s", mod->name, err.msg);
			/* a file the configuration named is bad: the data, not the master */
			return err.code == MC_ERR_INVALID ? MC_EXIT_DATAERR : MC_EXIT_SOFTWARE;
		}
		m->started = i + 1;
		if (mod->collect != NULL)
			mc_metrics_on_collect(m->mx->reg, mod->collect, m);
	}
	return 0;
}

void
master_stop(struct master *m)
{
	while (m->started > 0) {
		const struct master_module *mod = modules[--m->started];

		if (mod->free != NULL)
			mod->free(m);
	}
	free(m->parts);
	m->parts = NULL;
}

void
master_sweep(struct master *m)
{
	for (size_t i = 0; i < NMODULES; i++)
		if (modules[i]->sweep != NULL)
			modules[i]->sweep(m);
}

void
master_reload(struct master *m)
{
	struct mc_err err;

	for (size_t i = 0; i < NMODULES; i++)
		if (modules[i]->reload != NULL && modules[i]->reload(m, &err) != 0)
			mc_warn("SIGHUP: %s", err.msg);
}

struct mc_registry *
master_registry(struct mc_metrics *metrics, struct mc_err *err)
{
	struct mc_registry *r = mc_registry_new(metrics, err);

	for (size_t i = 0; r != NULL && i < NMODULES; i++)
		if (modules[i]->methods != NULL &&
		    mc_registry_add(r, modules[i]->methods, err) != 0) {
			mc_registry_free(r);
			return NULL;
		}
	return r;
}
