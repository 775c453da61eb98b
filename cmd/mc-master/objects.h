/*
 * The object calls but the reads (read.h): hello, exist and its batch,
 * remove, batch_remove, remove_prefix, list, stat, stats, peers,
 * clock_set.
 */
#ifndef MASTER_OBJECTS_H
#define MASTER_OBJECTS_H

#include "mc/conn.h"

/* The methods this module serves (in its module table). */
extern const struct mc_method object_methods[];

/* The other object calls as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module objects_module;

#endif
