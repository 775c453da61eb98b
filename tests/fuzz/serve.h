/*
 * A daemon's requests fed in-process: the daemon fuzzers' shared half.
 *
 * A request reaches the handler exactly as it would from a client: its
 * bytes go into one end of a socket pair, a real mc_conn serves the
 * other end with the daemon's own connection operations (registry,
 * authorization, on_close), and the event loop runs until the
 * connection has taken everything in and closed.
 */
#ifndef FUZZ_SERVE_H
#define FUZZ_SERVE_H

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/conn.h"

/*
 * The registry entry a fuzz input names with its first byte (modulo the
 * entries of regs, counted in order), or NULL for an empty input.
 * *which says which of the nregs registries it is in.
 */
const struct mc_method *fuzz_pick(const struct mc_registry *const *regs, size_t nregs, uint8_t byte,
				  size_t *which);

/*
 * Send [0, 1, method, ...] on a new connection served with ops on
 * base, where "..." is params exactly as given (whatever follows one
 * msgpack object is the bulk, or the next message), then end the
 * stream and run base until the connection closed.
 */
void fuzz_serve(struct event_base *base, const struct mc_conn_ops *ops, const char *method,
		const uint8_t *params, size_t len);

#endif
