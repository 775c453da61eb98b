/*
 * A metrics registry rendered in the Prometheus text format (0.0.4) and
 * served over evhttp.
 *
 * Series are found through a hash table keyed by (name, label, value),
 * because owners may look series up on every collect (bytes per tenant)
 * and a linear scan would make rendering quadratic. Label values can
 * come from clients (tenant names), so the registry caps its series
 * count: past the cap, and for any malformed request, mc_metric_get
 * hands out one shared sink series that accepts every update and is
 * never rendered. Callers therefore never see NULL.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <math.h>
#include <netdb.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mc/checksum.h"
#include "mc/addr.h"
#include "mc/hash.h"
#include "mc/io.h"
#include "mc/metrics.h"

#define MAX_SERIES 10000
#define MAX_COLLECT 16
#define NBUCKETS 17

/*
 * Latency buckets in seconds, 50 us to 10 s. The bounds are rendered from
 * the strings so that le="0.00005" reads as written rather than "5e-05".
 */
static const double bucket_le[NBUCKETS] = {
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05,	 0.1,	 0.25,	  0.5,	  1,	 2.5,	 5,	10,
};
static const char *const bucket_text[NBUCKETS] = {
	"0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
	"0.05",	   "0.1",    "0.25",	"0.5",	  "1",	   "2.5",    "5",     "10",
};

struct family {
	char *name;
	char *help;
	int type;
	uint64_t hash;
	struct mc_metric *first, *last;
	struct family *next;
};

struct mc_metric {
	struct family *fam; /* NULL for the sink */
	char *label;	    /* NULL for an unlabelled series */
	char *value;
	uint64_t hash;
	double val;
	_Atomic uint64_t atomic_val; /* added by worker threads */
	/* histograms: per-bucket (not cumulative) counts, then +Inf */
	uint64_t *buckets;
	uint64_t count;
	double sum;
	struct mc_metric *next;
};

struct collector {
	mc_metrics_collect_fn fn;
	void *arg;
};

struct mc_metrics {
	struct family *first, *last;
	struct mc_htab families; /* by name */
	struct mc_htab series;	 /* by (name, label, value) */
	size_t nseries;
	struct mc_metric sink;
	uint64_t sink_buckets[NBUCKETS + 1];
	struct collector collect[MAX_COLLECT];
	size_t ncollect;
};

struct series_key {
	const char *name;
	const char *label; /* NULL for none */
	const char *value;
};

static bool
str_eq_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool
family_eq(const void *entry, const void *key)
{
	return strcmp(((const struct family *)entry)->name, key) == 0;
}

static bool
series_eq(const void *entry, const void *key)
{
	const struct mc_metric *s = entry;
	const struct series_key *k = key;

	return strcmp(s->fam->name, k->name) == 0 && str_eq_null(s->label, k->label) &&
	       str_eq_null(s->value, k->value);
}

static uint64_t
name_hash(const char *name)
{
	return mc_hash64(name, strlen(name), 0);
}

static uint64_t
series_hash(const struct series_key *k)
{
	uint64_t h = name_hash(k->name);

	if (k->label != NULL) {
		h = mc_hash64(k->label, strlen(k->label), h + 1);
		h = mc_hash64(k->value, strlen(k->value), h + 2);
	}
	return h;
}

/* Prometheus metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; labels without ':'. */
static bool
valid_name(const char *s, bool colon)
{
	size_t i;

	if (s == NULL || *s == '\0' || (*s >= '0' && *s <= '9'))
		return false;
	for (i = 0; s[i] != '\0'; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || (colon && c == ':')))
			return false;
	}
	return true;
}

/*
 * A series' label names: one, or several joined by commas ("kind,trigger"),
 * none reserved ("__" prefixes; "le", the histogram's own).
 */
static bool
valid_labels(const char *label, int type)
{
	char one[64];

	for (;;) {
		const char *end = strchr(label, ',');
		size_t len = end != NULL ? (size_t)(end - label) : strlen(label);

		if (len == 0 || len >= sizeof(one))
			return false;
		memcpy(one, label, len);
		one[len] = '\0';
		if (!valid_name(one, false) || strncmp(one, "__", 2) == 0 ||
		    (type == MC_HISTOGRAM && strcmp(one, "le") == 0))
			return false;
		if (end == NULL)
			return true;
		label = end + 1;
	}
}

