/* Unit tests for the metrics registry and its HTTP endpoint (libmc/metrics.c). */
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mc/metrics.h"
#include "tap.h"

static char *
render(struct mc_metrics *m)
{
	size_t len = 0;
	char *s = mc_metrics_render(m, &len);

	if (s != NULL && strlen(s) != len) {
		free(s);
		return NULL;
	}
	return s;
}

static int
renders_as(struct mc_metrics *m, const char *want)
{
	char *got = render(m);
	int ok = got != NULL && strcmp(got, want) == 0;

	if (!ok)
		printf("# got:\n%s# want:\n%s", got != NULL ? got : "(null)\n", want);
	free(got);
	return ok;
}

static void
test_counter(void)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *c;

	TAP_OK(m != NULL && renders_as(m, ""), "render: an empty registry renders nothing");
	c = mc_metric_get(m, "mc_requests_total", MC_COUNTER, "Requests served.", NULL, NULL);
	mc_metric_inc(c);
	mc_metric_inc(c);
	mc_metric_add(c, 3);
	TAP_OK(mc_metric_value(c) == 5, "counter: inc and add accumulate");
	TAP_OK(mc_metric_get(m, "mc_requests_total", MC_COUNTER, "other", NULL, NULL) == c,
	       "counter: getting the same series again returns the same pointer");
	TAP_OK(renders_as(m, "# HELP mc_requests_total Requests served.\n"
			     "# TYPE mc_requests_total counter\n"
			     "mc_requests_total 5\n"),
	       "render: a counter has HELP, TYPE and its value");
	mc_metrics_free(m);
}

static void
test_gauge(void)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *a, *b;

	a = mc_metric_get(m, "mc_tenant_bytes", MC_GAUGE, "Bytes per tenant.", "tenant", "a");
	b = mc_metric_get(m, "mc_tenant_bytes", MC_GAUGE, "Bytes per tenant.", "tenant", "b");
	mc_metric_set(a, 1.5);
	mc_metric_set(b, 1024);
	mc_metric_add(b, -24);
	TAP_OK(a != b, "gauge: different label values are different series");
	TAP_OK(renders_as(m, "# HELP mc_tenant_bytes Bytes per tenant.\n"
			     "# TYPE mc_tenant_bytes gauge\n"
			     "mc_tenant_bytes{tenant=\"a\"} 1.5\n"
			     "mc_tenant_bytes{tenant=\"b\"} 1000\n"),
	       "render: a labelled gauge lists one line per series in creation order");
	mc_metrics_free(m);
}

static void
test_two_labels(void)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *a;

	a = mc_metric_get(m, "mc_evicted_total", MC_COUNTER, "Evicted.", "kind,trigger",
			  "fallback,quota");
	mc_metric_inc(a);
	TAP_OK(mc_metric_get(m, "mc_evicted_total", MC_COUNTER, "Evicted.", "kind,trigger",
			     "evict,quota") != a,
	       "two labels: another value pair is another series");
	a = mc_metric_get(m, "mc_odd_total", MC_COUNTER, "Odd.", "a", "x,\"y");
	TAP_OK(renders_as(m, "# HELP mc_evicted_total Evicted.\n"
			     "# TYPE mc_evicted_total counter\n"
			     "mc_evicted_total{kind=\"fallback\",trigger=\"quota\"} 1\n"
			     "mc_evicted_total{kind=\"evict\",trigger=\"quota\"} 0\n"
			     "# HELP mc_odd_total Odd.\n"
			     "# TYPE mc_odd_total counter\n"
			     "mc_odd_total{a=\"x,\\\"y\"} 0\n"),
	       "render: label \"a,b\" with value \"x,y\" gives a=\"x\",b=\"y\"; one label keeps "
	       "its commas");
	mc_metrics_free(m);
}

