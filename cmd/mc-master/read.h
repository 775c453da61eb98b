/*
 * The read-side object calls (get_replica_list, its batch, read_raced),
 * and the lookups objects.c's calls share with them. Every field read
 * from a request is checked for type and range before use.
 */
#ifndef MASTER_READ_H
#define MASTER_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "mc/wire.h"

struct master;
struct mobj;

/* A str or bin object as bytes; -1 for anything else. */
int read_bytes(const msgpack_object *o, const char **s, size_t *len);
/* The keys array of a batch call, or NULL with err. */
const msgpack_object_array *read_need_keys(const msgpack_object *params, struct mc_err *err);
/* One item's error in a batch answer: {code, msg}. */
void read_pack_err(msgpack_packer *pk, int code, const char *msg);
/* The object of (tenant, key), or NULL. */
struct mobj *read_lookup(struct master *m, uint32_t tenant, const char *key, size_t len);
/* Whether o has a complete replica of its current version. */
bool read_has_complete(const struct mobj *o);
/* Whether o's read lease is held at now. */
bool read_leased(const struct mobj *o, uint64_t now);

/* The methods this module serves (in its module table). */
extern const struct mc_method read_methods[];

/* The read calls as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module read_module;

#endif
