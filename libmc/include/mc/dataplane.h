/*
 * The data plane: a peer's read and write requests, written once for
 * everyone who moves a copy's bytes (the client API today, a peer's copy
 * worker next). A write carries its bulk from any source and a read lands
 * its bulk in any sink (mc/bulk.h); a read is verified against the size
 * and checksum the master listed for the version, its checksum computed
 * as the bytes land. Errors say what the peer refused or what did not
 * match, in the words mc-wire(5) gives them.
 *
 * Each call is split into its send and its receive, so a caller can
 * pipeline many on one connection (mc/rpcc.h) and keep several peers
 * busy at once: send and flush them all, then receive the answers in
 * order. Placement, retries and batching are the caller's; this module
 * keeps no state.
 */
#ifndef MC_DATAPLANE_H
#define MC_DATAPLANE_H

#include <stddef.h>
#include <stdint.h>

#include "mc/bulk.h"
#include "mc/checksum.h"
#include "mc/err.h"
#include "mc/rpcc.h"

/* How much of a key goes into an error message: '%.*s', MC_KSHOWN(len), key. */
#define MC_KSHOW 80
#define MC_KSHOWN(n) ((int)((n) < MC_KSHOW ? (n) : MC_KSHOW))

/* The version of an object whose copy is read or written. */
struct mc_dp_obj {
	const char *tenant;
	const void *key;
	size_t klen;
	uint64_t version;
	uint64_t len;	   /* the version's size: a read names it (size), for its grant */
	uint64_t checksum; /* of the version's bytes (mc/checksum.h) */
	/*
	 * The master's grant for this copy at this peer, opaque bytes sent
	 * as they came (glen 0: none, and the peer refuses).
	 */
	const void *grant;
	size_t glen;
	/*
	 * A write's chain parent, the key of the block before it in its
	 * prompt (plen 0: none): the peer ranks its own copies by it.
	 */
	const void *parent;
	size_t plen;
	/*
	 * A read's lease from the master (0: none). The master may hand one
	 * grant to several readers; the lease tells the peer a second read
	 * under one replica list, which the master did not see, from a read
	 * under a new one, which it did.
	 */
	uint64_t lease_id;
};

/*
 * Queue a read of o; its answer's bulk is to fill a sink of the
 * version's size.
 */
int mc_dp_read_send(struct mc_rpcc *r, const struct mc_dp_obj *o, struct mc_err *err);
/*
 * Receive the answer of the read of o queued first on r, its bytes into
 * sink (sink->len: the version's size), checked against o->checksum with
 * cs (a stream the caller reuses between reads). -1 with err when the
 * connection failed (drop it); otherwise 0, with refused->code 0 when the
 * bytes are in the sink and verified, else what was wrong: the peer's
 * refusal, MC_ERR_CHECKSUM, or MC_ERR_PROTO for a size that does not
 * match. A sink that refused its bytes fails the connection too (-1,
 * MC_ERR_SYSTEM).
 */
int mc_dp_read_recv(struct mc_rpcc *r, const struct mc_dp_obj *o, struct mc_bulk_sink *sink,
		    struct mc_checksum_stream *cs, struct mc_err *refused, struct mc_err *err);

/* Queue a write of o's bytes from src into a new copy on tier. */
int mc_dp_write_send(struct mc_rpcc *r, const struct mc_dp_obj *o, const char *tier,
		     const struct mc_bulk_src *src, struct mc_err *err);
/*
 * Receive the answer of the write queued first on r: -1 with err when
 * the connection failed, otherwise 0 with refused->code 0 when the copy
 * was written, else the peer's refusal.
 */
int mc_dp_write_recv(struct mc_rpcc *r, struct mc_err *refused, struct mc_err *err);

#endif