struct mc_metrics *
mc_metrics_new(void)
{
	struct mc_metrics *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	mc_htab_init(&m->families);
	mc_htab_init(&m->series);
	m->sink.buckets = m->sink_buckets;
	atomic_init(&m->sink.atomic_val, 0);
	return m;
}

static void
series_free(struct mc_metric *s)
{
	free(s->label);
	free(s->value);
	free(s->buckets);
	free(s);
}

static void
family_free(struct family *f)
{
	struct mc_metric *s, *next;

	for (s = f->first; s != NULL; s = next) {
		next = s->next;
		series_free(s);
	}
	free(f->name);
	free(f->help);
	free(f);
}

void
mc_metrics_free(struct mc_metrics *m)
{
	struct family *f, *next;

	if (m == NULL)
		return;
	for (f = m->first; f != NULL; f = next) {
		next = f->next;
		family_free(f);
	}
	mc_htab_free(&m->families);
	mc_htab_free(&m->series);
	free(m);
}

static struct family *
family_get(struct mc_metrics *m, const char *name, int type, const char *help)
{
	uint64_t h = name_hash(name);
	struct family *f = mc_htab_find(&m->families, h, family_eq, name);

	if (f != NULL)
		return f->type == type ? f : NULL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		goto fail;
	f->name = strdup(name);
	f->help = strdup(help != NULL ? help : "");
	f->type = type;
	f->hash = h;
	if (f->name == NULL || f->help == NULL || mc_htab_insert(&m->families, h, f) < 0)
		goto fail;
	if (m->last != NULL)
		m->last->next = f;
	else
		m->first = f;
	m->last = f;
	return f;
fail:
	if (f != NULL) {
		free(f->name);
		free(f->help);
		free(f);
	}
	return NULL;
}

struct mc_metric *
mc_metric_get(struct mc_metrics *m, const char *name, int type, const char *help, const char *label,
	      const char *value)
{
	struct series_key k = { name, label, label != NULL ? (value != NULL ? value : "") : NULL };
	struct mc_metric *s;
	struct family *f;
	uint64_t h;

	if (m == NULL)
		return NULL;
	if (!valid_name(name, true) || type < MC_COUNTER || type > MC_HISTOGRAM)
		return &m->sink;
	if (label != NULL && !valid_labels(label, type))
		return &m->sink;
	h = series_hash(&k);
	s = mc_htab_find(&m->series, h, series_eq, &k);
	if (s != NULL)
		return s->fam->type == type ? s : &m->sink;
	if (m->nseries >= MAX_SERIES)
		return &m->sink;
	f = family_get(m, name, type, help);
	if (f == NULL)
		return &m->sink;

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto fail;
	atomic_init(&s->atomic_val, 0);
	s->fam = f;
	s->hash = h;
	if (label != NULL) {
		s->label = strdup(label);
		s->value = strdup(k.value);
		if (s->label == NULL || s->value == NULL)
			goto fail;
	}
	if (type == MC_HISTOGRAM) {
		s->buckets = calloc(NBUCKETS + 1, sizeof(*s->buckets));
		if (s->buckets == NULL)
			goto fail;
	}
	if (mc_htab_insert(&m->series, h, s) < 0)
		goto fail;
	if (f->last != NULL)
		f->last->next = s;
	else
		f->first = s;
	f->last = s;
	m->nseries++;
	return s;
fail:
	if (s != NULL)
		series_free(s);
	return &m->sink;
}

void
mc_metric_inc(struct mc_metric *s)
{
	mc_metric_add(s, 1);
}

void
mc_metric_add(struct mc_metric *s, double v)
{
	if (s != NULL)
		s->val += v;
}

void
mc_metric_add_atomic(struct mc_metric *s, uint64_t v)
{
	if (s != NULL)
		atomic_fetch_add_explicit(&s->atomic_val, v, memory_order_relaxed);
}

void
mc_metric_set(struct mc_metric *s, double v)
{
	if (s == NULL)
		return;
	s->val = v;
	atomic_store_explicit(&s->atomic_val, 0, memory_order_relaxed);
}

