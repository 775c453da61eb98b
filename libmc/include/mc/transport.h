/*
 * Transports: how the bytes of one connection move, as one struct of
 * operations chosen once per connection. The daemons' connections
 * (mc/conn.h), the tools' and the client's (mc/rpcc.h) and, through
 * them, the data plane (mc/dataplane.h) reach a socket only through the
 * operations here; nothing above this layer calls recv, send or
 * sendfile itself (tests/lint/sockets fails the build's checks when
 * something does).
 *
 * A transport reads into a sink and writes from sources (mc/bulk.h), so
 * one with its own way to move a registered region or a file's range
 * takes it without a change to its callers. Its implementations live in
 * libmc/net/, one file each; tcp (TCP and unix stream sockets) is the
 * one that always exists and the fallback every pair of ends shares.
 *
 * Which transport a client uses to reach a peer is chosen per peer by
 * the master (mc_transport_choose) from the lists both advertise, the
 * peer in its registration and the client in its hello, each as an
 * array field "transports" of names; a list not sent is ["tcp"].
 */
#ifndef MC_TRANSPORT_H
#define MC_TRANSPORT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "mc/addr.h"
#include "mc/bulk.h"
#include "mc/err.h"

struct mc_transport;

/* One end of a connection on a transport. */
struct mc_tconn {
	const struct mc_transport *t;
	int fd;	    /* what an event loop polls for readiness; -1 once closed */
	void *priv; /* the transport's own state, or NULL */
};

/* What a transport can do (caps). */
enum mc_transport_caps {
	/* a descriptor's range leaves without a copy through user space */
	MC_TRANSPORT_CAP_SENDFILE = 1u << 0,
	/* the other end may be on another host */
	MC_TRANSPORT_CAP_REMOTE = 1u << 1,
};

/* connect flags */
#define MC_TCONNECT_NONBLOCK 1u /* for an event loop: reads and writes never wait */
/* read flags */
#define MC_TREAD_ALL 1u /* a blocking end waits until the whole window is in */
/* read: the sink refused its bytes (errno says why); the stream is inside them */
#define MC_TREAD_SINK_FAILED (-2)
/* The most sources one write takes. */
#define MC_TWRITE_MAX 256

/*
 * An end is made by connect or accept on a tc that comes in wrapped
 * for the transport called and no descriptor (mc_tconn_wrap(tc, t,
 * -1)), so a transport finds its own state from tc->t.
 */
struct mc_transport {
	const char *name;
	unsigned caps; /* enum mc_transport_caps */
	/*
	 * Connect tc to a within timeout_ms (0: the system's). A blocking
	 * end (flags without MC_TCONNECT_NONBLOCK) then fails each read and
	 * write that waits longer than timeout_ms with EAGAIN. 0, or -1 with
	 * err naming a.
	 */
	int (*connect)(struct mc_tconn *tc, const struct mc_addr *a, int timeout_ms, unsigned flags,
		       struct mc_err *err);
	/*
	 * Accept one connection pending on the listening descriptor lfd
	 * into tc, non-blocking; the client's address in *ss (*sslen its
	 * length). 0, or -1 with errno (EAGAIN: none pending).
	 */
	int (*accept)(struct mc_tconn *tc, int lfd, struct sockaddr_storage *ss, socklen_t *sslen);
	/*
	 * Read at most max bytes into sink from its position at on, and
	 * commit them (mc_bulk_sink_commit). The bytes landed; 0 at the end
	 * of the stream; -1 with errno (EAGAIN: nothing now, or a blocking
	 * end timed out); MC_TREAD_SINK_FAILED with errno when the sink
	 * could not give a window or keep what landed.
	 */
	ssize_t (*read)(struct mc_tconn *tc, struct mc_bulk_sink *sink, uint64_t at, size_t max,
			unsigned flags);
	/*
	 * Write from the n sources in order, the first from its position
	 * at on, at most max bytes. What is in memory goes in one gather; a
	 * descriptor's range goes alone, when it comes first, and a write
	 * stops before one that does not. The bytes written (at least one),
	 * or -1 with errno (EAGAIN: the connection takes nothing now;
	 * ENODATA: a file shorter than its source said).
	 */
	ssize_t (*write)(struct mc_tconn *tc, const struct mc_bulk_src *src, int n, uint64_t at,
			 size_t max);
	/* Close tc and free what the transport holds for it; tc->fd becomes -1. */
	void (*close)(struct mc_tconn *tc);
};

/* TCP and unix stream sockets (libmc/net/tcp.c). */
extern const struct mc_transport mc_transport_tcp;

/* tc, an already connected socket fd of transport t (NULL: tcp). */
void mc_tconn_wrap(struct mc_tconn *tc, const struct mc_transport *t, int fd);

/* The transport this library has by that name, or NULL. */
const struct mc_transport *mc_transport_find(const char *name, size_t len);

/* ---- advertising and choosing ---- */

#define MC_TRANSPORT_NAME_MAX 15 /* bytes of a name, without its NUL */
#define MC_TRANSPORTS_MAX 8	 /* names one list keeps */

/* The transports one end advertised, in its order of preference. */
struct mc_transport_list {
	unsigned n;
	char name[MC_TRANSPORTS_MAX][MC_TRANSPORT_NAME_MAX + 1];
};

/* What an end that advertises nothing has: tcp alone. */
void mc_transport_list_default(struct mc_transport_list *l);
/*
 * The list in the array field "transports" of a message's params into
 * *l: the default when the field is absent; names past MC_TRANSPORTS_MAX
 * and names longer than MC_TRANSPORT_NAME_MAX (no transport has one) are
 * left out. -1 with err when the field is not an array of names.
 */
int mc_transport_list_read(const msgpack_object *params, struct mc_transport_list *l,
			   struct mc_err *err);
/* Pack "transports": [name...] of the transports this library has, as a map pair. */
void mc_transport_pack_ours(msgpack_packer *pk);
/*
 * The transport a client reaches a peer with: the first of the client's
 * names, in its order, that the peer lists too; "tcp" when they share
 * none (every end has it). NULL lists are the default.
 */
const char *mc_transport_choose(const struct mc_transport_list *client,
				const struct mc_transport_list *peer);

#endif
