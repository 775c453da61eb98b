/*
 * mc-rpc: one raw msgpack-rpc call from the command line, for tests that
 * need a protocol step mc-cli never takes on its own (a put_start whose
 * writer then vanishes, a bare peer call).
 *
 * usage: mc-rpc [--tenant T] [--token T] [--timeout-ms N] [--bulk FILE] [-o FILE]
 *               [--bulk-short N] [--wait-close] ADDR METHOD [FIELD...]
 * FIELD is NAME=STRING, or NAME:=VALUE with VALUE an unsigned integer,
 * true, false, null, [] (an empty array), b64:BASE64 for a bin (as the
 * JSON output shows one, so a grant printed by one call is passed on to the
 * next), or any other JSON value (arrays and objects, a peer's tiers or
 * inventory items; numbers with a fraction or exponent are floats).
 * `--then METHOD FIELD...` makes another call on the same connection
 * after the one before (`--then-notify` sends it as a notification), so
 * a test can play a peer: register or heartbeat, then speak as that
 * peer. Notifications the server sends meanwhile (a peer's tasks) are
 * printed as {"notify": METHOD, "params": {...}} lines, in the order
 * they came. With --tenant, a `hello {tenant}` goes first on
 * the same connection. --bulk sends FILE's bytes as the request's bulk
 * (adding "len"); -o writes a response's bulk to FILE (otherwise it is
 * skipped). The result map is printed as one JSON line. --stall FIFO
 * holds a response's bulk unread until a line arrives on FIFO, so a test
 * can act while the server is in the middle of sending it. --notify sends
 * METHOD as a notification (no answer), then makes one `hello` round trip
 * on the same connection, so that once mc-rpc exits the server has
 * handled the notification (a connection is served in order); it prints
 * nothing. --token sends a `hello {token}` first (with the tenant when
 * --tenant is given too). --wait-close, once the answer is printed,
 * waits (up to --timeout-ms) for the server to close the connection,
 * and exits 0 when it did, 69 when it did not. --bulk-short N announces
 * all of --bulk's bytes but sends only the first N, then waits as
 * --wait-close does: a writer that stalls in the middle of its bulk.
 *
 * Exit status: 0 ok, 1 the call returned an error (printed as
 * "mc-rpc: METHOD: CODE: MSG"), 64 usage, 69 cannot connect or the
 * connection failed.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/err.h"
#include "mc/parse.h"
#include "mc/json.h"
#include "mc/rpcc.h"
#include "mc/wire.h"

#define PROG "mc-rpc"
/* Calls after the first, on the same connection. */
#define THEN_MAX 16

struct fields {
	char **argv; /* NAME=... / NAME:=... */
	int n;
	bool has_bulk;
	uint64_t bulk_len; /* packed as "len" when has_bulk */
};

/*
 * Decode base64 s into out (NULL: only check it); its length, or -1 when
 * s is not base64. The output is never longer than s.
 */
static long
unbase64(const char *s, unsigned char *out)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t acc = 0;
	int bits = 0;
	long n = 0;

	for (; *s != '\0' && *s != '='; s++) {
		const char *c = strchr(abc, *s);

		if (c == NULL)
			return -1;
		acc = acc << 6 | (uint32_t)(c - abc);
		if ((bits += 6) >= 8) {
			bits -= 8;
			if (out != NULL)
				out[n] = (unsigned char)(acc >> bits);
			n++;
		}
	}
	return n;
}

/* What JSON skips between tokens. */
#define WS " \t\r\n"

/*
 * A JSON value at *p packed into pk (NULL: only checked), *p moved past
 * it; -1 when it is not JSON. Strings take the escapes \" \\ \/ \b \f
 * \n \r \t and \u00XX, enough for what tests send.
 */
