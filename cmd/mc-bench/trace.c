/*
 * Reading request traces (trace.h): a small JSON reader for one object a
 * line, taking the fields a trace has and stepping over everything else.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

/* Values nest this deep at most inside an unknown field. */
#define DEPTH_MAX 64

struct cursor {
	const char *p, *end;
	const char *why;
};

static void
skip_ws(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
		c->p++;
}

static bool
expect(struct cursor *c, char ch)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

/*
 * A string: copied (escapes kept as the bytes after the backslash, which
 * is enough for names) into buf when buf is not NULL, truncated to cap.
 */
static bool
read_string(struct cursor *c, char *buf, size_t cap)
{
	size_t n = 0;

	if (!expect(c, '"')) {
		c->why = "expected a string";
		return false;
	}
	while (c->p < c->end && *c->p != '"') {
		char ch = *c->p++;

		if (ch == '\\') {
			if (c->p >= c->end)
				break;
			ch = *c->p++;
			if (ch == 'u') {
				/* \uXXXX: four hex digits, kept as '?' */
				if (c->end - c->p < 4) {
					c->why = "a bad \\u escape";
					return false;
				}
				c->p += 4;
				ch = '?';
			}
		}
		if (buf != NULL && n + 1 < cap)
			buf[n++] = ch;
	}
	if (c->p >= c->end) {
		c->why = "an unterminated string";
		return false;
	}
	c->p++;
	if (buf != NULL && cap > 0)
		buf[n] = '\0';
	return true;
}

/* A JSON number that must be a non-negative integer (a fraction is truncated). */
static bool
read_u64(struct cursor *c, uint64_t *out)
{
	char *end;
	unsigned long long v;

	skip_ws(c);
	if (c->p >= c->end || !isdigit((unsigned char)*c->p)) {
		c->why = "expected an unsigned number";
		return false;
	}
	errno = 0;
	v = strtoull(c->p, &end, 10);
	if (errno != 0 || end > c->end) {
		c->why = "a number out of range";
		return false;
	}
	c->p = end;
	/* 1.5 or 1e3: the integer part is what a millisecond or a length needs */
	while (c->p < c->end && (isdigit((unsigned char)*c->p) || *c->p == '.' || *c->p == 'e' ||
				 *c->p == 'E' || *c->p == '+' || *c->p == '-'))
		c->p++;
	*out = v;
	return true;
}

static bool skip_value(struct cursor *c, int depth);

static bool
skip_container(struct cursor *c, char close, bool keys, int depth)
{
	if (depth > DEPTH_MAX) {
		c->why = "values nested too deep";
		return false;
	}
	if (expect(c, close))
		return true;
	for (;;) {
		if (keys && (!read_string(c, NULL, 0) || !expect(c, ':'))) {
			c->why = "a bad object";
			return false;
		}
		if (!skip_value(c, depth + 1))
			return false;
		if (expect(c, close))
			return true;
		if (!expect(c, ',')) {
			c->why = keys ? "expected ',' or '}'" : "expected ',' or ']'";
			return false;
		}
	}
}

static bool
skip_value(struct cursor *c, int depth)
{
	skip_ws(c);
	if (c->p >= c->end) {
		c->why = "a value is missing";
		return false;
	}
	switch (*c->p) {
	case '"':
		return read_string(c, NULL, 0);
	case '{':
		c->p++;
		return skip_container(c, '}', true, depth);
	case '[':
		c->p++;
		return skip_container(c, ']', false, depth);
	default:
		/* a number, true, false or null */
		while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']' &&
		       *c->p != ' ' && *c->p != '\t')
			c->p++;
		return true;
	}
}

static bool
read_ids(struct cursor *c, struct trace_req *r)
{
	if (!expect(c, '[')) {
		c->why = "'hash_ids' is not an array";
		return false;
	}
	r->n = 0;
	if (expect(c, ']'))
		return true;
	for (;;) {
		uint64_t v;

		if (!read_u64(c, &v)) {
			c->why = "'hash_ids' holds something other than unsigned numbers";
			return false;
		}
		if (r->n == r->cap) {
			size_t ncap = r->cap ? r->cap * 2 : 64;
			uint64_t *ids = realloc(r->ids, ncap * sizeof(*ids));

			if (ids == NULL) {
				c->why = "out of memory";
				return false;
			}
			r->ids = ids;
			r->cap = ncap;
		}
		r->ids[r->n++] = v;
		if (expect(c, ']'))
			return true;
		if (!expect(c, ',')) {
			c->why = "expected ',' or ']' in 'hash_ids'";
			return false;
		}
	}
}

