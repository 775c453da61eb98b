/*
 * Bulk sources and sinks: where the raw bytes that follow a message come
 * from and go to, one small interface for both kinds of connection (the
 * tools' mc/rpcc.h and the daemons' mc/conn.h) so that a new kind of
 * memory is a case here, not a change to every caller.
 *
 * A source is memory or a range of a file descriptor. Memory goes out
 * with the messages around it in one writev, as it always has; a
 * descriptor goes out with sendfile(2) straight from the page cache, so
 * a tier kept on disk is served without a copy through user space.
 *
 * A sink is memory or a range of a file descriptor. The connection asks
 * the sink for a window, receives into it and commits what landed:
 * memory is its own window (bytes are received in place), a descriptor's
 * window is a staging buffer the sink writes out with pwrite(2) at the
 * bytes' offset, so writing the same range again (a retry from another
 * replica) overwrites it. An optional tap sees every byte once, in order,
 * as it is committed (a checksum computed while the bytes are still in
 * cache). A staging buffer, and with a tap every window, is at most
 * MC_BULK_CHUNK bytes.
 *
 * Registered regions of a transport are the next kind; neither is shared
 * between threads.
 */
#ifndef MC_BULK_H
#define MC_BULK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum mc_bulk_kind {
	MC_BULK_MEM, /* bytes in memory */
	MC_BULK_FD,  /* bytes [off, off + len) of a file descriptor */
};

#define MC_BULK_CHUNK (256u << 10)

struct mc_bulk_src {
	enum mc_bulk_kind kind;
	uint64_t len;
	const void *data; /* MC_BULK_MEM */
	int fd;		  /* MC_BULK_FD: a descriptor sendfile reads (a regular file) */
	uint64_t off;
};

struct mc_bulk_src mc_bulk_src_mem(const void *data, uint64_t len);
struct mc_bulk_src mc_bulk_src_fd(int fd, uint64_t off, uint64_t len);
/*
 * The memory holding the source's bytes from position at on, or NULL
 * when the source is not memory and must be sent with mc_bulk_src_send.
 */
const void *mc_bulk_src_mem_at(const struct mc_bulk_src *s, uint64_t at);
/*
 * Send up to max bytes from position at to the socket sock; the bytes
 * sent, or -1 with errno (EAGAIN on a full non-blocking socket).
 */
ssize_t mc_bulk_src_send(const struct mc_bulk_src *s, int sock, uint64_t at, size_t max);

struct mc_bulk_sink {
	enum mc_bulk_kind kind;
	uint64_t len;
	void *data; /* MC_BULK_MEM */
	int fd;	    /* MC_BULK_FD: a descriptor pwrite writes (a regular file) */
	uint64_t off;
	/* optional: called with every committed span, in order */
	void (*tap)(const void *p, size_t n, void *arg);
	void *tap_arg;
	/* private: a descriptor's staging buffer */
	char *stage_;
};

void mc_bulk_sink_mem(struct mc_bulk_sink *s, void *data, uint64_t len);
void mc_bulk_sink_fd(struct mc_bulk_sink *s, int fd, uint64_t off, uint64_t len);
/* Free what the sink holds (its staging buffer); the descriptor stays open. */
void mc_bulk_sink_release(struct mc_bulk_sink *s);
/*
 * Where the sink's bytes from position at on may land: *n gets how many
 * (at least one while at < len). NULL with errno when the staging buffer
 * cannot be had.
 */
void *mc_bulk_sink_window(struct mc_bulk_sink *s, uint64_t at, size_t *n);
/*
 * The first n bytes of the window for position at have landed: tap
 * them, write a descriptor's out. -1 with errno when they cannot be
 * written.
 */
int mc_bulk_sink_commit(struct mc_bulk_sink *s, uint64_t at, size_t n);

#endif
