/*
 * Young copies: a write is not undone behind its writer's back.
 *
 * A copy is young from its commit until --young (ms) later. Eviction
 * that runs ahead of need (a tier over its high watermark, in a peer's
 * own passes or in the master's rounds) leaves young copies out where it
 * would drop them (a copy moved down to a lower tier is not lost), so a
 * put that returned 0 is still there when its writer reads it back; a
 * tier holding only young copies above its mark stays over it until
 * they age, and the next pass after that takes them. Only a write
 * waiting for room (refused for no space, or a put the master cannot
 * place) may take a young copy, after the old ones it may take, and
 * then the eviction is counted and logged once per pass or round.
 *
 * The peer's passes and the master's rounds both judge with these
 * functions, so the rule is written once.
 */
#ifndef MC_YOUNG_H
#define MC_YOUNG_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The default --young: a put is read back well within it (a client that
 * writes and reads takes milliseconds, a slow one seconds), and it is
 * short beside how long a full cache keeps a copy.
 */
#define MC_YOUNG_DEFAULT_MS 10000

/*
 * Whether a copy committed at committed (mc_now_ms; 0: not known, taken
 * as old) is young at now under --young young_ms (0: nothing is young).
 */
bool mc_young_is(uint64_t young_ms, uint64_t committed, uint64_t now);

/* What one pass or round did about young copies. */
struct mc_young_tally {
	uint64_t kept, kept_bytes;   /* left out: no write waited for their room */
	uint64_t until;		     /* when the first kept copy ages (ms); UINT64_MAX: none kept */
	uint64_t taken, taken_bytes; /* evicted all the same: a write needed their room */
};

void mc_young_tally_init(struct mc_young_tally *t);
/* A copy committed at committed, of bytes, was left out of the pass. */
void mc_young_keep(struct mc_young_tally *t, uint64_t young_ms, uint64_t committed, uint64_t bytes);
/* A young copy of bytes was evicted. */
void mc_young_take(struct mc_young_tally *t, uint64_t bytes);
/*
 * Whether young copies may join a pass: a write waits for room (waiting,
 * the bytes it still lacks) that the old copies the pass may take (old
 * bytes) cannot make.
 */
bool mc_young_needed(uint64_t waiting, uint64_t old);
/*
 * The info line of a pass or round that took young copies, naming where
 * (a tier, a round's scope) and why (MC_YOUNG_FOR_WRITE, or what asked
 * for the round); nothing when it took none.
 */
#define MC_YOUNG_FOR_WRITE "a write needed the room"
void mc_young_log(const struct mc_young_tally *t, const char *where, const char *why);

#endif