static const char histogram_text[] = "# HELP mc_get_seconds Latency of get.\n"
				     "# TYPE mc_get_seconds histogram\n"
				     "mc_get_seconds_bucket{le=\"0.00005\"} 0\n"
				     "mc_get_seconds_bucket{le=\"0.0001\"} 0\n"
				     "mc_get_seconds_bucket{le=\"0.00025\"} 1\n"
				     "mc_get_seconds_bucket{le=\"0.0005\"} 1\n"
				     "mc_get_seconds_bucket{le=\"0.001\"} 2\n"
				     "mc_get_seconds_bucket{le=\"0.0025\"} 3\n"
				     "mc_get_seconds_bucket{le=\"0.005\"} 3\n"
				     "mc_get_seconds_bucket{le=\"0.01\"} 3\n"
				     "mc_get_seconds_bucket{le=\"0.025\"} 3\n"
				     "mc_get_seconds_bucket{le=\"0.05\"} 3\n"
				     "mc_get_seconds_bucket{le=\"0.1\"} 3\n"
				     "mc_get_seconds_bucket{le=\"0.25\"} 3\n"
				     "mc_get_seconds_bucket{le=\"0.5\"} 3\n"
				     "mc_get_seconds_bucket{le=\"1\"} 3\n"
				     "mc_get_seconds_bucket{le=\"2.5\"} 3\n"
				     "mc_get_seconds_bucket{le=\"5\"} 3\n"
				     "mc_get_seconds_bucket{le=\"10\"} 3\n"
				     "mc_get_seconds_bucket{le=\"+Inf\"} 4\n"
				     "mc_get_seconds_sum 16.003197265625\n"
				     "mc_get_seconds_count 4\n";

static void
test_histogram(void)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *h, *l;
	char *text;

	h = mc_metric_get(m, "mc_get_seconds", MC_HISTOGRAM, "Latency of get.", NULL, NULL);
	/* binary fractions, so the sum prints exactly */
	mc_metric_observe(h, 0.000244140625);
	mc_metric_observe(h, 0.001); /* on a bound: counts in that bucket */
	mc_metric_observe(h, 0.001953125);
	mc_metric_observe(h, 16);
	TAP_OK(mc_metric_value(h) == 4, "histogram: value is the observation count");
	TAP_OK(renders_as(m, histogram_text),
	       "render: a histogram has cumulative buckets, +Inf, _sum and _count");
	mc_metrics_free(m);

	m = mc_metrics_new();
	l = mc_metric_get(m, "mc_rpc_seconds", MC_HISTOGRAM, "RPC latency.", "method", "put");
	mc_metric_observe(l, 0.5);
	text = render(m);
	TAP_OK(text != NULL &&
		       strstr(text, "mc_rpc_seconds_bucket{method=\"put\",le=\"0.25\"} 0\n") &&
		       strstr(text, "mc_rpc_seconds_bucket{method=\"put\",le=\"0.5\"} 1\n") &&
		       strstr(text, "mc_rpc_seconds_bucket{method=\"put\",le=\"+Inf\"} 1\n") &&
		       strstr(text, "mc_rpc_seconds_sum{method=\"put\"} 0.5\n") &&
		       strstr(text, "mc_rpc_seconds_count{method=\"put\"} 1\n"),
	       "render: a labelled histogram puts its label before le");
	free(text);
	TAP_OK(mc_metric_get(m, "mc_rpc_seconds", MC_HISTOGRAM, "x", "le", "1") !=
		       mc_metric_get(m, "mc_rpc_seconds", MC_HISTOGRAM, "x", "method", "put"),
	       "histogram: the reserved label le is refused");
	mc_metrics_free(m);
}

static void
test_escaping(void)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *g;

	g = mc_metric_get(m, "mc_x", MC_GAUGE, "Help with \\ and\nnewline.", "tenant",
			  "a\"b\\c\nd");
	mc_metric_set(g, 0.1);
	TAP_OK(renders_as(m, "# HELP mc_x Help with \\\\ and\\nnewline.\n"
			     "# TYPE mc_x gauge\n"
			     "mc_x{tenant=\"a\\\"b\\\\c\\nd\"} 0.1\n"),
	       "render: backslash, quote and newline are escaped in label values and help");
	mc_metrics_free(m);
}

