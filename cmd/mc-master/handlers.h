/*
 * The master's RPC handlers: the method table served on --listen and
 * the connection close hook that detaches a peer's control link.
 */
#ifndef MASTER_HANDLERS_H
#define MASTER_HANDLERS_H

#include "mc/conn.h"

extern const struct mc_method master_methods[];

void master_on_close(struct mc_conn *c, void *ctx);

#endif
