/*
 * libFuzzer target for every request the master serves: the first byte
 * names a method (an index into the master's registry, so a new method
 * is fuzzed without a new target), the rest is what a client sends
 * after the method's name: its params, then whatever follows. One
 * master, started as mc-master starts (no auth file: every method is
 * callable), serves every input over a real connection, so the bytes
 * go through the wire check, the decoder, the dispatcher and the
 * handler's own parsing of its params, and the state the inputs leave
 * behind is the next input's. Build and run: make fuzz (needs clang).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mc/log.h"
#include "auth.h"
#include "master.h"
#include "peerlink.h"
#include "serve.h"
#include "start.h"
#include "store.h"
#include "mmetrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct master m;
static struct mc_conn_ops ops;

static void
start(void)
{
	struct mc_err err;

	mc_log_init("fuzz_master_requests", 0);
	mc_log_set_level(MC_LOG_ERROR);
	master_defaults(&m.cfg);
	/* nothing waits for eviction or for peers' acknowledgements */
	m.cfg.put_wait = 0;
	m.cfg.write_ack_wait = 0;
	snprintf(m.master_id, sizeof(m.master_id), "fuzz");
	if ((m.base = event_base_new()) == NULL || master_start(&m, TENANTS_MAX, 64) != 0 ||
	    (m.methods = master_registry(m.mx->reg, &err)) == NULL)
		abort();
	ops.methods = m.methods;
	ops.ctx = &m;
	ops.on_close = master_on_close;
	ops.authorize = auth_authorize;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mc_registry *regs[1];
	const struct mc_method *method;
	size_t which;

	if (size == 0)
		return 0;
	if (m.base == NULL)
		start();
	regs[0] = m.methods;
	if ((method = fuzz_pick(regs, 1, data[0], &which)) == NULL)
		return 0;
	fuzz_serve(m.base, &ops, method->name, data + 1, size - 1);
	return 0;
}
