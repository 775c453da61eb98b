/*
 * The names a request gives (see names.h).
 */
#include <ctype.h>
#include <string.h>

#include "mc/proto.h"
#include "mc/wire.h"

#include "names.h"

int
name_get(const msgpack_object *params, const char *field, size_t max, const char *dflt,
	 struct name *out, struct mc_err *err)
{
	const msgpack_object *o = mc_map_get(params, field);

	if (!o || o->type == MSGPACK_OBJECT_NIL) {
		if (!dflt)
			return mc_err_set(err, MC_ERR_INVALID, "missing field '%s'", field);
		out->p = dflt;
		out->len = strlen(dflt);
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_STR) {
		out->p = o->via.str.ptr;
		out->len = o->via.str.size;
	} else if (o->type == MSGPACK_OBJECT_BIN) {
		out->p = o->via.bin.ptr;
		out->len = o->via.bin.size;
	} else {
		return mc_err_set(err, MC_ERR_INVALID, "field '%s' must be a string", field);
	}
	if (out->len == 0 || out->len > max)
		return mc_err_set(err, MC_ERR_INVALID, "field '%s' of %zu bytes is outside 1..%zu",
				  field, out->len, max);
	return 0;
}

int
name_target(const msgpack_object *params, struct name *tenant, struct name *key, struct mc_err *err)
{
	if (name_get(params, "tenant", MC_NAME_MAX, MC_DEFAULT_TENANT, tenant, err) < 0)
		return -1;
	return name_get(params, "key", MC_KEY_MAX, NULL, key, err);
}

const char *
name_show(const struct name *k, char *buf, size_t cap)
{
	size_t i, n = k->len < cap - 4 ? k->len : cap - 4;

	for (i = 0; i < n; i++)
		buf[i] = isprint((unsigned char)k->p[i]) ? k->p[i] : '?';
	if (n < k->len) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}
