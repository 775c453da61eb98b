/*
 * The table of transports, and the choice between two ends' lists
 * (mc/transport.h).
 */
#include <string.h>

#include "mc/transport.h"
#include "mc/wire.h"

/*
 * Every transport this library has, in the order it prefers them (the
 * order its ends advertise). A new transport is one file and one line.
 */
static const struct mc_transport *const transports[] = {
	&mc_transport_tcp,
};

#define NTRANSPORTS (sizeof(transports) / sizeof(transports[0]))

void
mc_tconn_wrap(struct mc_tconn *tc, const struct mc_transport *t, int fd)
{
	tc->t = t != NULL ? t : &mc_transport_tcp;
	tc->fd = fd;
	tc->priv = NULL;
}

const struct mc_transport *
mc_transport_find(const char *name, size_t len)
{
	for (size_t i = 0; i < NTRANSPORTS; i++)
		if (strlen(transports[i]->name) == len &&
		    memcmp(transports[i]->name, name, len) == 0)
			return transports[i];
	return NULL;
}

void
mc_transport_list_default(struct mc_transport_list *l)
{
	memset(l, 0, sizeof(*l));
	l->n = 1;
	memcpy(l->name[0], "tcp", 4);
}

int
mc_transport_list_read(const msgpack_object *params, struct mc_transport_list *l,
		       struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(params, "transports");

	mc_transport_list_default(l);
	if (a == NULL)
		return mc_map_get(params, "transports") == NULL
			       ? 0
			       : mc_err_set(err, MC_ERR_INVALID,
					    "field 'transports' must be an array of names");
	l->n = 0;
	for (uint32_t i = 0; i < a->size; i++) {
		const msgpack_object *e = &a->ptr[i];

		if (e->type != MSGPACK_OBJECT_STR)
			return mc_err_set(err, MC_ERR_INVALID, "transports[%u] is not a name", i);
		if (l->n == MC_TRANSPORTS_MAX || e->via.str.size == 0 ||
		    e->via.str.size > MC_TRANSPORT_NAME_MAX)
			continue;
		memcpy(l->name[l->n], e->via.str.ptr, e->via.str.size);
		l->name[l->n][e->via.str.size] = '\0';
		l->n++;
	}
	return 0;
}

void
mc_transport_pack_ours(msgpack_packer *pk)
{
	mc_pack_key(pk, "transports");
	msgpack_pack_array(pk, NTRANSPORTS);
	for (size_t i = 0; i < NTRANSPORTS; i++)
		mc_pack_cstr(pk, transports[i]->name);
}

static bool
listed(const struct mc_transport_list *l, const char *name)
{
	for (unsigned i = 0; i < l->n; i++)
		if (strcmp(l->name[i], name) == 0)
			return true;
	return false;
}

const char *
mc_transport_choose(const struct mc_transport_list *client, const struct mc_transport_list *peer)
{
	/* an end that advertised nothing has tcp, the fallback returned below */
	if (client == NULL || client->n == 0 || peer == NULL || peer->n == 0)
		return "tcp";
	for (unsigned i = 0; i < client->n; i++)
		if (listed(peer, client->name[i]))
			return client->name[i];
	return "tcp";
}