/* An id that may be a number or a string, kept as text. */
static bool
read_id_text(struct cursor *c, char *buf, size_t cap)
{
	const char *start;

	skip_ws(c);
	if (c->p < c->end && *c->p == '"')
		return read_string(c, buf, cap);
	start = c->p;
	if (!skip_value(c, 0))
		return false;
	snprintf(buf, cap, "%.*s", (int)(c->p - start), start);
	return true;
}

static bool
parse_line(struct cursor *c, struct trace_req *r)
{
	bool have_ids = false;
	char key[32];

	r->n = 0;
	r->timestamp = r->input_length = r->output_length = 0;
	r->has_timestamp = false;
	r->tenant[0] = r->type[0] = r->chat_id[0] = r->parent_chat_id[0] = '\0';
	if (!expect(c, '{')) {
		c->why = "a line is not a JSON object";
		return false;
	}
	if (!expect(c, '}')) {
		for (;;) {
			bool ok;

			if (!read_string(c, key, sizeof(key)) || !expect(c, ':')) {
				c->why = "a bad field name";
				return false;
			}
			if (strcmp(key, "hash_ids") == 0) {
				ok = read_ids(c, r);
				have_ids = ok;
			} else if (strcmp(key, "timestamp") == 0) {
				ok = read_u64(c, &r->timestamp);
				r->has_timestamp = ok;
			} else if (strcmp(key, "input_length") == 0) {
				ok = read_u64(c, &r->input_length);
			} else if (strcmp(key, "output_length") == 0) {
				ok = read_u64(c, &r->output_length);
			} else if (strcmp(key, "tenant") == 0) {
				ok = read_string(c, r->tenant, sizeof(r->tenant));
			} else if (strcmp(key, "type") == 0) {
				ok = read_string(c, r->type, sizeof(r->type));
			} else if (strcmp(key, "chat_id") == 0) {
				ok = read_id_text(c, r->chat_id, sizeof(r->chat_id));
			} else if (strcmp(key, "parent_chat_id") == 0) {
				ok = read_id_text(c, r->parent_chat_id, sizeof(r->parent_chat_id));
			} else {
				ok = skip_value(c, 0);
			}
			if (!ok)
				return false;
			if (expect(c, '}'))
				break;
			if (!expect(c, ',')) {
				c->why = "expected ',' or '}'";
				return false;
			}
		}
	}
	skip_ws(c);
	if (c->p != c->end) {
		c->why = "something follows the object";
		return false;
	}
	if (!have_ids) {
		c->why = "no hash_ids array";
		return false;
	}
	return true;
}

int
trace_open(struct trace *t, const char *path, struct mc_err *err)
{
	memset(t, 0, sizeof(*t));
	t->path = path;
	t->f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (t->f == NULL)
		return mc_err_errno(err, "cannot open '%s'", path);
	return 0;
}

void
trace_close(struct trace *t)
{
	if (t->f != NULL && t->f != stdin)
		fclose(t->f);
	free(t->line);
	memset(t, 0, sizeof(*t));
}

int
trace_next(struct trace *t, struct trace_req *r, struct mc_err *err)
{
	ssize_t got;

	while ((got = getline(&t->line, &t->line_cap, t->f)) >= 0) {
		struct cursor c = { t->line, t->line + got, NULL };

		t->lineno++;
		skip_ws(&c);
		if (c.p == c.end)
			continue;
		if (!parse_line(&c, r))
			return mc_err_set(err, MC_ERR_INVALID, "%s:%llu: %s", t->path,
					  (unsigned long long)t->lineno,
					  c.why ? c.why : "bad line");
		return 1;
	}
	if (ferror(t->f))
		return mc_err_errno(err, "cannot read '%s'", t->path);
	return 0;
}

void
trace_req_free(struct trace_req *r)
{
	free(r->ids);
	r->ids = NULL;
	r->n = r->cap = 0;
}