static int
pack_json(msgpack_packer *pk, const char **p)
{
	const char *s = *p;

	s += strspn(s, WS);
	if (*s == '{' || *s == '[') {
		bool obj = *s == '{';
		const char *q = s + 1;
		uint32_t n = 0;

		/* counted first: msgpack wants the size before the elements */
		for (;;) {
			q += strspn(q, WS);
			if (*q == (obj ? '}' : ']') && n == 0)
				break;
			if (obj && (pack_json(NULL, &q) < 0 || *(q += strspn(q, WS)) != ':'))
				return -1;
			q += obj;
			if (pack_json(NULL, &q) < 0)
				return -1;
			n++;
			q += strspn(q, WS);
			if (*q == ',') {
				q++;
				continue;
			}
			if (*q != (obj ? '}' : ']'))
				return -1;
			break;
		}
		if (pk != NULL) {
			if (obj)
				msgpack_pack_map(pk, n);
			else
				msgpack_pack_array(pk, n);
		}
		s++;
		for (uint32_t i = 0; i < n; i++) {
			if (obj && pack_json(pk, &s) < 0)
				return -1;
			if (obj)
				s += strspn(s, WS) + 1; /* the ':', checked above */
			if (pack_json(pk, &s) < 0)
				return -1;
			s += strspn(s, WS);
			if (*s == ',')
				s++;
		}
		s += strspn(s, WS);
		*p = s + 1;
		return 0;
	}
	if (*s == '"') {
		char buf[4096];
		size_t n = 0;

		for (s++; *s != '"'; s++) {
			char c = *s;
			unsigned u;

			if (c == '\0' || n == sizeof(buf))
				return -1;
			if (c == '\\') {
				static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
				const char *k;

				c = *++s;
				if (c == 'u' && sscanf(s + 1, "%4x", &u) == 1 && u < 0x80) {
					c = (char)u;
					s += 4;
				} else if (c == '\0' || (k = strchr(from, c)) == NULL) {
					return -1;
				} else {
					c = to[k - from];
				}
			}
			buf[n++] = c;
		}
		if (pk != NULL)
			mc_pack_strn(pk, buf, n);
		*p = s + 1;
		return 0;
	}
	if (strncmp(s, "true", 4) == 0 || strncmp(s, "null", 4) == 0) {
		if (pk != NULL && *s == 't')
			msgpack_pack_true(pk);
		else if (pk != NULL)
			msgpack_pack_nil(pk);
		*p = s + 4;
		return 0;
	}
	if (strncmp(s, "false", 5) == 0) {
		if (pk != NULL)
			msgpack_pack_false(pk);
		*p = s + 5;
		return 0;
	}
	if (*s == '-' || (*s >= '0' && *s <= '9')) {
		char *end;
		size_t len = strspn(s, "-+.eE0123456789");

		if (strcspn(s, ".eE") < len) {
			double d = strtod(s, &end);

			if (pk != NULL)
				msgpack_pack_double(pk, d);
		} else if (*s == '-') {
			long long v = strtoll(s, &end, 10);

			if (pk != NULL)
				msgpack_pack_int64(pk, v);
		} else {
			unsigned long long v = strtoull(s, &end, 10);

			if (pk != NULL)
				msgpack_pack_uint64(pk, v);
		}
		if (end != s + len)
			return -1;
		*p = end;
		return 0;
	}
	return -1;
}

/* Whether v is a whole JSON value and nothing more. */
static bool
is_json(const char *v)
{
	if (pack_json(NULL, &v) < 0)
		return false;
	v += strspn(v, WS);
	return *v == '\0';
}

/* Check every FIELD before connecting, so a typo is a usage error. */
static int
check_fields(const struct fields *f)
{
	int i;

	for (i = 0; i < f->n; i++) {
		const char *a = f->argv[i];
		const char *eq = strchr(a, '=');
		uint64_t u;

		if (eq == NULL || eq == a || (eq == a + 1 && a[0] == ':')) {
			fprintf(stderr, "%s: invalid field '%s': want NAME=STR or NAME:=VALUE\n",
				PROG, a);
			return -1;
		}
		if (eq[-1] != ':')
			continue;
		if (strcmp(eq + 1, "true") != 0 && strcmp(eq + 1, "false") != 0 &&
		    strcmp(eq + 1, "null") != 0 && strcmp(eq + 1, "[]") != 0 &&
		    mc_parse_u64(eq + 1, &u, NULL) < 0 &&
		    (strncmp(eq + 1, "b64:", 4) != 0 || unbase64(eq + 5, NULL) < 0) &&
		    !is_json(eq + 1)) {
			fprintf(stderr,
				"%s: invalid field '%s': not an unsigned integer, true, false, "
				"null, [], b64:BASE64 or JSON\n",
				PROG, a);
			return -1;
		}
	}
	return 0;
}

