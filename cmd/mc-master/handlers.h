/*
 * The master's RPC handlers: the method table served on --listen.
 */
#ifndef MASTER_HANDLERS_H
#define MASTER_HANDLERS_H

#include "mc/conn.h"

extern const struct mc_method master_methods[];

#endif
