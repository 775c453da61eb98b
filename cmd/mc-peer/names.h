/*
 * The names a request gives (names.c): a tenant, a key, a tier, read
 * from a msgpack map without copying, and a key shown in a message. The
 * data plane and the master's tasks address copies the same way.
 */
#ifndef MC_PEER_NAMES_H
#define MC_PEER_NAMES_H

#include <msgpack.h>
#include <stddef.h>

#include "mc/err.h"

/* Bytes inside the message they came in: valid as long as it is. */
struct name {
	const char *p;
	size_t len;
};

/*
 * A string (or bin, for byte-string keys) field of 1..max bytes. An
 * absent field takes dflt, or is an error when dflt is NULL.
 */
int name_get(const msgpack_object *params, const char *field, size_t max, const char *dflt,
	     struct name *out, struct mc_err *err);
/* tenant (default "default") and key, the address of every data-plane call and task. */
int name_target(const msgpack_object *params, struct name *tenant, struct name *key,
		struct mc_err *err);
/* A key for an error message: printable bytes, the rest as '?', cut short. */
const char *name_show(const struct name *k, char *buf, size_t cap);

#endif