static void
pack_fields(msgpack_packer *pk, void *arg)
{
	const struct fields *f = arg;
	int i;

	msgpack_pack_map(pk, (size_t)f->n + (f->has_bulk ? 1 : 0));
	if (f->has_bulk)
		mc_pack_kv_u64(pk, "len", f->bulk_len);
	for (i = 0; i < f->n; i++) {
		const char *a = f->argv[i];
		const char *eq = strchr(a, '=');
		bool typed = eq[-1] == ':';
		const char *v = eq + 1;
		uint64_t u = 0;

		mc_pack_strn(pk, a, (size_t)(eq - a) - (typed ? 1 : 0));
		if (!typed)
			mc_pack_cstr(pk, v);
		else if (strcmp(v, "true") == 0)
			msgpack_pack_true(pk);
		else if (strcmp(v, "false") == 0)
			msgpack_pack_false(pk);
		else if (strcmp(v, "null") == 0)
			msgpack_pack_nil(pk);
		else if (strcmp(v, "[]") == 0)
			msgpack_pack_array(pk, 0);
		else if (mc_parse_u64(v, &u, NULL) == 0)
			msgpack_pack_uint64(pk, u);
		else if (strncmp(v, "b64:", 4) == 0) {
			unsigned char *b = malloc(strlen(v));
			long n = b != NULL ? unbase64(v + 4, b) : -1;

			msgpack_pack_bin(pk, n > 0 ? (size_t)n : 0);
			msgpack_pack_bin_body(pk, b, n > 0 ? (size_t)n : 0);
			free(b);
		} else {
			pack_json(pk, &v);
		}
	}
}

struct hello {
	const char *tenant, *token; /* NULL: not sent */
};

static void
pack_hello(msgpack_packer *pk, const struct hello *h)
{
	msgpack_pack_map(pk, (h->tenant != NULL) + (h->token != NULL));
	if (h->tenant != NULL)
		mc_pack_kv_str(pk, "tenant", h->tenant);
	if (h->token != NULL)
		mc_pack_kv_str(pk, "token", h->token);
}

/* --wait-close: 0 once the server closed the connection, 69 when it did not in time. */
static int
wait_close(struct mc_rpcc *r, uint64_t timeout_ms)
{
	struct pollfd p = { .fd = mc_rpcc_fd(r), .events = POLLIN };
	char b[256];

	fflush(stdout);
	for (;;) {
		int n = poll(&p, 1, (int)timeout_ms);

		if (n == 0) {
			fprintf(stderr, "%s: the server kept the connection open\n", PROG);
			return MC_EXIT_UNAVAILABLE;
		}
		if (n < 0 && errno != EINTR)
			return MC_EXIT_UNAVAILABLE;
		if (n > 0 && read(p.fd, b, sizeof(b)) <= 0)
			return MC_EXIT_OK;
	}
}

static int
transport_or_remote(const char *method, const struct mc_err *err)
{
	if (err->code == MC_ERR_UNAVAILABLE || err->code == MC_ERR_PROTO ||
	    err->code == MC_ERR_SYSTEM || err->code == MC_ERR_TIMEOUT) {
		fprintf(stderr, "%s: %s: %s\n", PROG, method, err->msg);
		return MC_EXIT_UNAVAILABLE;
	}
	fprintf(stderr, "%s: %s: %s: %s\n", PROG, method, mc_status_name(err->code), err->msg);
	return MC_EXIT_FAIL;
}

/* Write a response's bulk to out (or skip it when out is NULL). */
static int
take_bulk(struct mc_rpcc *r, uint64_t len, const char *out, struct mc_err *err)
{
	FILE *f;
	char *buf;
	int rc = 0;

	if (out == NULL)
		return mc_rpcc_skip_bulk(r, len, err);
	if (len > ((uint64_t)1 << 32))
		return mc_err_set(err, MC_ERR_TOO_LARGE, "bulk of %llu bytes is too large",
				  (unsigned long long)len);
	buf = malloc(len > 0 ? (size_t)len : 1);
	if (buf == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory for %llu bytes",
				  (unsigned long long)len);
	if (mc_rpcc_read_bulk(r, buf, len, err) < 0) {
		free(buf);
		return -1;
	}
	/* a local file problem is MC_ERR_INVALID: the caller exits 64 */
	f = fopen(out, "wb");
	if (f == NULL)
		rc = mc_err_set(err, MC_ERR_INVALID, "cannot write '%s': %s", out,
				mc_strerror(errno));
	else if (fwrite(buf, 1, (size_t)len, f) != len)
		rc = mc_err_set(err, MC_ERR_INVALID, "cannot write '%s': %s", out,
				mc_strerror(errno));
	if (f != NULL && fclose(f) != 0 && rc == 0)
		rc = mc_err_set(err, MC_ERR_INVALID, "cannot write '%s': %s", out,
				mc_strerror(errno));
	free(buf);
	return rc;
}

/*
 * One call with an optional request bulk; prints the result. 0 ok,
 * 1 remote error, 64 a local file problem, 69 transport failure.
 */