void
mc_metric_put(struct mc_metrics *m, const char *name, int type, const char *help, const char *label,
	      const char *value, double v)
{
	/* a series that could not be made (out of memory) is NULL, which set ignores */
	mc_metric_set(mc_metric_get(m, name, type, help, label, value), v);
}

double
mc_metric_value(const struct mc_metric *s)
{
	uint64_t a;

	if (s == NULL)
		return 0;
	if (s->buckets != NULL && s->fam != NULL)
		return (double)s->count;
	a = atomic_load_explicit(&((struct mc_metric *)s)->atomic_val, memory_order_relaxed);
	return s->val + (double)a;
}

void
mc_metric_observe(struct mc_metric *s, double seconds)
{
	size_t i;

	if (s == NULL || s->buckets == NULL || isnan(seconds))
		return;
	for (i = 0; i < NBUCKETS && seconds > bucket_le[i]; i++)
		;
	s->buckets[i]++;
	s->count++;
	s->sum += seconds;
}

void
mc_metrics_on_collect(struct mc_metrics *m, mc_metrics_collect_fn fn, void *arg)
{
	/* a fixed table: there are a handful of owners, and this cannot fail */
	if (m == NULL || fn == NULL || m->ncollect >= MAX_COLLECT)
		return;
	m->collect[m->ncollect].fn = fn;
	m->collect[m->ncollect].arg = arg;
	m->ncollect++;
}

/* A growable output buffer that remembers an allocation failure. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void
sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* Escape backslash and newline (HELP) and also '"' (label values). */
static void
sb_escaped(struct sbuf *b, const char *s, bool quote)
{
	const char *run = s;

	for (; *s != '\0'; s++) {
		const char *rep = NULL;

		if (*s == '\\')
			rep = "\\\\";
		else if (*s == '\n')
			rep = "\\n";
		else if (*s == '"' && quote)
			rep = "\\\"";
		if (rep == NULL)
			continue;
		sb_add(b, run, (size_t)(s - run));
		sb_str(b, rep);
		run = s + 1;
	}
	sb_add(b, run, (size_t)(s - run));
}

/* The shortest text that reads back as the same double. */
static void
sb_number(struct sbuf *b, double v)
{
	char buf[64];
	int prec;

	if (isnan(v)) {
		sb_str(b, "NaN");
		return;
	}
	if (isinf(v)) {
		sb_str(b, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	sb_str(b, buf);
}

static void
sb_u64(struct sbuf *b, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	sb_str(b, buf);
}

/*
 * label="value", or for a series with several labels (label "a,b", value
 * "x,y") a="x",b="y": the value splits at commas only while label names
 * remain, so the last value may hold commas.
 */
static void
sb_labels(struct sbuf *b, const char *label, const char *value)
{
	for (;;) {
		const char *lend = strchr(label, ',');
		const char *vend = lend != NULL ? strchr(value, ',') : NULL;
		size_t llen = lend != NULL ? (size_t)(lend - label) : strlen(label);

		sb_add(b, label, llen);
		sb_str(b, "=\"");
		if (vend == NULL) {
			sb_escaped(b, value, true);
			sb_str(b, "\"");
			return;
		}
		char part[256];
		snprintf(part, sizeof(part), "%.*s", (int)(vend - value), value);
		sb_escaped(b, part, true);
		sb_str(b, "\",");
		label = lend + 1;
		value = vend + 1;
	}
}

/* name{label="value",le="x"} with whatever parts are present. */
static void
sb_series_name(struct sbuf *b, const struct mc_metric *s, const char *suffix, const char *le)
{
	sb_str(b, s->fam->name);
	sb_str(b, suffix);
	if (s->label == NULL && le == NULL) {
		sb_str(b, " ");
		return;
	}
	sb_str(b, "{");
	if (s->label != NULL) {
		sb_labels(b, s->label, s->value);
		if (le != NULL)
			sb_str(b, ",");
	}
	if (le != NULL) {
		sb_str(b, "le=\"");
		sb_str(b, le);
		sb_str(b, "\"");
	}
	sb_str(b, "} ");
}

static void
render_histogram(struct sbuf *b, const struct mc_metric *s)
{
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i < NBUCKETS; i++) {
		cum += s->buckets[i];
		sb_series_name(b, s, "_bucket", bucket_text[i]);
		sb_u64(b, cum);
		sb_str(b, "\n");
	}
	sb_series_name(b, s, "_bucket", "+Inf");
	sb_u64(b, s->count);
	sb_str(b, "\n");
	sb_series_name(b, s, "_sum", NULL);
	sb_number(b, s->sum);
	sb_str(b, "\n");
	sb_series_name(b, s, "_count", NULL);
	sb_u64(b, s->count);
	sb_str(b, "\n");
}

char *
mc_metrics_render(struct mc_metrics *m, size_t *len)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };
	struct sbuf b = { 0 };
	struct family *f;
	size_t i;

	if (m == NULL)
		return NULL;
	for (i = 0; i < m->ncollect; i++)
		m->collect[i].fn(m, m->collect[i].arg);
	sb_add(&b, "", 0);
	for (f = m->first; f != NULL; f = f->next) {
		const struct mc_metric *s;

		if (f->first == NULL)
			continue;
		sb_str(&b, "# HELP ");
		sb_str(&b, f->name);
		sb_str(&b, " ");
		sb_escaped(&b, f->help, false);
		sb_str(&b, "\n# TYPE ");
		sb_str(&b, f->name);
		sb_str(&b, " ");
		sb_str(&b, type_names[f->type]);
		sb_str(&b, "\n");
		for (s = f->first; s != NULL; s = s->next) {
			if (f->type == MC_HISTOGRAM) {
				render_histogram(&b, s);
				continue;
			}
			sb_series_name(&b, s, "", NULL);
			sb_number(&b, mc_metric_value(s));
			sb_str(&b, "\n");
		}
	}
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	if (len != NULL)
		*len = b.len;
	return b.p;
}

