/*
 * The object calls: hello, lookups (get_replica_list and its batch,
 * exist), removals, list, stat, stats, peers, clock_set. The other
 * methods live with their modules; main.c registers every table.
 */
#ifndef MASTER_HANDLERS_H
#define MASTER_HANDLERS_H

#include "mc/conn.h"

/* The methods this module serves (registered by main.c). */
extern const struct mc_method handler_methods[];

#endif
