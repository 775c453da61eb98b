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
 * Start every module of m, whose cfg is set and whose base exists: 0,
 * or the exit status after saying what failed on stderr (the caller's
 * cleanup then frees what was started).
 */
int master_start(struct master *m, uint32_t max_tenants, uint32_t max_types);
/*
 * The methods the master serves: each module's own table. metrics NULL:
 * uncounted (--list-methods).
 */
struct mc_registry *master_registry(struct mc_metrics *metrics, struct mc_err *err);

#endif