struct mc_http {
	struct evhttp *http;
	struct mc_metrics *m;
	/* --http-token-file: every request must say "Authorization: Bearer TOKEN" */
	char token[MC_HTTP_TOKEN_MAX + 2];
	size_t token_len;
};

/* Whether req carries the bearer token h needs (constant time in the token). */
static bool
http_authorized(const struct mc_http *h, struct evhttp_request *req)
{
	const char *v;
	size_t n;

	if (h->token_len == 0)
		return true;
	v = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	if (v == NULL || strncasecmp(v, "Bearer ", 7) != 0)
		return false;
	v += 7;
	n = strlen(v);
	return n == h->token_len && sodium_memcmp(v, h->token, n) == 0;
}

static void
reply_text(struct evhttp_request *req, int code, const char *reason, const char *ctype,
	   const char *body, size_t len)
{
	struct evbuffer *out = evhttp_request_get_output_buffer(req);

	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
	if (evbuffer_add(out, body, len) < 0) {
		evhttp_send_error(req, 500, "Internal Server Error");
		return;
	}
	evhttp_send_reply(req, code, reason, NULL);
}

static void
http_cb(struct evhttp_request *req, void *arg)
{
	struct mc_http *h = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;

	if (path == NULL)
		path = "";
	if (!http_authorized(h, req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
				  "Bearer");
		reply_text(req, 401, "Unauthorized", "text/plain", "unauthorized\n", 13);
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		size_t len;
		char *text = mc_metrics_render(h->m, &len);

		if (text == NULL) {
			evhttp_send_error(req, 500, "Internal Server Error");
			return;
		}
		reply_text(req, 200, "OK", "text/plain; version=0.0.4", text, len);
		free(text);
	} else if (strcmp(path, "/healthz") == 0) {
		reply_text(req, 200, "OK", "text/plain", "ok\n", 3);
	} else {
		reply_text(req, 404, "Not Found", "text/plain", "not found\n", 10);
	}
}

