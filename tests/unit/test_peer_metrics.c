/*
 * Unit tests for the peer's metrics (cmd/mc-peer/metrics.c): the rows
 * of every module are registered in one walk and read again at each
 * scrape; a series whose module or tier the peer lacks is not served
 * (no disk queue, no mover, no SSD, no disk I/O on a tier that does not
 * seal), and the grants' "ok" verdict is never a refusal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/metrics.h"
#include "mc/policy.h"

#include "peer.h"
#include "tap.h"
#include "mover.h"
#include "reclaim.h"
#include "tasks.h"

#define BYTES (1u << 20)

static struct mc_policy policy;

/* A peer on base: DRAM, and a DRAM stand-in for SSD with a mover when two_tiers. */
static void
peer_up(struct peer *p, struct event_base *base, bool two_tiers)
{
	struct medium_conf conf = { .size = BYTES };
	struct reclaim_conf rc = { .mode = EVICT_LOCAL, .policy = &policy };
	struct mc_err err;

	memset(p, 0, sizeof(*p));
	p->base = base;
	p->media[MC_TIER_DRAM] = medium_open(MC_TIER_DRAM, &conf, &err);
	if (two_tiers) {
		/* media are known by their operations: this one seals nothing */
		p->media[MC_TIER_SSD] = medium_dram.open(&conf, &err);
		p->media[MC_TIER_SSD]->ops = &medium_dram;
		p->media[MC_TIER_SSD]->tier = MC_TIER_SSD;
	}
	if (pindex_init(&p->index, p->media, &err) != 0)
		abort();
	pool_init(&p->pool, &p->index);
	if (two_tiers && (p->mover = mover_new(base, &p->pool, &err)) == NULL)
		abort();
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		rc.high[t] = 0.9;
		rc.low[t] = 0.7;
	}
	if ((p->reclaim = reclaimer_new(base, &p->pool, p->mover, &rc, &err)) == NULL)
		abort();
}

static void
peer_down(struct peer *p)
{
	reclaimer_free(p->reclaim);
	mover_free(p->mover);
	pindex_destroy(&p->index);
	for (int t = 0; t < MC_TIER_COUNT; t++)
		medium_close(p->media[t]);
}

static bool
has(const char *text, const char *line)
{
	return text != NULL && strstr(text, line) != NULL;
}

int
main(void)
{
	struct event_base *base = event_base_new();
	struct peer_metrics *pm;
	struct peer p;
	struct peer_tasks tasks;
	struct mc_err err;
	char *text;

	TAP_OK(base && mc_policy_builtin(&policy, &err) == 0,
	       "an event loop and the built-in policy");

	peer_up(&p, base, false);
	pm = peer_metrics_new(&p);
	TAP_OK(pm != NULL && peer_metrics_registry(pm) != NULL, "metrics for a DRAM-only peer");
	p.st.reads = 3;
	p.st.registrations = 2;
	p.grants.refused[MC_GRANT_FORGED] = 5;
	text = mc_metrics_render(peer_metrics_registry(pm), NULL);
	TAP_OK(has(text, "mc_peer_reads_total 3\n") && has(text, "mc_peer_registrations_total 2\n"),
	       "a scrape reads the counters anew");
	TAP_OK(has(text, "mc_peer_tier_bytes_capacity{tier=\"dram\"} 1048576\n") &&
		       !has(text, "tier=\"ssd\""),
	       "per-tier series for the tiers held only");
	TAP_OK(has(text, "mc_peer_evictions_total{tier=\"dram\",reason=\"delete\"} 0\n") &&
		       has(text, "mc_peer_capacity_drops_total{tier=\"dram\","),
	       "two labels, tier and reason");
	TAP_OK(has(text, "mc_peer_grants_refused_total{reason=\"forged\"} 5\n") &&
		       !has(text, "reason=\"ok\""),
	       "refusals by reason, never for ok");
	TAP_OK(!has(text, "mc_peer_disk_") && !has(text, "mc_peer_moves_total") &&
		       !has(text, "mc_peer_medium_ops_total"),
	       "no disk queue, mover or disk tier: none of their series");
	TAP_OK(has(text, "# HELP mc_peer_objects Objects held.\n# TYPE mc_peer_objects gauge\n"),
	       "names, help and type as documented");
	TAP_OK(!has(text, "mc_peer_tasks_total"), "no link yet: no task series");
	free(text);
	peer_tasks_init(&tasks, &p, NULL, NULL);
	p.tasks = &tasks;
	tasks.count[0].done = 4;
	tasks.count[1].repeated = 2;
	text = mc_metrics_render(peer_metrics_registry(pm), NULL);
	TAP_OK(has(text, "mc_peer_tasks_total{kind=\"drop\",outcome=\"done\"} 4\n") &&
		       has(text, "mc_peer_tasks_total{kind=\"evict\",outcome=\"repeated\"} 2\n") &&
		       has(text, "mc_peer_tasks_total{kind=\"evict\",outcome=\"failed\"} 0\n"),
	       "the master's task items by kind and outcome, one series per row of the kind table");
	free(text);
	p.tasks = NULL;
	peer_tasks_free(&tasks);
	peer_metrics_free(pm);
	peer_down(&p);

	peer_up(&p, base, true);
	pm = peer_metrics_new(&p);
	text = mc_metrics_render(peer_metrics_registry(pm), NULL);
	TAP_OK(has(text, "mc_peer_moves_total{kind=\"demote\",outcome=\"queued\"} 0\n") &&
		       has(text, "mc_peer_moving_bytes{tier=\"ssd\"} 0\n"),
	       "with a mover: its moves and bytes moving, per tier held");
	TAP_OK(!has(text, "mc_peer_medium_ops_total"),
	       "a tier that seals nothing has no disk I/O series");
	free(text);
	peer_metrics_free(pm);
	peer_down(&p);

	mc_policy_free(&policy);
	event_base_free(base);
	return tap_done();
}
