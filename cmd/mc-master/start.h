/*
 * Starting a master (start.c): what main.c and the request fuzzer share.
 */
#ifndef MASTER_START_H
#define MASTER_START_H

#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "mc/metrics.h"
#include "master.h"

/* Every option's default, before the command line is parsed. */
void master_defaults(struct master_cfg *cfg);
/*
 * Point m's module state at one zeroed block (once; master_start does
 * it too): what a test that starts only some modules by hand calls
 * first. -1 when out of memory.
 */
int master_alloc(struct master *m);
/*
 * Start every module of m, whose cfg is set and whose base exists: 0,
 * or the exit status after saying what failed on stderr (the caller's
 * cleanup then frees what was started).
 */
int master_start(struct master *m, uint32_t max_tenants, uint32_t max_types);
/* Stop the modules that started, in the reverse order, and free their state. */
void master_stop(struct master *m);
/* The sweep timer's work: every module's sweep, in start order. */
void master_sweep(struct master *m);
/* SIGHUP: every module reads its files again; one that fails says so and keeps the old. */
void master_reload(struct master *m);
/*
 * The methods the master serves: each module's own table. metrics NULL:
 * uncounted (--list-methods).
 */
struct mc_registry *master_registry(struct mc_metrics *metrics, struct mc_err *err);

#endif
