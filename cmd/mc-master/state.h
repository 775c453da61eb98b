/*
 * The one door for the master's state: every object, replica, group,
 * pin and lease that is created, changed or dropped goes through a
 * state_* call, which changes the store (store.h) and then tells each
 * subscriber one typed record of what changed. Built in: a counter per
 * kind (mc_state_changes_total) and a debug log line per change; the
 * standby master will follow the same records.
 *
 * What is not state here: the recency of accesses (store_access and
 * friends), the peers' byte accounting (ops.h), and the bookkeeping of
 * a write in progress beyond its begin and end.
 *
 * Dynamic hot replication's state is here too: the recreate cooldowns
 * (cooldown.h, a table the door keeps), and the leases of dynamic
 * copies, which copies.c keeps in its own table and tells through the
 * door as it installs and ends them.
 *
 * A restore replaces the whole store at once: subscribers hear a reset,
 * then the new store told again as creations (state_restored).
 */
#ifndef MASTER_STATE_H
#define MASTER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "cooldown.h"
#include "store.h"
#include "tasks.h"

struct master;

/* X(constant, name in the metric's kind label and the log) */
#define STATE_CHANGE_KINDS(X)                   \
	X(STATE_OBJECT_CREATE, "object_create") \
	X(STATE_OBJECT_SET, "object_set")       \
	X(STATE_OBJECT_DROP, "object_drop")     \
	X(STATE_WRITE_BEGIN, "write_begin")     \
	X(STATE_WRITE_END, "write_end")         \
	X(STATE_REPLICA_ADD, "replica_add")     \
	X(STATE_REPLICA_SET, "replica_set")     \
	X(STATE_REPLICA_DROP, "replica_drop")   \
	X(STATE_GROUP_CREATE, "group_create")   \
	X(STATE_GROUP_DROP, "group_drop")       \
	X(STATE_PIN_SET, "pin_set")             \
	X(STATE_LEASE_SET, "lease_set")         \
	X(STATE_COPY_LEASE, "copy_lease")       \
	X(STATE_COOLDOWN_SET, "cooldown_set")   \
	X(STATE_RESET, "reset")

#define STATE_KIND_ENUM(k, name) k,
enum state_change_kind { STATE_CHANGE_KINDS(STATE_KIND_ENUM) STATE_KIND_COUNT };
#undef STATE_KIND_ENUM

/* Subscribers beyond the two built in. */
#define STATE_SUBSCRIBERS_MAX 8

/* An object's own fields, as a change record carries them. */
struct state_obj {
	uint64_t version; /* committed (readers see it), or the first write's */
	uint64_t size;
	uint64_t checksum;
	uint64_t committed; /* ms of the commit (mc/young.h), 0: not known */
	uint64_t lease_deadline;
	uint64_t sp_deadline, sp_ttl;
	uint32_t type;
	uint8_t sp_mode; /* enum sp_mode */
	bool hard_pin;
};

/* A dynamic copy's lease (copies.h), as a COPY_LEASE record carries it. */
struct state_copy_lease {
	uint64_t id, task, version, expiry; /* expiry: mc_now_ms() */
	uint32_t src, dst;		    /* peer ids */
	const char *domain;		    /* the target domain, "" for any */
	const char *proposal;		    /* the proposal id, "" for admission's own */
	bool live;			    /* installed (true) or ended (false) */
	const char *outcome;		    /* how it ended: "completed", "expired", ... */
};

/*
 * One change. Pointers (object, key, group name) are good for the
 * call only: a subscriber that keeps them copies them. For a drop the
 * record comes just before the object is freed, so o is still whole.
 */
struct state_change {
	enum state_change_kind kind;
	const struct mobj *o; /* NULL for a reset */
	uint32_t tenant;
	const char *key;
	size_t key_len;
	const char *group; /* o's group (the group, for GROUP_*), NULL: none */
	size_t group_len;
	/* the object's fields before and after (zero before a create, after a drop) */
	struct state_obj was, now;
	/* REPLICA_*: the copy before and after (zero before an add, after a drop) */
	struct mrep rep_was, rep;
	/* WRITE_*: the version being written and its size */
	uint64_t write_version, write_size;
	/* COPY_LEASE: the lease installed or ended */
	const struct state_copy_lease *lease;
	/* COOLDOWN_SET: the domain no dynamic replica is made in until then (mc_now_ms()) */
	const char *domain;
	uint64_t until;
};

