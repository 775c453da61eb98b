/*
 * The master's RPC handlers: the method table served on --listen and
 * the connection close hook that detaches a peer's control link.
 */
#ifndef MASTER_HANDLERS_H
#define MASTER_HANDLERS_H

#include "mc/conn.h"
#include "mmetrics.h"

extern const struct mc_method master_methods[];

void master_on_close(struct mc_conn *c, void *ctx);

/* Count a failure of method k and answer req with the error. */
void handler_fail(struct mc_req *req, enum method k, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