struct mc_http *
mc_http_start(struct event_base *base, const char *addr, struct mc_metrics *m,
	      struct mc_addr *bound, struct mc_err *err)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	struct evhttp_bound_socket *sock;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct mc_http *h = NULL;
	struct mc_addr a;
	int rc, fd;

	if (mc_addr_parse(addr, &a, err) < 0)
		return NULL;
	if (a.is_unix) {
		mc_err_set(err, MC_ERR_INVALID, "metrics address must be host:port, not '%s'",
			   addr);
		return NULL;
	}
	rc = getnameinfo((struct sockaddr *)&a.ss, a.len, host, sizeof(host), serv, sizeof(serv),
			 NI_NUMERICHOST | NI_NUMERICSERV);
	if (rc != 0) {
		mc_err_set(err, MC_ERR_INVALID, "cannot use address '%s': %s", addr,
			   gai_strerror(rc));
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		goto fail;
	}
	h->m = m;
	h->http = evhttp_new(base);
	if (h->http == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot create http server");
		goto fail;
	}
	/*
	 * Scrapers send small GETs; anything bigger or slower is not one, so
	 * bound what a stray client can hold on to.
	 */
	evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_max_headers_size(h->http, 8192);
	evhttp_set_max_body_size(h->http, 1024);
	evhttp_set_timeout(h->http, 10);
	evhttp_set_gencb(h->http, http_cb, h);
	errno = 0;
	sock = evhttp_bind_socket_with_handle(h->http, host, (ev_uint16_t)atoi(serv));
	if (sock == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot listen on %s: %s", addr,
			   errno != 0 ? strerror(errno) : "bind failed");
		goto fail;
	}
	fd = evhttp_bound_socket_get_fd(sock);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		mc_err_errno(err, "getsockname on %s", addr);
		goto fail;
	}
	if (bound != NULL) {
		memset(bound, 0, sizeof(*bound));
		memcpy(&bound->ss, &ss, sl);
		bound->len = sl;
		bound->is_unix = 0;
		mc_addr_format((struct sockaddr *)&ss, sl, bound->text, sizeof(bound->text));
	}
	return h;
fail:
	mc_http_stop(h);
	return NULL;
}

void
mc_http_stop(struct mc_http *h)
{
	if (h == NULL)
		return;
	if (h->http != NULL)
		evhttp_free(h->http);
	free(h);
}

const char *
mc_http_addr(const char *addr, char *buf, size_t cap)
{
	const char *port = addr[0] == ':' ? addr + 1 : addr;

	if (port[0] == '\0' || strspn(port, "0123456789") != strlen(port))
		return addr;
	snprintf(buf, cap, "127.0.0.1:%s", port);
	return buf;
}

/* The token of --http-token-file into h, from a file only its owner may write. */
static int
http_load_token(struct mc_http *h, const char *path, struct mc_err *err)
{
	char why[MC_ERR_MSG_MAX];
	FILE *f = fopen(path, "r");
	int rc;

	if (f == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot read --http-token-file %s: %s", path,
				  mc_strerror(errno));
	rc = mc_check_private(fileno(f), path,
			      "whoever can write it chooses who may read the metrics",
			      "whoever reads it may read the metrics", err);
	fclose(f);
	if (rc != 0)
		return -1;
	if (mc_read_secret(path, h->token, sizeof(h->token), why) != 0)
		return mc_err_set(err, MC_ERR_INVALID, "invalid --http-token-file: %s", why);
	h->token_len = strlen(h->token);
	return 0;
}

struct mc_http *
mc_http_serve(struct event_base *base, const struct mc_http_cfg *cfg, struct mc_metrics *m,
	      struct mc_addr *bound, struct mc_err *err)
{
	char buf[MC_ADDR_MAX + 16];
	const char *addr = mc_http_addr(cfg->addr, buf, sizeof(buf));
	struct mc_http *h;
	struct mc_addr a;

	if (mc_addr_parse(addr, &a, err) < 0)
		return NULL;
	/* tenant names and sizes are in the metrics: beyond loopback, only to who has the token */
	if (!mc_addr_is_local(&a) && cfg->token_file == NULL && !cfg->insecure) {
		mc_err_set(err, MC_ERR_INVALID,
			   "refusing --http %s beyond loopback without --http-token-file (or "
			   "--insecure to show the metrics to anyone who can reach it)",
			   cfg->addr);
		return NULL;
	}
	h = mc_http_start(base, addr, m, bound, err);
	if (h != NULL && cfg->token_file != NULL && http_load_token(h, cfg->token_file, err) != 0) {
		mc_http_stop(h);
		return NULL;
	}
	return h;
}
