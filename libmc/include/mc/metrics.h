/*
 * Metrics in Prometheus text format, and the small HTTP endpoint that
 * serves them (libevent's evhttp, GET /metrics).
 *
 * A registry holds named families; each family has a type (counter,
 * gauge, histogram), help text, and series told apart by one optional
 * label pair. Counters and gauges are plain uint64/double cells the
 * owner updates directly on its event loop (no atomics needed for
 * single-threaded owners; mc_metric_add_atomic for worker threads).
 * Dynamic values (objects in a table, bytes per tenant) are supplied by
 * a collect callback run just before rendering.
 */
#ifndef MC_METRICS_H
#define MC_METRICS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/addr.h"
#include "mc/err.h"

enum mc_metric_type { MC_COUNTER, MC_GAUGE, MC_HISTOGRAM };

struct mc_metrics;
struct mc_metric; /* one series */

struct mc_metrics *mc_metrics_new(void);
void mc_metrics_free(struct mc_metrics *m);

/*
 * Get or create the series name{label="value"} (label may be NULL for no
 * label; "a,b" with value "x,y" gives two labels, a="x",b="y"). Histograms use the default latency buckets in seconds
 * (50us .. 10s). The returned pointer stays valid until mc_metrics_free.
 */
struct mc_metric *mc_metric_get(struct mc_metrics *m, const char *name, int type, const char *help,
				const char *label, const char *value);
void mc_metric_inc(struct mc_metric *s);
void mc_metric_add(struct mc_metric *s, double v);
void mc_metric_add_atomic(struct mc_metric *s, uint64_t v); /* counters/gauges from threads */
void mc_metric_set(struct mc_metric *s, double v);
/* mc_metric_get's series set to v: what a collector does for each of its values. */
void mc_metric_put(struct mc_metrics *m, const char *name, int type, const char *help,
		   const char *label, const char *value, double v);
double mc_metric_value(const struct mc_metric *s);
void mc_metric_observe(struct mc_metric *s, double seconds); /* histograms */

/* Called before every render so owners can set gauges from live state. */
typedef void (*mc_metrics_collect_fn)(struct mc_metrics *m, void *arg);
void mc_metrics_on_collect(struct mc_metrics *m, mc_metrics_collect_fn fn, void *arg);

/* Render everything into a malloc'd NUL-terminated string (*len its length). */
char *mc_metrics_render(struct mc_metrics *m, size_t *len);

/* Serve GET /metrics (and GET /healthz -> "ok") on addr (host:port only). */
struct mc_http;
struct mc_http *mc_http_start(struct event_base *base, const char *addr, struct mc_metrics *m,
			      struct mc_addr *bound, struct mc_err *err);
void mc_http_stop(struct mc_http *h);

/* The longest --http-token-file token. */
#define MC_HTTP_TOKEN_MAX 256

/*
 * A daemon's --http: addr (a bare ":PORT" or "PORT" binds loopback),
 * token_file (--http-token-file: every request must then carry
 * "Authorization: Bearer TOKEN"; NULL: none), insecure (--insecure).
 * The metrics name tenants and their sizes: an address beyond loopback
 * is refused without a token file unless insecure.
 */
struct mc_http_cfg {
	const char *addr;
	const char *token_file;
	bool insecure;
};
/* mc_http_start under those rules. */
/*
 * cfg->addr as mc_http_serve binds it: a bare port (":9100", "9100") as
 * loopback's, in buf; anything else as given.
 */
const char *mc_http_addr(const char *addr, char *buf, size_t cap);

struct mc_http *mc_http_serve(struct event_base *base, const struct mc_http_cfg *cfg,
			      struct mc_metrics *m, struct mc_addr *bound, struct mc_err *err);

#endif
