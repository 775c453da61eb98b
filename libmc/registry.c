/*
 * The method registry (mc/conn.h: mc_registry_*, mc_method_flags_str):
 * a daemon's tables of methods, found by name, one entry per method
 * with its counters. The dispatcher (conn.c) finds the entry of each
 * request here, has the daemon authorize it and counts its answer, so
 * handlers never do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_impl.h"
#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/metrics.h"
struct mc_registry {
	struct mc_metrics *metrics;
	struct reg_entry *v;
	size_t n, cap;
};

struct mc_registry *
mc_registry_new(struct mc_metrics *metrics, struct mc_err *err)
{
	struct mc_registry *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the method registry");
		return NULL;
	}
	r->metrics = metrics;
	return r;
}

int
mc_registry_add(struct mc_registry *r, const struct mc_method *table, struct mc_err *err)
{
	for (const struct mc_method *m = table; m->name != NULL; m++) {
		struct reg_entry *e;

		if (mc_registry_find(r, m->name, strlen(m->name)) != NULL)
			return mc_err_set(err, MC_ERR_INTERNAL, "method '%s' registered twice",
					  m->name);
		if (r->n == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 32;
			struct reg_entry *v = realloc(r->v, cap * sizeof(*v));

			if (v == NULL)
				return mc_err_set(err, MC_ERR_NO_SPACE,
						  "out of memory for the method registry");
			r->v = v;
			r->cap = cap;
		}
		e = &r->v[r->n];
		*e = (struct reg_entry){ .m = m, .len = strlen(m->name) };
		if (r->metrics != NULL) {
			e->st.requests =
				mc_metric_get(r->metrics, "mc_requests_total", MC_COUNTER,
					      "Requests received, by method.", "method", m->name);
			e->st.failures = mc_metric_get(
				r->metrics, "mc_request_failures_total", MC_COUNTER,
				"Requests answered with an error, by method.", "method", m->name);
			e->st.seconds = mc_metric_get(
				r->metrics, "mc_request_seconds", MC_HISTOGRAM,
				"Time from a request's arrival to its answer, by method.", "method",
				m->name);
			e->st.denied =
				mc_metric_get(r->metrics, "mc_requests_denied_total", MC_COUNTER,
					      "Requests refused for the caller's role, by method.",
					      "method", m->name);
			if (e->st.requests == NULL || e->st.failures == NULL ||
			    e->st.seconds == NULL || e->st.denied == NULL)
				return mc_err_set(err, MC_ERR_NO_SPACE,
						  "out of memory for the method metrics");
		}
		r->n++;
	}
	return 0;
}

void
mc_registry_free(struct mc_registry *r)
{
	if (r == NULL)
		return;
	free(r->v);
	free(r);
}

const struct reg_entry *
mc_cn_registry_entry(const struct mc_registry *r, const char *name, size_t len)
{
	/* tens of methods: a scan of lengths first is as quick as a hash */
	for (size_t i = 0; r != NULL && i < r->n; i++)
		if (r->v[i].len == len && memcmp(r->v[i].m->name, name, len) == 0)
			return &r->v[i];
	return NULL;
}

const struct mc_method *
mc_registry_find(const struct mc_registry *r, const char *name, size_t len)
{
	const struct reg_entry *e = mc_cn_registry_entry(r, name, len);

	return e != NULL ? e->m : NULL;
}

bool
mc_registry_serves(const struct mc_registry *r, const char *name)
{
	return mc_registry_find(r, name, strlen(name)) != NULL && !mc_fault2_always("method", name);
}

size_t
mc_registry_count(const struct mc_registry *r)
{
	return r != NULL ? r->n : 0;
}

const struct mc_method *
mc_registry_at(const struct mc_registry *r, size_t i)
{
	return r != NULL && i < r->n ? r->v[i].m : NULL;
}

const char *
mc_method_flags_str(unsigned flags, char *buf, size_t cap)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{ MC_METHOD_ADMIN, "admin" }, { MC_METHOD_PEER, "peer" },
		{ MC_METHOD_BULK, "bulk" },   { MC_METHOD_READ_ONLY, "read-only" },
		{ MC_METHOD_OPEN, "open" },
	};
	size_t len = 0;

	if (cap == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].bit)
			len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s",
						len ? "," : "", names[i].name);
	return buf;
}

void
mc_registry_print(const struct mc_registry *r, FILE *f)
{
	char flags[64];

	for (size_t i = 0; i < mc_registry_count(r); i++) {
		const struct mc_method *m = mc_registry_at(r, i);

		if (!mc_registry_serves(r, m->name))
			continue;
		mc_method_flags_str(m->flags, flags, sizeof(flags));
		fprintf(f, "%s %s\n", m->name, flags[0] ? flags : "-");
	}
}

/* Count an answer (or a notification handled): failed when it was an error. */
void
mc_cn_count_answer(struct mc_req *req, bool failed)
{
	const struct mc_method_stats *st = req->stats_;

	if (st == NULL || st->requests == NULL)
		return;
	if (failed)
		mc_metric_inc(st->failures);
	mc_metric_observe(st->seconds, (double)(mc_mono_ns() - req->t0_ns_) / 1e9);
	req->stats_ = NULL; /* once */
}

/*
 * Ask the daemon whether the caller may make this call; a refusal is
 * answered here, as permission denied, and counted per method.
 */
bool
mc_cn_authorized(struct mc_req *r, const struct mc_conn_ops *ops)
{
	struct mc_err err;

	if (ops->authorize(r, &err) == 0)
		return true;
	if (r->stats_ != NULL && r->stats_->denied != NULL)
		mc_metric_inc(r->stats_->denied);
	if (!r->notify)
		mc_reply_err(r, MC_ERR_PERMISSION, "permission denied: %s", err.msg);
	return false;
}