static void
test_sink(void)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *first, *over, *over2, *bad;
	char value[32], *text;
	int i, distinct = 1;

	first = mc_metric_get(m, "mc_t", MC_GAUGE, "Per tenant.", "tenant", "t0");
	for (i = 1; i < 10000; i++) {
		snprintf(value, sizeof(value), "t%d", i);
		if (mc_metric_get(m, "mc_t", MC_GAUGE, "Per tenant.", "tenant", value) == first)
			distinct = 0;
	}
	TAP_OK(distinct, "cap: 10000 series are created");
	over = mc_metric_get(m, "mc_t", MC_GAUGE, "Per tenant.", "tenant", "overflow1");
	over2 = mc_metric_get(m, "mc_other", MC_COUNTER, "Other.", NULL, NULL);
	TAP_OK(over != NULL && over == over2, "cap: past 10000 series every get shares one sink");
	mc_metric_set(over, 7);
	mc_metric_observe(over, 1);
	mc_metric_add_atomic(over, 1);
	TAP_OK(mc_metric_get(m, "mc_t", MC_GAUGE, "Per tenant.", "tenant", "t5") != over,
	       "cap: existing series are still found past the cap");
	text = render(m);
	TAP_OK(text != NULL && strstr(text, "overflow1") == NULL &&
		       strstr(text, "mc_other") == NULL &&
		       strstr(text, "mc_t{tenant=\"t9999\"} 0\n") != NULL,
	       "cap: the sink is not rendered");
	free(text);
	mc_metrics_free(m);

	m = mc_metrics_new();
	first = mc_metric_get(m, "mc_a", MC_COUNTER, "A.", NULL, NULL);
	bad = mc_metric_get(m, "mc_a", MC_GAUGE, "A.", NULL, NULL);
	TAP_OK(bad != first && bad != NULL, "sink: a type clash gets the sink, not the counter");
	TAP_OK(mc_metric_get(m, "9bad", MC_GAUGE, "x", NULL, NULL) == bad &&
		       mc_metric_get(m, "mc a", MC_GAUGE, "x", NULL, NULL) == bad &&
		       mc_metric_get(m, "mc_b", MC_GAUGE, "x", "bad-label", "v") == bad &&
		       mc_metric_get(m, "mc_b", 7, "x", NULL, NULL) == bad,
	       "sink: invalid names, labels and types get the sink");
	mc_metric_inc(bad);
	TAP_OK(renders_as(m, "# HELP mc_a A.\n# TYPE mc_a counter\nmc_a 0\n"),
	       "sink: updates to the sink never show");
	mc_metrics_free(m);
}

static void
collect(struct mc_metrics *m, void *arg)
{
	int *calls = arg;

	(*calls)++;
	mc_metric_set(mc_metric_get(m, "mc_objects", MC_GAUGE, "Objects.", NULL, NULL),
		      *calls * 10);
}

struct adder {
	struct mc_metric *s;
};

static void *
add_many(void *arg)
{
	struct adder *a = arg;
	int i;

	for (i = 0; i < 100000; i++)
		mc_metric_add_atomic(a->s, 1);
	return NULL;
}

static void
test_collect_and_atomic(void)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *c;
	struct adder a;
	pthread_t t1, t2;
	int calls = 0;

	mc_metrics_on_collect(m, collect, &calls);
	TAP_OK(renders_as(m,
			  "# HELP mc_objects Objects.\n# TYPE mc_objects gauge\nmc_objects 10\n") &&
		       renders_as(m, "# HELP mc_objects Objects.\n# TYPE mc_objects gauge\n"
				     "mc_objects 20\n"),
	       "collect: the callback runs before every render");
	mc_metrics_free(m);

	m = mc_metrics_new();
	c = mc_metric_get(m, "mc_bytes_in_total", MC_COUNTER, "Bytes in.", NULL, NULL);
	a.s = c;
	mc_metric_add(c, 5);
	pthread_create(&t1, NULL, add_many, &a);
	pthread_create(&t2, NULL, add_many, &a);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	TAP_OK(mc_metric_value(c) == 200005, "atomic: adds from two threads are all counted");
	mc_metrics_free(m);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One HTTP/1.0 request, driving the server's loop while waiting. */
