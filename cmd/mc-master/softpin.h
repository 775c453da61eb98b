/*
 * Soft pins: a fixed-lifetime eviction-priority hint on an object.
 *
 * A write carries an action (preserve, enable with a TTL, disable) that
 * waits in its pending record and is committed only when that write
 * first makes the object readable. The committed state lives on the
 * object (sp_mode Disabled or Active, sp_deadline); reads never touch
 * it. Active deadlines are registered in a deadline index keyed by the
 * object pointer, and the sweep timer pops only the due ones, clearing
 * a pin only if the object still holds that exact deadline.
 */
#ifndef MASTER_SOFTPIN_H
#define MASTER_SOFTPIN_H

#include <stdbool.h>
#include <stdint.h>

#include <msgpack.h>

#include "mc/conn.h"
#include "mc/deadline.h"
#include "mc/err.h"
#include "mc/metrics.h"

struct master;
struct mobj;
struct pending;

struct softpin {
	struct mc_deadline_index *idx;
	uint64_t active;       /* objects with sp_mode Active: the gauge */
	uint64_t cleanup_runs; /* cleanup cycles run */
	uint64_t expired;      /* pins cleared by cleanup */
	struct mc_metric *m_runs, *m_expired, *m_rebuilds;
};

int softpin_init(struct master *m, struct mc_err *err);
void softpin_free(struct master *m);

/*
 * The write action of a put_start: soft_pin and soft_pin_ttl_ms checked
 * against the master's limits. *action gets an enum sp_action, *ttl the
 * TTL in ms (the default when enable names none; 0 otherwise).
 */
int softpin_parse(const struct master *m, const msgpack_object *params, uint8_t *action,
		  uint64_t *ttl, struct mc_err *err);

/* Whether eviction must treat o as soft-pinned at now. */
bool softpin_protects(const struct mobj *o, uint64_t now);

/*
 * The write p made o readable for the first time: apply its action
 * (enable: Active until now + ttl; disable: Disabled; preserve: keep an
 * unexpired committed pin, else Disabled).
 */
void softpin_commit(struct master *m, struct mobj *o, const struct pending *p, uint64_t now);

/*
 * o, adopted from a peer's copy, had a soft pin until deadline (ms on
 * mc_now_ms()'s clock; 0: none): Active until then when it is still
 * ahead of now, at most --max-soft-pin-ttl away; a deadline past leaves
 * it Disabled. Never a new lifetime.
 */
void softpin_adopt(struct master *m, struct mobj *o, uint64_t deadline, uint64_t now);

/* Milliseconds left of o's active soft pin at now; 0 when it has none. */
uint64_t softpin_remaining(const struct mobj *o, uint64_t now);

/* o is about to be freed: forget its registration and its gauge count. */
void softpin_forget(struct master *m, struct mobj *o);

/*
 * Rebuild the index and the gauge from the objects in the store; expired
 * deadlines become Disabled. After a restore (and after a failed one, so
 * nothing from the rejected file lingers).
 */
void softpin_rebuild(struct master *m);

/* One cleanup cycle: clear every due pin. The number cleared. */
uint64_t softpin_cleanup(struct master *m, uint64_t now);

/* State name as stat and softpin_show report it. */
const char *softpin_state_name(const struct master *m, const struct mobj *o, uint64_t now);

/* The methods this module serves (in its module table). */
extern const struct mc_method softpin_methods[];

/* Soft pins as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module softpin_module;

#endif
