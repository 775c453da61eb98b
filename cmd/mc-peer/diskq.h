/*
 * The disk queue: the SSD medium's blocking I/O (a client's write and
 * its seal, a header written again, a cold read) runs on worker threads,
 * and its completion comes back on the event loop, so a DRAM get never
 * waits behind the disk (DESIGN section 6).
 *
 * Bytes cross between the loop and a worker in staging buffers drawn
 * from one budget: a write's bulk lands in one from the socket, a cold
 * read's worker fills one that the reply then sends. When the budget is
 * spent, diskq_stage refuses and the caller falls back to streaming on
 * the loop (a bounded staging window and sendfile), counted in
 * loop_writes and loop_reads: the memory a burst of large copies may
 * hold stays bounded, and nothing is refused.
 *
 * Jobs run on two lanes. Data (writes, reads) has two workers; headers
 * written again (pins changed on a committed copy) have one, so that two
 * changes to one copy's header reach the disk in the order they were
 * made. A job holds whatever its copy needs alive (the caller's
 * reference); diskq_free runs every job queued to its end, completions
 * included, so a clean stop loses no header it accepted.
 */
#ifndef MC_PEER_DISKQ_H
#define MC_PEER_DISKQ_H

#include <event2/event.h>
#include <stdint.h>

#include "mc/err.h"

#include "medium.h"

struct diskq;

/* What the queue did, for metrics; read on the loop. */
struct diskq_stats {
	uint64_t writes, reads, seals; /* jobs completed, by kind */
	uint64_t failed;	       /* of them, failed or cancelled */
	uint64_t loop_writes;	       /* writes streamed on the loop: the budget was spent */
	uint64_t loop_reads;	       /* reads sent from the loop (sendfile), likewise */
	uint64_t staged_bytes;	       /* staging held now */
	uint64_t stage_max;	       /* the budget */
};

/*
 * A finished job, on the loop: err NULL when it succeeded. For a store
 * that computed the checksum, *sum holds it.
 */
typedef void (*diskq_done_fn)(void *arg, const struct mc_err *err);

/* A queue whose completions run on base, with stage_max bytes of staging. */
struct diskq *diskq_new(struct event_base *base, uint64_t stage_max, struct mc_err *err);
/* Run every queued job and its completion to the end, then free; NULL is fine. */
void diskq_free(struct diskq *q);

/*
 * A page-aligned staging buffer of len bytes from the budget, or NULL
 * when the budget (or memory) cannot give it. diskq_unstage gives it back.
 */
void *diskq_stage(struct diskq *q, uint64_t len);
void diskq_unstage(struct diskq *q, void *buf, uint64_t len);
/* Count a copy the loop streamed itself (write) or sent with sendfile (read). */
void diskq_count_loop(struct diskq *q, bool write);

/*
 * Write the len bytes of buf at off of m, then seal them with meta (NULL:
 * no seal); with sum non-NULL, first hash buf into *sum and seal that as
 * meta's checksum. meta is copied, its names are not: they, buf and sum
 * stay valid until done. done may run before the call returns, when the
 * queue is full and the job ran on the loop.
 */
void diskq_store(struct diskq *q, struct medium *m, uint64_t off, const void *buf, uint64_t len,
		 const struct medium_meta *meta, uint64_t *sum, diskq_done_fn done, void *arg);
/* Read the len bytes at off of m into buf, then done; as diskq_store. */
void diskq_load(struct diskq *q, struct medium *m, uint64_t off, uint64_t len, void *buf,
		diskq_done_fn done, void *arg);
/*
 * Seal the copy of len bytes at off of m again with meta, in the order
 * of the calls; meta's names are copied. done may be NULL (a failure is
 * logged).
 */
void diskq_reseal(struct diskq *q, struct medium *m, uint64_t off, uint64_t len,
		  const struct medium_meta *meta, diskq_done_fn done, void *arg);

void diskq_stats(const struct diskq *q, struct diskq_stats *out);

#endif