static char *
http_get(struct event_base *base, const struct mc_addr *a, const char *path)
{
	static char resp[65536];
	size_t got = 0;
	char req[256];
	double deadline = now_s() + 5;
	int fd;

	resp[0] = '\0';
	fd = socket(a->ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0)
		goto out;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: test\r\n\r\n", path);
	if (send(fd, req, strlen(req), 0) != (ssize_t)strlen(req))
		goto out;
	while (now_s() < deadline && got < sizeof(resp) - 1) {
		ssize_t n;

		event_base_loop(base, EVLOOP_NONBLOCK);
		n = recv(fd, resp + got, sizeof(resp) - 1 - got, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0)
			got += (size_t)n;
		else if (errno == EAGAIN || errno == EWOULDBLOCK)
			usleep(1000);
		else
			break;
	}
	resp[got] = '\0';
out:
	if (fd >= 0)
		close(fd);
	return resp;
}

static void
test_http(void)
{
	struct event_base *base = event_base_new();
	struct mc_metrics *m = mc_metrics_new();
	struct mc_err err = { 0 };
	struct mc_addr bound;
	struct mc_http *h;
	char *r;

	mc_metric_inc(mc_metric_get(m, "mc_up", MC_GAUGE, "Up.", NULL, NULL));
	h = mc_http_start(base, "127.0.0.1:0", m, &bound, &err);
	TAP_OK(h != NULL, "http: starts on 127.0.0.1:0 (%s)", h != NULL ? bound.text : err.msg);
	if (h == NULL)
		goto out;
	TAP_OK(strncmp(bound.text, "127.0.0.1:", 10) == 0 && strcmp(bound.text, "127.0.0.1:0") != 0,
	       "http: reports the bound address with the real port");
	r = http_get(base, &bound, "/metrics");
	TAP_OK(strncmp(r, "HTTP/1.", 7) == 0 && strncmp(r + 8, " 200", 4) == 0 &&
		       strstr(r, "Content-Type: text/plain; version=0.0.4\r\n") != NULL &&
		       strstr(r, "\r\n\r\n# HELP mc_up Up.\n# TYPE mc_up gauge\nmc_up 1\n") != NULL,
	       "http: GET /metrics returns 200 with the exposition");
	r = http_get(base, &bound, "/healthz");
	TAP_OK(strncmp(r + 8, " 200", 4) == 0 && strstr(r, "\r\n\r\nok\n") != NULL,
	       "http: GET /healthz returns ok");
	r = http_get(base, &bound, "/other");
	TAP_OK(strncmp(r + 8, " 404", 4) == 0, "http: other paths are 404");
	r = http_get(base, &bound, "/metrics?x=1");
	TAP_OK(strncmp(r + 8, " 200", 4) == 0, "http: a query string does not change the path");
	mc_http_stop(h);
	TAP_OK(mc_http_start(base, "unix:/tmp/x.sock", m, &bound, &err) == NULL &&
		       err.msg[0] != '\0',
	       "http: a unix address is refused with a message");
	TAP_OK(mc_http_start(base, "bogus", m, &bound, &err) == NULL,
	       "http: a malformed address is refused");
out:
	mc_metrics_free(m);
	event_base_free(base);
}

static void
test_http_addr(void)
{
	char buf[64];

	TAP_OK(strcmp(mc_http_addr(":9100", buf, sizeof(buf)), "127.0.0.1:9100") == 0,
	       "http: a bare :PORT is loopback's");
	TAP_OK(strcmp(mc_http_addr("9100", buf, sizeof(buf)), "127.0.0.1:9100") == 0,
	       "http: a bare PORT is loopback's");
	TAP_OK(strcmp(mc_http_addr("0.0.0.0:9100", buf, sizeof(buf)), "0.0.0.0:9100") == 0 &&
		       strcmp(mc_http_addr("[::1]:1", buf, sizeof(buf)), "[::1]:1") == 0 &&
		       strcmp(mc_http_addr(":", buf, sizeof(buf)), ":") == 0,
	       "http: an address with a host, or none at all, is as given");
}

int
main(void)
{
	test_counter();
	test_gauge();
	test_two_labels();
	test_histogram();
	test_escaping();
	test_sink();
	test_collect_and_atomic();
	test_http();
	test_http_addr();
	return tap_done();
}
