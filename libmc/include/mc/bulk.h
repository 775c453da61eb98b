/*
 * Bulk sources and sinks: where the raw bytes that follow a message come
 * from and go to, one small interface for both kinds of connection (the
 * tools' mc/rpcc.h and the daemons' mc/conn.h) so that a new kind of
 * memory is a case here, not a change to every caller.
 *
 * A source is memory, a range of a file descriptor or a range of a
 * registered region. The connection's transport (mc/transport.h) moves
 * it: tcp sends memory with the messages around it in one gather, and
 * a descriptor with sendfile(2) straight from the page cache, so a tier
 * kept on disk is served without a copy through user space.
 *
 * A sink is memory, a range of a file descriptor or a range of a
 * registered region. The connection asks
 * the sink for a window, receives into it and commits what landed:
 * memory is its own window (bytes are received in place), a descriptor's
 * window is a staging buffer the sink writes out with pwrite(2) at the
 * bytes' offset, so writing the same range again (a retry from another
 * replica) overwrites it. An optional tap sees every byte once, in order,
 * as it is committed (a checksum computed while the bytes are still in
 * cache). A staging buffer, and with a tap every window, is at most
 * MC_BULK_CHUNK bytes.
 *
 * A registered region (struct mc_bulk_region) is memory a transport has
 * made ready to move without a copy: a source or a sink on a range of
 * one reads from or lands in it directly, as memory does, and tells a
 * transport that can use the registration which one it is. Neither a
 * source nor a sink is shared between threads.
 */
#ifndef MC_BULK_H
#define MC_BULK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum mc_bulk_kind {
	MC_BULK_MEM,	/* bytes in memory */
	MC_BULK_FD,	/* bytes [off, off + len) of a file descriptor */
	MC_BULK_REGION, /* bytes [off, off + len) of a registered region */
};

/*
 * A buffer registered with a transport: base and len say where it is,
 * handle what the transport calls it (0 for one that needs nothing, as
 * tcp does). The owner keeps it valid while a source or sink uses it.
 */
struct mc_bulk_region {
	void *base;
	uint64_t len;
	uint64_t handle;
};

#define MC_BULK_CHUNK (256u << 10)

struct mc_bulk_src {
	enum mc_bulk_kind kind;
	uint64_t len;
	const void *data; /* MC_BULK_MEM and MC_BULK_REGION: the first byte */
	int fd;		  /* MC_BULK_FD: a descriptor sendfile reads (a regular file) */
	uint64_t off;	  /* MC_BULK_FD and MC_BULK_REGION: where the bytes begin */
	const struct mc_bulk_region *region; /* MC_BULK_REGION */
};

struct mc_bulk_src mc_bulk_src_mem(const void *data, uint64_t len);
struct mc_bulk_src mc_bulk_src_fd(int fd, uint64_t off, uint64_t len);
/* The range [off, off + len) of r; -1 with EINVAL when r does not hold it. */
int mc_bulk_src_region(struct mc_bulk_src *s, const struct mc_bulk_region *r, uint64_t off,
		       uint64_t len);

struct mc_bulk_sink {
	enum mc_bulk_kind kind;
	uint64_t len;
	void *data;   /* MC_BULK_MEM and MC_BULK_REGION: where the first byte lands */
	int fd;	      /* MC_BULK_FD: a descriptor pwrite writes (a regular file) */
	uint64_t off; /* MC_BULK_FD and MC_BULK_REGION: where the bytes go */
	const struct mc_bulk_region *region; /* MC_BULK_REGION */
	/* optional: called with every committed span, in order */
	void (*tap)(const void *p, size_t n, void *arg);
	void *tap_arg;
	/* private: a descriptor's staging buffer */
	char *stage_;
};

void mc_bulk_sink_mem(struct mc_bulk_sink *s, void *data, uint64_t len);
void mc_bulk_sink_fd(struct mc_bulk_sink *s, int fd, uint64_t off, uint64_t len);
/* Into the range [off, off + len) of r; -1 with EINVAL when r does not hold it. */
int mc_bulk_sink_region(struct mc_bulk_sink *s, const struct mc_bulk_region *r, uint64_t off,
			uint64_t len);
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