static const char *stall_path;

/* Block until a line (or EOF) arrives on the --stall fifo. */
static void
stall(void)
{
	FILE *f = fopen(stall_path, "r");

	if (f == NULL)
		return;
	(void)fgetc(f);
	fclose(f);
}

/* The request begun on r, named method in messages. */
static int
call(struct mc_rpcc *r, const char *method, const void *bulk, uint64_t bulk_len, const char *out,
     bool print)
{
	struct mc_msg resp;
	struct mc_err err;
	int rc = MC_EXIT_OK;

	mc_err_clear(&err);
	if (mc_rpcc_send(r, bulk, bulk_len, &err) < 0 || mc_rpcc_flush(r, &err) < 0 ||
	    mc_rpcc_recv(r, &resp, &err) < 0)
		return transport_or_remote(method, &err);
	if (mc_msg_error(&resp, &err) < 0) {
		/* an error response never carries a bulk */
		mc_msg_release(&resp);
		return transport_or_remote(method, &err);
	}
	if (print) {
		if (resp.body != NULL)
			mc_json_write(stdout, resp.body);
		else
			fputs("{}", stdout);
		fputc('\n', stdout);
		fflush(stdout);
	}
	if (resp.has_bulk && print && stall_path != NULL)
		stall();
	if (resp.has_bulk && take_bulk(r, resp.bulk_len, out, &err) < 0) {
		fprintf(stderr, "%s: %s: %s\n", PROG, method, err.msg);
		rc = err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_UNAVAILABLE;
	}
	mc_msg_release(&resp);
	return rc;
}

/* A notification the server sent among its responses: one JSON line. */
static void
print_notify(void *arg, const struct mc_msg *n)
{
	(void)arg;
	fputs("{\"notify\":", stdout);
	mc_json_write_str(stdout, n->method, n->method_len);
	fputs(",\"params\":", stdout);
	if (n->body != NULL)
		mc_json_write(stdout, n->body);
	else
		fputs("{}", stdout);
	fputs("}\n", stdout);
	fflush(stdout);
}

/* Read all of path into *buf (malloc'd). */
static int
slurp(const char *path, char **buf, uint64_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 65536, n = 0, got;
	char *p = malloc(cap);

	if (f == NULL || p == NULL)
		goto fail;
	while ((got = fread(p + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *q = realloc(p, cap * 2);

			if (q == NULL)
				goto fail;
			p = q;
			cap *= 2;
		}
	}
	if (ferror(f))
		goto fail;
	fclose(f);
	*buf = p;
	*len = n;
	return 0;
fail:
	if (f != NULL)
		fclose(f);
	free(p);
	return -1;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--tenant T] [--token T] [--timeout-ms N] [--bulk FILE] [-o FILE]\n"
		"              [--stall FIFO] [--notify] [--wait-close] [--bulk-short N]\n"
		"              ADDR METHOD\n"
		"              [NAME=STR | NAME:=UINT|true|false|null|[]|b64:B64|JSON]...\n"
		"              [--then | --then-notify METHOD [FIELD]...]...\n",
		PROG);
}

