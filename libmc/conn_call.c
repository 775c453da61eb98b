/*
 * The calls a connection makes itself (mc/conn.h: mc_conn_begin,
 * mc_conn_call, mc_conn_notify): each request queued with its id, and
 * the callback its answer, its timeout or the connection's end runs,
 * exactly once. conn.c frames the input and hands every response here.
 */
#include <stdio.h>
#include <stdlib.h>

#include "conn_impl.h"
#include "mc/log.h"
#include "mc/wire.h"

struct call {
	struct call *prev, *next;
	struct mc_conn *conn;
	uint32_t id;
	char method[48];
	int timeout_ms;
	mc_call_cb cb;
	void *arg;
	struct event *timer;
};

static void
call_free(struct call *k)
{
	if (k->timer != NULL)
		event_free(k->timer);
	free(k);
}

static void
call_unlink(struct mc_conn *c, struct call *k)
{
	if (k->prev != NULL)
		k->prev->next = k->next;
	else
		c->calls = k->next;
	if (k->next != NULL)
		k->next->prev = k->prev;
	else
		c->calls_tail = k->prev;
	k->prev = k->next = NULL;
}

void
mc_cn_call_answered(struct mc_conn *c, const struct mc_msg *m)
{
	struct call *k;

	for (k = c->calls; k != NULL; k = k->next)
		if (k->id == m->id)
			break;
	if (k == NULL) {
		mc_debug("%s: ignoring response to unknown call %u", c->name, m->id);
		return;
	}
	call_unlink(c, k);
	k->cb(c, m, NULL, k->arg);
	call_free(k);
}

void
mc_cn_calls_fail(struct mc_conn *c)
{
	struct mc_err err;

	while (c->calls != NULL) {
		struct call *k = c->calls;

		call_unlink(c, k);
		mc_err_set(&err, MC_ERR_UNAVAILABLE, "connection to %s closed", c->name);
		k->cb(c, NULL, &err, k->arg);
		call_free(k);
	}
}

static void
on_call_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct call *k = arg;
	struct mc_conn *c = k->conn;
	struct mc_err err;

	(void)fd;
	(void)what;
	mc_cn_ref(c);
	call_unlink(c, k);
	mc_err_set(&err, MC_ERR_TIMEOUT, "call '%s' to %s timed out after %d ms", k->method,
		   c->name, k->timeout_ms);
	k->cb(c, NULL, &err, k->arg);
	call_free(k);
	mc_cn_unref(c);
}

msgpack_packer *
mc_conn_begin(struct mc_conn *c, const char *method)
{
	msgpack_sbuffer_clear(&c->req);
	snprintf(c->req_method, sizeof(c->req_method), "%s", method);
	return &c->req_pk;
}

/* The header [type, (id,) method], then the params begun, queued. */
static int
queue_begun(struct mc_conn *c, uint32_t id, bool notify)
{
	msgpack_packer pk;

	if (c->req_method[0] == '\0')
		return -1;
	msgpack_sbuffer_clear(&c->scratch);
	c->last_add = 0;
	msgpack_packer_init(&pk, &c->scratch, msgpack_sbuffer_write);
	if (notify)
		mc_pack_notify(&pk, c->req_method);
	else
		mc_pack_request(&pk, id, c->req_method);
	if (c->req.size == 0)
		msgpack_pack_map(&pk, 0);
	else if (msgpack_sbuffer_write(&c->scratch, c->req.data, c->req.size) != 0)
		return -1;
	c->req_method[0] = '\0'; /* sent: the next call begins again */
	c->last_add = c->scratch.size;
	return mc_cn_out_copy(c, c->scratch.data, c->scratch.size);
}

int
mc_conn_call(struct mc_conn *c, int timeout_ms, mc_call_cb cb, void *cb_arg)
{
	struct call *k;

	if (c == NULL || c->closed || c->closing || cb == NULL)
		return -1;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return -1;
	k->conn = c;
	k->id = c->next_id++;
	if (c->next_id == 0)
		c->next_id = 1;
	snprintf(k->method, sizeof(k->method), "%s", c->req_method);
	k->timeout_ms = timeout_ms;
	k->cb = cb;
	k->arg = cb_arg;
	if (timeout_ms > 0) {
		struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

		k->timer = evtimer_new(c->base, on_call_timeout, k);
		if (k->timer == NULL || evtimer_add(k->timer, &tv) < 0) {
			call_free(k);
			return -1;
		}
	}
	if (queue_begun(c, k->id, false) < 0) {
		call_free(k);
		return -1;
	}
	k->prev = c->calls_tail;
	if (c->calls_tail != NULL)
		c->calls_tail->next = k;
	else
		c->calls = k;
	c->calls_tail = k;
	mc_cn_ref(c);
	mc_cn_kick(c);
	mc_cn_unref(c);
	return 0;
}

int
mc_conn_notify(struct mc_conn *c)
{
	bool closed;

	if (c == NULL || c->closed || c->closing)
		return -1;
	if (queue_begun(c, 0, true) < 0)
		return -1;
	mc_cn_ref(c);
	mc_cn_kick(c);
	/*
	 * A send that failed closed the connection, and the last reference
	 * may go with ours: the caller hears -1 and must not touch it again.
	 */
	closed = c->closed;
	mc_cn_unref(c);
	return closed ? -1 : 0;
}
