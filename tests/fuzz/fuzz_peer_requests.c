/*
 * libFuzzer target for every request a peer serves, on its data plane
 * and on its link to the master: the first byte names a method (its low
 * seven bits index the data-plane registry, then the control link's, so
 * a new method is fuzzed without a new target; its high bit turns
 * --fault-inject on, letting writes and reads without a grant reach the
 * medium), the rest is what a client sends after the method's name. One
 * peer with a small DRAM arena, never registered with a master, serves
 * every input over a real connection, so the bytes go through the wire
 * check, the decoder, the dispatcher, the grant check and the handler's
 * own parsing of its params. Build and run: make fuzz (needs clang).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mc/log.h"
#include "peer.h"
#include "serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small: inputs fill it and the peer runs out of room as it would. */
#define ARENA_BYTES (4u << 20)

static struct peer p;
static struct mc_registry *regs[2]; /* data plane, control link */

static void
start(void)
{
	struct mc_addr master;
	struct mc_err err;

	mc_log_init("fuzz_peer_requests", 0);
	mc_log_set_level(MC_LOG_ERROR);
	if ((p.base = event_base_new()) == NULL)
		abort();
	p.media[MC_TIER_DRAM] =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = ARENA_BYTES }, &err);
	if (p.media[MC_TIER_DRAM] == NULL || pindex_init(&p.index, p.media, &err) != 0)
		abort();
	pool_init(&p.pool, &p.index);
	p.host = "fuzz";
	p.ready_fd = -1;
	/* a link that is never started: the control methods see an unregistered peer */
	if (mc_addr_parse("unix:/nonexistent", &master, &err) != 0 ||
	    (p.ctl = control_new(&p, &master, &err)) == NULL)
		abort();
	if ((regs[0] = mc_registry_new(NULL, &err)) == NULL ||
	    mc_registry_add(regs[0], peer_data_methods, &err) != 0 ||
	    (regs[1] = mc_registry_new(NULL, &err)) == NULL)
		abort();
	/* the control link's methods come one table per module, in order */
	for (size_t t = 0; peer_control_methods[t] != NULL; t++)
		if (mc_registry_add(regs[1], peer_control_methods[t], &err) != 0)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mc_method *method;
	struct mc_conn_ops ops = { .ctx = &p };
	size_t which;

	if (size == 0)
		return 0;
	if (p.base == NULL)
		start();
	method = fuzz_pick((const struct mc_registry *const *)regs, 2, data[0] & 0x7f, &which);
	if (method == NULL)
		return 0;
	p.fault_inject = (data[0] & 0x80) != 0;
	ops.methods = regs[which];
	fuzz_serve(p.base, &ops, method->name, data + 1, size - 1);
	return 0;
}