int
main(int argc, char **argv)
{
	const char *bulk_path = NULL, *out = NULL;
	struct hello hello = { 0 };
	bool closing = false;
	char *bulk = NULL;
	uint64_t timeout_ms = 5000;
	struct fields f;
	struct {
		const char *method;
		struct fields f;
		bool notify;
	} then[THEN_MAX];
	int nthen;
	struct mc_rpcc *r;
	struct mc_err err;
	bool notify = false, short_bulk = false;
	uint64_t short_len = 0;
	int i = 1, rc;

	while (i < argc && argv[i][0] == '-') {
		if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return MC_EXIT_OK;
		} else if (strcmp(argv[i], "--notify") == 0) {
			notify = true;
			i++;
		} else if (strcmp(argv[i], "--bulk") == 0 && i + 1 < argc) {
			bulk_path = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "--stall") == 0 && i + 1 < argc) {
			stall_path = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			out = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "--tenant") == 0 && i + 1 < argc) {
			hello.tenant = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "--token") == 0 && i + 1 < argc) {
			hello.token = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "--bulk-short") == 0 && i + 1 < argc) {
			if (mc_parse_u64(argv[i + 1], &short_len, NULL) < 0) {
				fprintf(stderr, "%s: invalid --bulk-short '%s'\n", PROG,
					argv[i + 1]);
				return MC_EXIT_USAGE;
			}
			short_bulk = true;
			i += 2;
		} else if (strcmp(argv[i], "--wait-close") == 0) {
			closing = true;
			i++;
		} else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
			if (mc_parse_u64(argv[i + 1], &timeout_ms, NULL) < 0 || timeout_ms == 0 ||
			    timeout_ms > 600000) {
				fprintf(stderr, "%s: invalid --timeout-ms '%s': not in 1..600000\n",
					PROG, argv[i + 1]);
				return MC_EXIT_USAGE;
			}
			i += 2;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", PROG, argv[i]);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - i < 2) {
		usage(stderr);
		return MC_EXIT_USAGE;
	}
	/* the calls after the first: --then[-notify] METHOD FIELD... */
	nthen = 0;
	for (int k = i + 2; k < argc; k++) {
		bool n = strcmp(argv[k], "--then-notify") == 0;

		if (!n && strcmp(argv[k], "--then") != 0)
			continue;
		if (k + 1 >= argc || nthen == THEN_MAX) {
			usage(stderr);
			return MC_EXIT_USAGE;
		}
		then[nthen].method = argv[k + 1];
		then[nthen].notify = n;
		then[nthen].f = (struct fields){ .argv = argv + k + 2 };
		if (nthen > 0)
			then[nthen - 1].f.n = (int)(argv + k - then[nthen - 1].f.argv);
		nthen++;
	}
	f.argv = argv + i + 2;
	f.n = argc - i - 2;
	if (nthen > 0) {
		f.n = (int)(then[0].f.argv - 2 - f.argv);
		then[nthen - 1].f.n = (int)(argv + argc - then[nthen - 1].f.argv);
	}
	f.has_bulk = bulk_path != NULL;
	f.bulk_len = 0;
	if (check_fields(&f) < 0)
		return MC_EXIT_USAGE;
	for (int k = 0; k < nthen; k++)
		if (check_fields(&then[k].f) < 0)
			return MC_EXIT_USAGE;
	if (bulk_path != NULL && slurp(bulk_path, &bulk, &f.bulk_len) < 0) {
		fprintf(stderr, "%s: cannot read '%s': %s\n", PROG, bulk_path, mc_strerror(errno));
		return MC_EXIT_USAGE;
	}

	r = mc_rpcc_connect(argv[i], (int)timeout_ms, &err);
	if (r == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err.msg);
		free(bulk);
		return MC_EXIT_UNAVAILABLE;
	}
	mc_rpcc_on_notify(r, print_notify, NULL);
	rc = MC_EXIT_OK;
	if (hello.tenant != NULL || hello.token != NULL) {
		pack_hello(mc_rpcc_begin(r, "hello"), &hello);
		rc = call(r, "hello", NULL, 0, NULL, false);
	}
	if (rc == MC_EXIT_OK && notify) {
		pack_fields(mc_rpcc_begin(r, argv[i + 1]), &f);
		if (mc_rpcc_notify(r, &err) < 0) {
			rc = transport_or_remote(argv[i + 1], &err);
		} else {
			/* a call after it shows the notification was read */
			pack_hello(mc_rpcc_begin(r, "hello"), &hello);
			rc = call(r, "hello", NULL, 0, NULL, false);
		}
	} else if (rc == MC_EXIT_OK && short_bulk) {
		pack_fields(mc_rpcc_begin(r, argv[i + 1]), &f);
		if (mc_rpcc_send(r, bulk, short_len < f.bulk_len ? short_len : f.bulk_len, &err) <
			    0 ||
		    mc_rpcc_flush(r, &err) < 0)
			rc = transport_or_remote(argv[i + 1], &err);
		else
			closing = true;
	} else if (rc == MC_EXIT_OK) {
		pack_fields(mc_rpcc_begin(r, argv[i + 1]), &f);
		rc = call(r, argv[i + 1], bulk, f.bulk_len, out, true);
	}
	for (int k = 0; k < nthen && rc == MC_EXIT_OK; k++) {
		pack_fields(mc_rpcc_begin(r, then[k].method), &then[k].f);
		if (!then[k].notify) {
			rc = call(r, then[k].method, NULL, 0, NULL, true);
		} else if (mc_rpcc_notify(r, &err) < 0) {
			rc = transport_or_remote(then[k].method, &err);
		} else if (k == nthen - 1) {
			/* as --notify: a call after it shows the notification was read */
			pack_hello(mc_rpcc_begin(r, "hello"), &hello);
			rc = call(r, "hello", NULL, 0, NULL, false);
		}
	}
	if (closing)
		rc = wait_close(r, timeout_ms);
	mc_rpcc_close(r);
	free(bulk);
	return rc;
}
