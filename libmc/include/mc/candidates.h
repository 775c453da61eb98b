/*
 * The candidate view: one light record per evictable copy, what an
 * eviction policy plans over (the hierarchical eviction seed).
 *
 * A record names the copy for revalidation (tenant, key, version, peer,
 * tier) and carries the attributes policies split and rank by. It holds
 * no replica lists and no full metadata. In memory a view keeps its
 * records compact: names (tenants, types, groups, peers, tiers, domains)
 * are interned into one table and referred to by id, keys live in one
 * arena, so a 10M-candidate view is a few flat arrays.
 *
 * Logical time: the master numbers every access (a read, or a write
 * that creates or replaces an object) with one counter. A record carries
 * the number of its object's last access (access_seq) and of its
 * creation (created_seq), and the view the counter's value when it was
 * taken (seq). Rankers order by these when the view has them (seq != 0),
 * so a replay's speed and the clock's resolution do not change a plan;
 * the millisecond times remain for people. A view with seq 0 (an older
 * stream, a hand-made fixture) is ranked by the milliseconds.
 *
 * The stream form (pipes and files, man/mc-candidates.5): a header record
 * {format: "mc-candidates", version: 1, created: ms, count?, seq?} then
 * one msgpack map per candidate:
 *   {key: str|bin, version, tenant, type, group?, peer, tier, domain?,
 *    bytes, created, last_access, access_count, lease_expiry,
 *    soft_pin_deadline, cost?, access_seq?, created_seq?}
 * (times in ms since the epoch, 0 for none; cost a float, absent for
 * none; the header's seq and the records' sequences are written only by
 * a view whose seq is not 0, and read as 0 when absent). Readers ignore
 * fields they do not know; every record passes the wire pre-pass first;
 * a bad stream fails naming the record number.
 */
#ifndef MC_CANDIDATES_H
#define MC_CANDIDATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mc/err.h"

#define MC_CAND_FORMAT "mc-candidates"
#define MC_CAND_VERSION 1
#define MC_CAND_NO_NAME 0 /* name id 0 is the empty name: "no group" */
#define MC_CAND_ORPHAN 1u
#define MC_CAND_PROBATION 2u

struct mc_cand {
	uint64_t version;
	uint64_t bytes;
	uint64_t created, last_access, access_count;
	uint64_t lease_expiry, soft_pin_deadline;
	/* the master's access sequence at the last access and at creation; 0: none */
	uint64_t access_seq, created_seq;
	/*
	 * The key's LRFU value at the view's time, as its builder keeps it
	 * (mc/history.h): references weighed by 2^-(age / half-life), the
	 * value of an evicted copy resumed when its key comes back; 0 when
	 * the builder keeps none.
	 */
	double crf;
	/*
	 * Its place in a prefix chain (a put may name its parent): depth 0
	 * for a head or a block outside any chain, the number of cached
	 * children that name it, and flags: MC_CAND_ORPHAN (its parent is
	 * not cached: it cannot be reached as a prefix), MC_CAND_PROBATION
	 * (written with no history of its key, not read since).
	 */
	uint32_t depth, children;
	uint32_t flags;
	double cost;	  /* recompute-cost hint; < 0 when none */
	uint64_t key_off; /* into the view's key arena */
	uint32_t key_len;
	uint32_t tenant, type, group, peer, tier, domain; /* name ids */
};

struct mc_cand_view {
	struct mc_cand *c;
	size_t n, cap;
	char *keys; /* key arena */
	uint64_t keys_len, keys_cap;
	/* interned names: id -> string; id 0 is "" */
	char **names;
	uint32_t *name_lens;
	uint32_t nnames, names_cap;
	void *name_index; /* private: name -> id */
	uint64_t created;
	uint64_t seq; /* the master's access sequence when taken; 0: no sequences */
};

void mc_cand_view_init(struct mc_cand_view *v);
void mc_cand_view_free(struct mc_cand_view *v);

/* Intern a name (1..MC_NAME_MAX bytes, or empty for id 0); -1 on failure. */
int64_t mc_cand_name(struct mc_cand_view *v, const char *s, size_t len, struct mc_err *err);
static inline const char *
mc_cand_name_str(const struct mc_cand_view *v, uint32_t id)
{
	return v->names[id];
}

/*
 * Room for n records in all, made at once: a caller that knows about how
 * many it will add (a round's window) saves the copies of growing the
 * array one doubling at a time. 0, or -1 out of memory (v unchanged).
 */
int mc_cand_view_reserve(struct mc_cand_view *v, size_t n, struct mc_err *err);

/*
 * Append a candidate: the caller fills c's numbers and name ids, key
 * bytes are copied into the arena (c->key_off/key_len are set here).
 */
int mc_cand_add(struct mc_cand_view *v, const struct mc_cand *c, const char *key, size_t key_len,
		struct mc_err *err);
static inline const char *
mc_cand_key(const struct mc_cand_view *v, const struct mc_cand *c)
{
	return v->keys + c->key_off;
}

/* The sum of the candidates' bytes, saturating: what "20%" of a view is of. */
uint64_t mc_cand_view_bytes(const struct mc_cand_view *v);

/* ---- streams ---- */

/* Write the header and every record of v to f; json: JSON lines instead. */
int mc_cand_write(FILE *f, const struct mc_cand_view *v, bool json, struct mc_err *err);
/*
 * Read a whole stream (msgpack, or JSON lines when json) from f into v
 * (initialised by the caller). -1 with err naming the record on bad input.
 */
int mc_cand_read(FILE *f, struct mc_cand_view *v, bool json, struct mc_err *err);

#endif