typedef void (*state_fn)(const struct state_change *c, void *arg);

struct state {
	struct {
		state_fn fn;
		void *arg;
	} subs[STATE_SUBSCRIBERS_MAX];
	unsigned nsubs;
	uint64_t counts[STATE_KIND_COUNT];
	struct cooldowns cooldowns;
	uint64_t dynamic_replicas; /* readable ones, in the whole store */
};

/* Start the module (its counters' collector included); -1 with err. */
int state_init(struct master *m, struct mc_err *err);
void state_free(struct master *m);

/* Hear every change from now on; -1 when STATE_SUBSCRIBERS_MAX listen already. */
int state_subscribe(struct master *m, state_fn fn, void *arg);
void state_unsubscribe(struct master *m, state_fn fn, void *arg);
const char *state_kind_name(enum state_change_kind kind);
/* Changes of kind told so far (what mc_state_changes_total says). */
uint64_t state_count(const struct master *m, enum state_change_kind kind);

/* o's fields, to change a few and hand back to state_object_set. */
struct state_obj state_obj_of(const struct mobj *o);

/*
 * A new object with no replicas, with f's fields (its size counted in
 * its tenant's totals); group may be NULL. NULL with err on failure,
 * and then nothing changed.
 */
struct mobj *state_object_create(struct master *m, uint64_t hash, uint32_t tenant, const char *key,
				 size_t len, const char *group, size_t group_len,
				 const struct state_obj *f, struct mc_err *err);
/* Give o the fields of f (a commit, a newer copy adopted). */
void state_object_set(struct master *m, struct mobj *o, const struct state_obj *f);
/*
 * Unlink and free o with its write in progress; its replicas are the
 * caller's business (ops_obj_erase). cursor: non-NULL inside a walk of
 * the object table (mc_htab_remove_at).
 */
void state_object_drop(struct master *m, struct mobj *o, size_t *cursor);

/* A write of o begins, with w's fields (its o is ignored); NULL with err. */
struct pending *state_write_begin(struct master *m, struct mobj *o, const struct pending *w,
				  struct mc_err *err);
void state_write_end(struct master *m, struct mobj *o);

/* A new replica of o, a copy of r; NULL when out of memory or o is full. */
struct mrep *state_replica_add(struct master *m, struct mobj *o, const struct mrep *r);
/* Replica r of o becomes to (its state, tier, peer, flags). */
void state_replica_set(struct master *m, struct mobj *o, struct mrep *r, const struct mrep *to);
/* Remove replica i of o (the order of the rest is not kept). */
void state_replica_drop(struct master *m, struct mobj *o, unsigned i);

/* o's soft pin: its mode, deadline and TTL (ms). */
void state_pin_set(struct master *m, struct mobj *o, int mode, uint64_t deadline, uint64_t ttl);
/* o's read lease runs to deadline (ms). */
void state_lease_set(struct master *m, struct mobj *o, uint64_t deadline);

/*
 * No dynamic replica of o is made in domain ("" for a peer without one)
 * until until (mc_now_ms()): one was evicted from it.
 */
void state_cooldown_set(struct master *m, const struct mobj *o, const char *domain, uint64_t until);
/* When o's cooldown in domain ends, if it runs at now; 0: none. */
uint64_t state_cooldown_until(const struct master *m, const struct mobj *o, const char *domain,
			      uint64_t now);
/* Readable dynamic replicas in the store now. */
uint64_t state_dynamic_replicas(const struct master *m);
/* The cooldown table, for its counts and a listing. */
const struct cooldowns *state_cooldowns(const struct master *m);
/* A dynamic copy's lease was installed or ended (l->live), on o (NULL: gone already). */
void state_copy_lease(struct master *m, const struct mobj *o, const struct state_copy_lease *l);

/* m->store was just replaced whole: a reset, then every group, object and replica in it. */
void state_restored(struct master *m);

/*
 * For a store that nobody follows yet (the one a restore builds):
 * the same changes, told to no one. state_restored tells them after.
 */
struct mobj *state_load_object(struct store *s, uint64_t hash, uint32_t tenant, const char *key,
			       size_t len, const char *group, size_t group_len,
			       const struct state_obj *f, struct mc_err *err);
int state_load_replica(struct mobj *o, const struct mrep *r);

/* The door as a module, started before any that changes state (start.c runs every module's). */
struct master_module;
extern const struct master_module state_module;

#endif
