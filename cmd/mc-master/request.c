/*
 * Request helpers shared by the master's handlers (request.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mc/wire.h"
#include "request.h"

/* A connection that never said hello speaks for the default tenant. */
static const struct client default_client;

void
handler_fail(struct mc_req *req, enum method k, int code, const char *fmt, ...)
{
	struct master *m = req->ctx;
	char msg[MC_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mmetrics_failure(&m->mx, k);
	mc_reply_err(req, code, "%s", msg);
}

void
req_fail_err(struct mc_req *req, enum method k, const struct mc_err *err)
{
	handler_fail(req, k, err->code, "%s", err->msg);
}

const struct client *
req_client(const struct mc_req *req)
{
	const struct client *c = mc_conn_data(req->conn);

	return c != NULL ? c : &default_client;
}

struct client *
req_client_get(struct mc_req *req)
{
	struct client *c = mc_conn_data(req->conn);

	if (c != NULL)
		return c;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	mc_conn_set_data(req->conn, c, free);
	return c;
}

int
req_need_u64(const msgpack_object *params, const char *name, uint64_t *out, struct mc_err *err)
{
	int rc = mc_map_u64(params, name, out, err);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return mc_err_set(err, MC_ERR_INVALID, "missing field '%s'", name);
	return 0;
}
