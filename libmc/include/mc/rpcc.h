/*
 * Synchronous msgpack-rpc client connection for tools and the client
 * API: blocking socket, one outstanding buffer, pipelining by sending
 * several requests before reading their responses in order.
 *
 * A request is built, then sent: mc_rpcc_begin(r, method) returns the
 * packer for its params, the caller packs exactly one map into it
 * (msgpack_pack_map(pk, n), then n pairs), and mc_rpcc_send (or _call,
 * _notify) queues it. The request stays built until the next begin, so
 * it can be sent again, or on another connection (mc_rpcc_begin_copy).
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
#include "mc/bulk.h"
#include "mc/err.h"
#include "mc/wire.h"

struct mc_rpcc;

/*
 * The calling thread's master connection of an mc_client (mc/client.h),
 * for the admin calls of mc's own tools; NULL when it cannot connect.
 */
struct mc_client;
struct mc_rpcc *mc_client_master(struct mc_client *c);
/*
 * A new master connection greeted as c's own are (tenant, token, host),
 * which the caller owns and closes: for tools that drive many at once.
 */
struct mc_rpcc *mc_client_open_master(struct mc_client *c, struct mc_err *err);

/* Connect to addr; an error names it. */
struct mc_rpcc *mc_rpcc_connect(const char *addr, int timeout_ms, struct mc_err *err);
/* mc_rpcc_connect over the transport t (mc/transport.h; NULL: tcp). */
struct mc_transport;
struct mc_rpcc *mc_rpcc_connect_on(const struct mc_transport *t, const char *addr, int timeout_ms,
				   struct mc_err *err);
void mc_rpcc_close(struct mc_rpcc *r);
/*
 * Judge r by progress rather than by each wait: r was connected with a
 * short timeout (a tick, say a quarter of stall_ms), and a read or write
 * that times out is waited again, tick after tick, until no byte moved
 * for stall_ms (then MC_ERR_TIMEOUT, "stalled"). A slow transfer that
 * keeps moving never fails. 0 turns it off.
 */
void mc_rpcc_watch_stall(struct mc_rpcc *r, uint64_t stall_ms);
const char *mc_rpcc_addr(const struct mc_rpcc *r);
int mc_rpcc_fd(const struct mc_rpcc *r);

/*
 * Begin a request: the packer for its params map, valid until the
 * request is sent. method must outlive the request (a literal).
 */
msgpack_packer *mc_rpcc_begin(struct mc_rpcc *r, const char *method);
/* Begin on dst a copy of the request last begun on src. */
int mc_rpcc_begin_copy(struct mc_rpcc *dst, const struct mc_rpcc *src, struct mc_err *err);
/*
 * Queue the request begun (not yet written). bulk (optional, may be NULL
 * with bulk_len 0): raw bytes that follow the request; the params must
 * then hold "len": bulk_len. The bulk is written straight from the
 * caller's buffer. Returns the request id, or -1.
 */
int64_t mc_rpcc_send(struct mc_rpcc *r, const void *bulk, uint64_t bulk_len, struct mc_err *err);
/*
 * mc_rpcc_send with the bulk from a source (mc/bulk.h; NULL: none): a
 * descriptor's range is read when the queue is flushed (over tcp with
 * sendfile), and must stay open and unchanged until then; so must a
 * region's.
 */
int64_t mc_rpcc_send_src(struct mc_rpcc *r, const struct mc_bulk_src *src, struct mc_err *err);
/*
 * Queue the request begun as a notification [2, method, params]: no id,
 * no answer. It leaves with the next flush, so a notification sent
 * before a request costs no round trip of its own.
 */
int mc_rpcc_notify(struct mc_rpcc *r, struct mc_err *err);
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
/*
 * Have fn told of each notification (without a bulk) the server sends
 * among its responses, as a peer's control link carries tasks, instead
 * of failing the connection on it; n is valid during the call only.
 */
void mc_rpcc_on_notify(struct mc_rpcc *r, void (*fn)(void *arg, const struct mc_msg *n), void *arg);
/*
 * Have fn told of the bytes the connection moves as they move: n
 * written (requests and their bulks) or bulk bytes read since the last
 * call. NULL stops it.
 */
void mc_rpcc_on_bytes(struct mc_rpcc *r, void (*fn)(void *arg, uint64_t n), void *arg);
int mc_rpcc_read_bulk(struct mc_rpcc *r, void *dest, uint64_t len, struct mc_err *err);
/*
 * Read sink->len bulk bytes into the sink (mc/bulk.h). A sink that
 * cannot take its bytes (a full disk) fails the call with MC_ERR_SYSTEM
 * and closes the connection: the stream is left inside the bulk.
 */
int mc_rpcc_read_bulk_to(struct mc_rpcc *r, struct mc_bulk_sink *sink, struct mc_err *err);
int mc_rpcc_skip_bulk(struct mc_rpcc *r, uint64_t len, struct mc_err *err);

/*
 * One round trip for the request begun: send, flush, recv. Returns -1
 * with err on transport failure or when the response carries an error
 * (err then holds the remote code and message, and resp is released).
 * On 0 the caller owns resp and must release it.
 */
int mc_rpcc_call(struct mc_rpcc *r, struct mc_msg *resp, struct mc_err *err);
/* mc_rpcc_call of a request with an empty params map. */
int mc_rpcc_call0(struct mc_rpcc *r, const char *method, struct mc_msg *resp, struct mc_err *err);

#endif
