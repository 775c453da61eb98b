/*
 * Synchronous msgpack-rpc client connection for tools and the client
 * API: blocking socket, one outstanding buffer, pipelining by sending
 * several requests before reading their responses in order.
 *
 * Responses are checked with mc_wire_check() like everything else; a
 * malformed response fails the call with MC_ERR_PROTO and the
 * connection is closed (later calls fail with MC_ERR_UNAVAILABLE).
 */
#ifndef MC_RPCC_H
#define MC_RPCC_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/addr.h"
#include "mc/conn.h" /* mc_pack_fn */
#include "mc/err.h"
#include "mc/wire.h"

struct mc_rpcc;

struct mc_rpcc *mc_rpcc_connect(const char *addr, int timeout_ms, struct mc_err *err);
void mc_rpcc_close(struct mc_rpcc *r);
const char *mc_rpcc_addr(const struct mc_rpcc *r);
int mc_rpcc_fd(const struct mc_rpcc *r);

/*
 * Queue a request (not yet sent). bulk (optional, may be NULL with
 * bulk_len 0): raw bytes that follow the request; params_fn must then pack
 * "len": bulk_len. The bulk is written straight from the caller's buffer.
 * Returns the request id, or -1.
 */
int64_t mc_rpcc_send(struct mc_rpcc *r, const char *method, mc_pack_fn params_fn, void *arg,
		     const void *bulk, uint64_t bulk_len, struct mc_err *err);
/*
 * Queue a notification [2, method, params]: no id, no answer. It leaves
 * with the next flush, so a notification sent before a request costs no
 * round trip of its own.
 */
int mc_rpcc_notify(struct mc_rpcc *r, const char *method, mc_pack_fn params_fn, void *arg,
		   struct mc_err *err);
/* Whether anything is queued and not yet written. */
bool mc_rpcc_queued(const struct mc_rpcc *r);
/* Write everything queued. */
int mc_rpcc_flush(struct mc_rpcc *r, struct mc_err *err);

/*
 * Read the next response (in order). On success resp is filled (release
 * with mc_msg_release) and 0 returned even if the response carries an
 * error: check with mc_msg_error(). If the response announces a bulk,
 * the caller must consume it with mc_rpcc_read_bulk() or
 * mc_rpcc_skip_bulk() before the next recv.
 */
int mc_rpcc_recv(struct mc_rpcc *r, struct mc_msg *resp, struct mc_err *err);
int mc_rpcc_read_bulk(struct mc_rpcc *r, void *dest, uint64_t len, struct mc_err *err);
int mc_rpcc_skip_bulk(struct mc_rpcc *r, uint64_t len, struct mc_err *err);

/*
 * One round trip: send, flush, recv. Returns -1 with err on transport
 * failure or when the response carries an error (err then holds the
 * remote code and message, and resp is released). On 0 the caller owns
 * resp and must release it.
 */
int mc_rpcc_call(struct mc_rpcc *r, const char *method, mc_pack_fn params_fn, void *arg,
		 struct mc_msg *resp, struct mc_err *err);

#endif
