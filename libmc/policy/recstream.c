/*
 * Record streams: block output for a packer, and a block reader that
 * frames msgpack records or parses JSON lines into msgpack_object trees.
 *
 * Reading costs no malloc per record in the steady state: input comes in
 * blocks into one buffer, every record is decoded into one zone cleared
 * between records (it keeps its first chunk), JSON strings are unescaped
 * into one scratch buffer, and JSON container elements collect on one
 * stack that only grows.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "mc/recstream.h"
#include "mc/wire.h"

#define READ_BLOCK (1u << 18)
#define JSON_MAX_DEPTH 8

/* ---- output ---- */

struct mc_rs_out {
	FILE *f;
	size_t len;
	bool failed;
	char buf[1 << 16];
};

static void
out_flush(struct mc_rs_out *o)
{
	if (o->len != 0 && !o->failed && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->failed = true;
	o->len = 0;
}

static int
out_write(void *data, const char *buf, size_t len)
{
	struct mc_rs_out *o = data;

	if (o->failed)
		return -1;
	if (len > sizeof(o->buf) - o->len) {
		out_flush(o);
		/* too big to buffer: straight out, after what came before */
		if (len > sizeof(o->buf)) {
			if (!o->failed && fwrite(buf, 1, len, o->f) != len)
				o->failed = true;
			return o->failed ? -1 : 0;
		}
	}
	memcpy(o->buf + o->len, buf, len);
	o->len += len;
	return 0;
}

struct mc_rs_out *
mc_rs_out_new(FILE *f, msgpack_packer *pk, struct mc_err *err)
{
	struct mc_rs_out *o = malloc(sizeof(*o));

	if (o == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the output buffer");
		return NULL;
	}
	o->f = f;
	o->len = 0;
	o->failed = false;
	msgpack_packer_init(pk, o, out_write);
	return o;
}

bool
mc_rs_out_failed(const struct mc_rs_out *o)
{
	return o->failed;
}

int
mc_rs_out_done(struct mc_rs_out *o, const char *what, struct mc_err *err)
{
	bool failed;

	out_flush(o);
	failed = o->failed;
	free(o);
	if (failed)
		return mc_err_errno(err, "cannot write %s", what);
	return 0;
}

void
mc_rs_out_abort(struct mc_rs_out *o)
{
	free(o);
}

/* ---- input ---- */

struct mc_rs {
	FILE *f;
	bool json, flat;
	const char *format, *what;
	size_t max_record;
	bool started;	 /* a record was asked for before */
	uint64_t rec;	 /* the record being read or judged; 0 is the header */
	uint64_t lineno; /* JSON: the line being read */
	char *buf;	 /* unread input is buf[pos..len) */
	size_t pos, len, cap;
	size_t skip; /* bytes of the last record, consumed on the next call */
	bool eof;
	msgpack_zone *zone;
	msgpack_object top;
	/* JSON: unescaped strings of the current line, and the parse stack */
	char *scratch;
	size_t scratch_cap;
	msgpack_object *stk;
	size_t nstk, stk_cap;
};

struct mc_rs *
mc_rs_open(FILE *f, bool json, const char *format, const char *what, size_t max_record, int flags,
	   struct mc_err *err)
{
	struct mc_rs *r = calloc(1, sizeof(*r));

	if (r == NULL)
		goto fail;
	r->f = f;
	r->json = json;
	r->flat = (flags & MC_RS_FLAT) != 0;
	r->format = format;
	r->what = what;
	r->max_record = max_record;
	r->cap = READ_BLOCK;
	r->buf = malloc(r->cap);
	if (r->buf == NULL)
		goto fail;
	r->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
	if (r->zone == NULL)
		goto fail;
	return r;
fail:
	mc_rs_close(r);
	mc_err_set(err, MC_ERR_NO_SPACE, "cannot read %s: out of memory", what);
	return NULL;
}

void
mc_rs_close(struct mc_rs *r)
{
	if (r == NULL)
		return;
	if (r->zone != NULL)
		msgpack_zone_free(r->zone);
	free(r->stk);
	free(r->scratch);
	free(r->buf);
	free(r);
}

bool
mc_rs_in_header(const struct mc_rs *r)
{
	return r->rec == 0;
}

static int
vfail(const struct mc_rs *r, struct mc_err *err, const char *fmt, va_list ap)
{
	char msg[MC_ERR_MSG_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (r->json)
		return mc_err_set(err, MC_ERR_PROTO, "line %" PRIu64 ": %s", r->lineno, msg);
	if (r->rec == 0)
		return mc_err_set(err, MC_ERR_PROTO, "header: %s", msg);
	return mc_err_set(err, MC_ERR_PROTO, "record %" PRIu64 ": %s", r->rec, msg);
}

int
mc_rs_fail(const struct mc_rs *r, struct mc_err *err, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(r, err, fmt, ap);
	va_end(ap);
	return rc;
}

static int
no_memory(const struct mc_rs *r, struct mc_err *err)
{
	return mc_err_set(err, MC_ERR_NO_SPACE, "cannot read %s: out of memory", r->what);
}

static int
not_ours(const struct mc_rs *r, struct mc_err *err)
{
	return mc_err_set(err, MC_ERR_PROTO, "not an %s stream", r->format);
}

/* More input after the unread part: 1 bytes came, 0 end of input, -1 error. */
static int
fill(struct mc_rs *r, struct mc_err *err)
{
	size_t n;

	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	if (r->len == r->cap) {
		/* a record or line never needs more than max_record + 1 */
		size_t ncap = r->cap * 2;
		char *nb;

		if (ncap > 2 * r->max_record + READ_BLOCK)
			return mc_err_set(err, MC_ERR_INTERNAL, "record reader buffer overrun");
		nb = realloc(r->buf, ncap);
		if (nb == NULL)
			return no_memory(r, err);
		r->buf = nb;
		r->cap = ncap;
	}
	n = fread(r->buf + r->len, 1, r->cap - r->len, r->f);
	r->len += n;
	if (n > 0)
		return 1;
	if (ferror(r->f))
		return mc_err_errno(err, "cannot read %s", r->what);
	r->eof = true;
	return 0;
}

/* The input ended cleanly between records: fine unless nothing came. */
static int
stream_end(const struct mc_rs *r, struct mc_err *err)
{
	if (r->rec == 0)
		return mc_err_set(err, MC_ERR_PROTO, "not an %s stream: empty input", r->format);
	return 0;
}

static int
next_msgpack(struct mc_rs *r, const msgpack_object **o, struct mc_err *err)
{
	for (;;) {
		const char *why = NULL;
		size_t ml = 0, off = 0;
		int vd;

		vd = mc_wire_check(r->buf + r->pos, r->len - r->pos, r->max_record, &ml, &why);
		if (vd == MC_WIRE_BAD) {
			if (r->rec == 0)
				return mc_err_set(err, MC_ERR_PROTO, "not an %s stream: %s",
						  r->format, why);
			return mc_rs_fail(r, err, "malformed: %s", why);
		}
		if (vd == MC_WIRE_MORE) {
			if (r->eof) {
				if (r->pos == r->len)
					return stream_end(r, err);
				if (r->rec == 0)
					return mc_err_set(err, MC_ERR_PROTO, "truncated header");
				return mc_rs_fail(r, err, "truncated after %zu bytes",
						  r->len - r->pos);
			}
			if (fill(r, err) < 0)
				return -1;
			continue;
		}
		msgpack_zone_clear(r->zone);
		if (msgpack_unpack(r->buf + r->pos, ml, &off, r->zone, &r->top) !=
			    MSGPACK_UNPACK_SUCCESS ||
		    off != ml) {
			if (r->rec == 0)
				return not_ours(r, err);
			return mc_rs_fail(r, err, "cannot decode the record");
		}
		/* the caller judges the record in place: consume it next time */
		r->skip = ml;
		*o = &r->top;
		return 1;
	}
}

/*
 * JSON lines. Container elements collect on r->stk and move into the
 * zone when the container closes, since their count is only known then.
 */
struct jcur {
	const char *p, *start, *end;
	char *out; /* next free byte in scratch */
};

static int
jfail(const struct mc_rs *r, const struct jcur *j, struct mc_err *err, const char *what)
{
	return mc_rs_fail(r, err, "%s at column %td", what, j->p - j->start + 1);
}

static void
jws(struct jcur *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r'))
		j->p++;
}

static int
hex4(const char *p, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *
put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
	}
	*o++ = (char)(0x80 | (cp & 0x3f));
	return o;
}

/* The escape at j->p (on its backslash) onto *o; j->p moves past it. */
static int
jescape(const struct mc_rs *r, struct jcur *j, char **o, struct mc_err *err)
{
	static const char plain[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	uint32_t cp, lo;

	if (j->end - j->p < 2)
		return jfail(r, j, err, "unterminated string");
	if (j->p[1] != 'u') {
		for (size_t i = 0; i + 1 < sizeof(plain); i += 2) {
			if (plain[i] == j->p[1]) {
				*(*o)++ = plain[i + 1];
				j->p += 2;
				return 0;
			}
		}
		return jfail(r, j, err, "bad escape in string");
	}
	if (j->end - j->p < 6 || hex4(j->p + 2, &cp) < 0)
		return jfail(r, j, err, "bad \\u escape");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return jfail(r, j, err, "lone low surrogate");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (j->end - j->p < 12 || j->p[6] != '\\' || j->p[7] != 'u' ||
		    hex4(j->p + 8, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
			return jfail(r, j, err, "lone high surrogate");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		j->p += 6;
	}
	/* a code point, as UTF-8: bytes that are not text come as {"b64":...} */
	if (cp < 0x80)
		*(*o)++ = (char)cp;
	else
		*o = put_utf8(*o, cp);
	j->p += 6;
	return 0;
}

/*
 * A string at j->p (on its opening quote), as a STR object. One without
 * escapes points straight into the line, which stays put until the next
 * record is asked for; others are unescaped into scratch. Unescaping
 * never lengthens, so a line's strings all fit in scratch.
 */
static int
jstring(const struct mc_rs *r, struct jcur *j, msgpack_object *out, struct mc_err *err)
{
	const char *q = ++j->p;
	char *o, *s;

	while (q < j->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
		q++;
	if (q < j->end && *q == '"') {
		out->type = MSGPACK_OBJECT_STR;
		out->via.str.ptr = j->p;
		out->via.str.size = (uint32_t)(q - j->p);
		j->p = q + 1;
		return 0;
	}
	s = o = j->out;
	memcpy(o, j->p, (size_t)(q - j->p));
	o += q - j->p;
	j->p = q;
	for (;;) {
		unsigned char c;

		if (j->p >= j->end)
			return jfail(r, j, err, "unterminated string");
		c = (unsigned char)*j->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return jfail(r, j, err, "control character in string");
		if (c != '\\') {
			*o++ = (char)c;
			j->p++;
		} else if (jescape(r, j, &o, err) < 0) {
			return -1;
		}
	}
	j->p++;
	out->type = MSGPACK_OBJECT_STR;
	out->via.str.ptr = s;
	out->via.str.size = (uint32_t)(o - s);
	j->out = o;
	return 0;
}

static void
jdigits(struct jcur *j)
{
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
}

static int
jnumber(const struct mc_rs *r, struct jcur *j, msgpack_object *out, struct mc_err *err)
{
	const char *s = j->p;
	bool neg = false, integral = true, big = false;
	uint64_t u = 0;
	char tmp[64];

	if (j->p < j->end && *j->p == '-') {
		neg = true;
		j->p++;
	}
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return jfail(r, j, err, "bad number");
	if (*j->p == '0' && j->end - j->p > 1 && j->p[1] >= '0' && j->p[1] <= '9')
		return jfail(r, j, err, "number with a leading zero");
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		unsigned d = (unsigned)(*j->p - '0');

		if (u > (UINT64_MAX - d) / 10)
			big = true;
		u = u * 10 + d;
		j->p++;
	}
	if (j->p < j->end && *j->p == '.') {
		integral = false;
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return jfail(r, j, err, "bad number");
		jdigits(j);
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		integral = false;
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return jfail(r, j, err, "bad number");
		jdigits(j);
	}
	if (integral && !big && !neg) {
		out->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		out->via.u64 = u;
		return 0;
	}
	if (integral && !big && u <= (uint64_t)INT64_MAX + 1) {
		out->type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
		out->via.i64 = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
		return 0;
	}
	/* never wrapped: an integer msgpack could not carry is refused */
	if (integral)
		return jfail(r, j, err, "integer out of range");
	/* strtod needs a terminated copy; a sane float is well under 64 */
	if ((size_t)(j->p - s) >= sizeof(tmp))
		return jfail(r, j, err, "number too long");
	memcpy(tmp, s, (size_t)(j->p - s));
	tmp[j->p - s] = '\0';
	out->type = MSGPACK_OBJECT_FLOAT64;
	out->via.f64 = strtod(tmp, NULL);
	return 0;
}

static bool
jword(struct jcur *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return false;
	j->p += n;
	return true;
}

/* Room on the stack for two more entries (a name and its value). */
static int
jroom(struct mc_rs *r, struct mc_err *err)
{
	size_t ncap;
	msgpack_object *ns;

	if (r->stk_cap - r->nstk >= 2)
		return 0;
	ncap = r->stk_cap == 0 ? 256 : r->stk_cap * 2;
	ns = realloc(r->stk, ncap * sizeof(*ns));
	if (ns == NULL)
		return no_memory(r, err);
	r->stk = ns;
	r->stk_cap = ncap;
	return 0;
}

static int jvalue(struct mc_rs *r, struct jcur *j, msgpack_object *out, int depth,
		  struct mc_err *err);

/*
 * The members of an array (close ']', one value each) or an object
 * (close '}', a name and a value each) onto the stack, up to the close.
 */
static int
jmembers(struct mc_rs *r, struct jcur *j, char close, int depth, struct mc_err *err)
{
	j->p++;
	jws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		size_t at;
		msgpack_object v;

		/*
		 * Claim this member's slots first and parse scalars straight
		 * into them: building each object in a local and copying it
		 * in made the copy wait on the partial stores (a third of
		 * the parse time). A nested value may move the stack, so it
		 * is built aside and stored by index.
		 */
		if (jroom(r, err) < 0)
			return -1;
		at = r->nstk;
		r->nstk += close == '}' ? 2 : 1;
		jws(j);
		if (close == '}') {
			if (j->p >= j->end || *j->p != '"')
				return jfail(r, j, err, "expected a field name");
			if (jstring(r, j, &r->stk[at++], err) < 0)
				return -1;
			jws(j);
			if (j->p >= j->end || *j->p != ':')
				return jfail(r, j, err, "expected ':'");
			j->p++;
			jws(j);
		}
		if (j->p < j->end && (*j->p == '{' || *j->p == '[')) {
			if (jvalue(r, j, &v, depth + 1, err) < 0)
				return -1;
			r->stk[at] = v;
		} else if (jvalue(r, j, &r->stk[at], depth + 1, err) < 0) {
			return -1;
		}
		jws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			return 0;
		}
		return jfail(r, j, err,
			     close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int
jarray(struct mc_rs *r, struct jcur *j, msgpack_object *out, int depth, struct mc_err *err)
{
	size_t base = r->nstk, n;
	msgpack_object *a = NULL;

	if (jmembers(r, j, ']', depth, err) < 0)
		return -1;
	n = r->nstk - base;
	if (n > 0) {
		a = msgpack_zone_malloc(r->zone, n * sizeof(*a));
		if (a == NULL)
			return no_memory(r, err);
		memcpy(a, r->stk + base, n * sizeof(*a));
	}
	r->nstk = base;
	out->type = MSGPACK_OBJECT_ARRAY;
	out->via.array.size = (uint32_t)n;
	out->via.array.ptr = a;
	return 0;
}

static int
jobject(struct mc_rs *r, struct jcur *j, msgpack_object *out, int depth, struct mc_err *err)
{
	size_t base = r->nstk, n;
	msgpack_object_kv *kv = NULL;

	if (jmembers(r, j, '}', depth, err) < 0)
		return -1;
	n = (r->nstk - base) / 2;
	if (n > 0) {
		kv = msgpack_zone_malloc(r->zone, n * sizeof(*kv));
		if (kv == NULL)
			return no_memory(r, err);
		for (size_t i = 0; i < n; i++) {
			kv[i].key = r->stk[base + 2 * i];
			kv[i].val = r->stk[base + 2 * i + 1];
		}
	}
	r->nstk = base;
	out->type = MSGPACK_OBJECT_MAP;
	out->via.map.size = (uint32_t)n;
	out->via.map.ptr = kv;
	return 0;
}

/* The value of a base64 digit, or -1. */
static int
b64_digit(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * {"b64":"..."} at j->p (on its '{'): a string of bytes that are not
 * text (mc_json_write_str writes them so), decoded into scratch as a STR
 * object, and allowed in flat records too. 1 when it was one, 0 (j->p
 * unmoved) when the object is another, -1 when it names "b64" but is
 * not padded standard base64 alone in its object.
 */
static int
jbytes(const struct mc_rs *r, struct jcur *j, msgpack_object *out, struct mc_err *err)
{
	const char *open = j->p, *q;
	char *o = j->out;
	size_t n;

	j->p++;
	jws(j);
	if (!jword(j, "\"b64\"")) {
		j->p = open;
		return 0;
	}
	jws(j);
	if (!jword(j, ":"))
		return jfail(r, j, err, "expected ':'");
	jws(j);
	if (j->p >= j->end || *j->p != '"')
		return jfail(r, j, err, "\"b64\" wants a base64 string");
	q = ++j->p;
	while (q < j->end && *q != '"')
		q++;
	n = (size_t)(q - j->p);
	if (q >= j->end || n % 4 != 0)
		return jfail(r, j, err, "bad base64 (padded standard base64 expected)");
	for (size_t i = 0; i < n; i += 4) {
		const char *g = j->p + i;
		int d[4], pad = 0;

		for (int k = 0; k < 4; k++) {
			d[k] = b64_digit(g[k]);
			if (g[k] == '=' && i + 4 == n && k >= 2 && (k == 3 || g[3] == '=')) {
				d[k] = 0;
				pad++;
			} else if (d[k] < 0) {
				j->p = g + k;
				return jfail(r, j, err,
					     "bad base64 (padded standard base64 expected)");
			}
		}
		*o++ = (char)(d[0] << 2 | d[1] >> 4);
		if (pad < 2)
			*o++ = (char)((d[1] & 15) << 4 | d[2] >> 2);
		if (pad < 1)
			*o++ = (char)((d[2] & 3) << 6 | d[3]);
	}
	j->p = q + 1;
	jws(j);
	if (!jword(j, "}"))
		return jfail(r, j, err, "\"b64\" must be alone in its object");
	out->type = MSGPACK_OBJECT_STR;
	out->via.str.ptr = j->out;
	out->via.str.size = (uint32_t)(o - j->out);
	j->out = o;
	return 1;
}

static int
jvalue(struct mc_rs *r, struct jcur *j, msgpack_object *out, int depth, struct mc_err *err)
{
	int rc;

	if (j->p >= j->end)
		return jfail(r, j, err, "missing value");
	switch (*j->p) {
	case '"':
		return jstring(r, j, out, err);
	case '{':
		rc = jbytes(r, j, out, err);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		/* FALLTHROUGH */
	case '[':
		if (r->flat)
			return jfail(r, j, err, "nested objects and arrays are not supported");
		if (depth >= JSON_MAX_DEPTH)
			return jfail(r, j, err, "nested too deep");
		if (*j->p == '{')
			return jobject(r, j, out, depth, err);
		return jarray(r, j, out, depth, err);
	case 'n':
		out->type = MSGPACK_OBJECT_NIL;
		return jword(j, "null") ? 0 : jfail(r, j, err, "bad literal");
	case 't':
		out->type = MSGPACK_OBJECT_BOOLEAN;
		out->via.boolean = true;
		return jword(j, "true") ? 0 : jfail(r, j, err, "bad literal");
	case 'f':
		out->type = MSGPACK_OBJECT_BOOLEAN;
		out->via.boolean = false;
		return jword(j, "false") ? 0 : jfail(r, j, err, "bad literal");
	default:
		return jnumber(r, j, out, err);
	}
}

/* One line into r->top: 1 a record, 0 a blank line, -1 error. */
static int
json_line(struct mc_rs *r, const char *s, size_t len, struct mc_err *err)
{
	struct jcur j = { s, s, s + len, NULL };
	struct mc_err e;

	jws(&j);
	if (j.p == j.end)
		return 0; /* blank lines carry nothing */
	if (r->scratch_cap < len) {
		size_t ncap = r->scratch_cap == 0 ? 4096 : r->scratch_cap;
		char *ns;

		while (ncap < len)
			ncap *= 2;
		ns = realloc(r->scratch, ncap);
		if (ns == NULL)
			return no_memory(r, err);
		r->scratch = ns;
		r->scratch_cap = ncap;
	}
	j.out = r->scratch;
	msgpack_zone_clear(r->zone);
	r->nstk = 0;
	if (*j.p != '{') {
		if (r->rec == 0)
			return not_ours(r, err);
		return jfail(r, &j, err, "expected an object");
	}
	/* in the header any flaw means this is not our kind of stream */
	if (jobject(r, &j, &r->top, 1, r->rec == 0 ? &e : err) < 0) {
		if (r->rec != 0)
			return -1;
		if (e.code == MC_ERR_NO_SPACE)
			return mc_err_set(err, e.code, "not an %s stream", r->format);
		return not_ours(r, err);
	}
	jws(&j);
	if (j.p != j.end) {
		if (r->rec == 0)
			return not_ours(r, err);
		return jfail(r, &j, err, "trailing characters after the object");
	}
	return 1;
}

static int
next_json(struct mc_rs *r, const msgpack_object **o, struct mc_err *err)
{
	for (;;) {
		const char *s = r->buf + r->pos;
		size_t avail = r->len - r->pos, len;
		const char *nl = memchr(s, '\n', avail);
		int rc;

		if (nl == NULL) {
			if (avail > r->max_record) {
				r->lineno++;
				return mc_rs_fail(r, err, "longer than %zu bytes", r->max_record);
			}
			if (!r->eof) {
				if (fill(r, err) < 0)
					return -1;
				continue;
			}
			if (avail == 0)
				return stream_end(r, err);
			len = avail; /* a last line without its newline */
		} else {
			len = (size_t)(nl - s);
			if (len > r->max_record) {
				r->lineno++;
				return mc_rs_fail(r, err, "longer than %zu bytes", r->max_record);
			}
		}
		r->lineno++;
		rc = json_line(r, s, len, err);
		if (rc < 0)
			return -1;
		/* the line stays in buf until the next call: the tree may point into it */
		r->pos += nl != NULL ? len + 1 : len;
		if (rc == 1) {
			*o = &r->top;
			return 1;
		}
	}
}

int
mc_rs_next(struct mc_rs *r, const msgpack_object **o, struct mc_err *err)
{
	r->pos += r->skip;
	r->skip = 0;
	if (r->started)
		r->rec++;
	r->started = true;
	return r->json ? next_json(r, o, err) : next_msgpack(r, o, err);
}
