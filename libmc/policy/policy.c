/*
 * The eviction policy language (man/mc-policy.5): line-based text nested
 * by indentation, parsed into the scope tree of mc/policy.h.
 *
 * The parser reads one line at a time and keeps a stack of open blocks:
 * the body of a scope (the top level is the root's body) or the scope
 * lines under an `assign`. A block learns its indentation from its first
 * line; a less indented line closes blocks until one matches exactly, and
 * a line that matches none is an error. Checks that need a whole scope
 * (a fallback needs an assign in the same body) run when its block
 * closes.
 *
 * Children arrays only ever grow for the innermost open assign, so the
 * scope pointers held by the outer open blocks stay valid while deeper
 * scopes come and go. Their capacity is not stored: it is the smallest
 * power of two (at least 4) holding the count, so an array grows exactly
 * when its count reaches a power of two.
 *
 * Nothing is trusted: the text is capped at MC_POLICY_MAX_BYTES, nesting
 * at MC_POLICY_MAX_DEPTH, words per line at WORDS_MAX, and duplicate
 * checks use hash tables so a file of 100000 scopes still parses in
 * linear time.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/hash.h"
#include "mc/parse.h"
#include "mc/policy.h"
#include "mc/proto.h"

#define WORDS_MAX 16			 /* `scope V weight W quota Q lowerbound L` is 8 */
#define SHOW_MAX 48			 /* bytes of a word quoted in a message */
#define VALUE_SEED 0x6d632d706f6c6963ULL /* "mc-polic" */

static const char *const dim_names[MC_DIM_COUNT] = {
	[MC_DIM_TENANT] = "tenant", [MC_DIM_TYPE] = "type", [MC_DIM_GROUP] = "group",
	[MC_DIM_PEER] = "peer",	    [MC_DIM_TIER] = "tier", [MC_DIM_DOMAIN] = "domain",
	[MC_DIM_PREFIX] = "prefix",
};

static const char *const mode_names[] = {
	[MC_ASSIGN_WEIGHT] = "weight",
	[MC_ASSIGN_USAGE] = "usage",
	[MC_ASSIGN_QUOTA] = "quota",
};
#define MODE_COUNT (sizeof(mode_names) / sizeof(mode_names[0]))

const char *
mc_dim_name(int dim)
{
	if (dim < 0 || dim >= MC_DIM_COUNT)
		return "unknown";
	return dim_names[dim];
}

int
mc_dim_from_name(const char *s, size_t len)
{
	int i;

	if (s == NULL)
		return -1;
	for (i = 0; i < MC_DIM_COUNT; i++)
		if (strlen(dim_names[i]) == len && memcmp(dim_names[i], s, len) == 0)
			return i;
	return -1;
}

static void
scope_init(struct mc_pscope *s, unsigned line)
{
	memset(s, 0, sizeof(*s));
	s->weight = 1;
	s->lowerbound = -1;
	s->line = line;
}

void
mc_policy_default(struct mc_policy *p)
{
	memset(p, 0, sizeof(*p));
	scope_init(&p->root, 0);
	p->lowerbound = 1.0;
	p->ranker = mc_ranker_find("lease");
	/* the same tree `evict lease` parses into */
	p->root.ranker = p->ranker;
}

static void
scope_free(struct mc_pscope *s)
{
	size_t i;

	for (i = 0; i < s->nchildren; i++)
		scope_free(&s->children[i]);
	free(s->children);
	free(s->value);
	s->children = NULL;
	s->nchildren = 0;
	s->value = NULL;
}

void
mc_policy_free(struct mc_policy *p)
{
	size_t i;

	if (p == NULL)
		return;
	scope_free(&p->root);
	for (i = 0; i < p->ncosts; i++)
		free(p->costs[i].type);
	free(p->costs);
	mc_policy_default(p);
}

/* ---- the parser's state ---- */

struct word {
	char *s; /* NUL-terminated, quotes and escapes removed */
	size_t len;
	bool quoted;
};

struct line {
	unsigned no;
	size_t indent;
	struct word w[WORDS_MAX];
	size_t n;
};

enum block_kind { BLOCK_BODY, BLOCK_ASSIGN };

struct block {
	enum block_kind kind;
	/* the scope whose body this is, or whose children the assign lists */
	struct mc_pscope *scope;
	unsigned depth;	      /* of that scope: the root is 0 */
	size_t opener_indent; /* of the line that opened the block */
	unsigned opener_line;
	bool indent_known; /* false until the block's first line */
	size_t indent;
	/* bodies: where each once-per-scope statement was, 0 for nowhere */
	unsigned evict_line, assign_line, fallback_line, lowerbound_line;
	/* assigns: the first `scope *`, and the named values so far */
	unsigned rest_line;
	struct mc_htab values;
};

struct parser {
	struct mc_policy *p;
	struct block stack[2 * MC_POLICY_MAX_DEPTH + 2];
	size_t nstack;
	char *buf; /* scratch for the words of one line */
	const struct mc_ranker *top_evict;
	/* where each kind of half-life was given: in accesses, as a duration */
	unsigned half_life_line, half_life_ms_line;
	struct mc_htab cost_types; /* the type names of p->costs */
	struct mc_err *err;
};

static int fail(struct parser *ps, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
fail(struct parser *ps, unsigned line, const char *fmt, ...)
{
	char msg[MC_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mc_err_set(ps->err, MC_ERR_INVALID, "line %u: %s", line, msg);
}

static int
out_of_memory(struct parser *ps)
{
	return mc_err_set(ps->err, MC_ERR_SYSTEM, "out of memory");
}

/*
 * A word as a message shows it: at most SHOW_MAX bytes, bytes that are
 * not printable ASCII as '?', "..." when cut.
 */
static const char *
show(const char *s, char *buf, size_t cap)
{
	size_t i, n = 0;

	for (i = 0; s[i] != '\0' && n + 4 < cap && i < SHOW_MAX; i++)
		buf[n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i] != '\0' && n + 4 <= cap) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

#define SHOWBUF (SHOW_MAX + 8)

static void
known_rankers(char *buf, size_t cap)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; mc_rankers[i] != NULL && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", mc_rankers[i]->name);
}

static int
find_ranker(struct parser *ps, const struct line *ln, const struct word *w,
	    const struct mc_ranker **out)
{
	char shown[SHOWBUF], known[128];

	*out = mc_ranker_find(w->s);
	if (*out != NULL)
		return 0;
	known_rankers(known, sizeof(known));
	return fail(ps, ln->no, "unknown ranker '%s' (known: %s)", show(w->s, shown, sizeof(shown)),
		    known);
}

/* A name as the protocol allows it: 1..MC_NAME_MAX bytes of printable ASCII, no space. */
static bool
valid_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > MC_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return false;
	return true;
}

/* "80%" or "0.8", within 0..1; what is wrong goes to why. */
static int
parse_fraction(const char *s, double *out, const char **why)
{
	char num[64];
	size_t n = strlen(s);
	bool percent = n > 0 && s[n - 1] == '%';
	struct mc_err e;
	double v;

	if (percent)
		n--;
	if (n == 0 || n >= sizeof(num)) {
		*why = "not a number";
		return -1;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	if (mc_parse_double(num, &v, &e) < 0) {
		*why = "not a number";
		return -1;
	}
	if (percent)
		v /= 100;
	if (!(v >= 0 && v <= 1)) {
		*why = "must be between 0% and 100% (or 0 and 1)";
		return -1;
	}
	*out = v;
	return 0;
}

static int
lowerbound_arg(struct parser *ps, const struct line *ln, const struct word *w, double *out)
{
	char shown[SHOWBUF];
	const char *why;

	if (parse_fraction(w->s, out, &why) == 0)
		return 0;
	return fail(ps, ln->no, "bad lowerbound '%s': %s", show(w->s, shown, sizeof(shown)), why);
}

/* ---- words ---- */

/*
 * Split one line (without its newline) into words: runs of bytes other
 * than space, '#' and '"', or double-quoted strings in which \" and \\
 * stand for '"' and '\'. Outside quotes '#' starts a comment. Each word
 * is copied into ps->buf at the offset where it starts in the line; a
 * word never gets longer, so its NUL always fits before the next word.
 */
static int
split_line(struct parser *ps, const char *s, size_t len, struct line *ln)
{
	size_t i = 0;

	ln->n = 0;
	while (i < len && s[i] == ' ')
		i++;
	ln->indent = i;
	while (i < len) {
		struct word *w;
		size_t k = 0;
		char c = s[i];

		if (c == ' ') {
			i++;
			continue;
		}
		if (c == '#')
			break;
		if (ln->n == WORDS_MAX)
			return fail(ps, ln->no, "more than %d words", WORDS_MAX);
		w = &ln->w[ln->n++];
		w->s = ps->buf + i;
		w->quoted = c == '"';
		if (w->quoted) {
			for (i++;; i++) {
				if (i >= len)
					return fail(ps, ln->no, "unterminated quoted word");
				c = s[i];
				if (c == '"')
					break;
				if (c == '\\') {
					if (i + 1 >= len || (s[i + 1] != '"' && s[i + 1] != '\\'))
						return fail(ps, ln->no,
							    "bad escape in a quoted word "
							    "(only \\\" and \\\\)");
					c = s[++i];
				} else if (c == '\t') {
					return fail(ps, ln->no, "tab character (use spaces)");
				} else if ((unsigned char)c < 0x20 || c == 0x7f) {
					return fail(ps, ln->no, "control character 0x%02x",
						    (unsigned)(unsigned char)c);
				}
				w->s[k++] = c;
			}
			i++;
			if (i < len && s[i] != ' ' && s[i] != '#')
				return fail(ps, ln->no, "a quoted word must end at a space");
		} else {
			for (; i < len && s[i] != ' ' && s[i] != '#'; i++) {
				c = s[i];
				if (c == '"')
					return fail(ps, ln->no,
						    "a quote inside a word (quote the whole word)");
				if (c == '\t')
					return fail(ps, ln->no, "tab character (use spaces)");
				if ((unsigned char)c < 0x20 || c == 0x7f)
					return fail(ps, ln->no, "control character 0x%02x",
						    (unsigned)(unsigned char)c);
				w->s[k++] = c;
			}
		}
		w->s[k] = '\0';
		w->len = k;
	}
	return 0;
}

/* ---- blocks ---- */

static struct block *
top(struct parser *ps)
{
	return &ps->stack[ps->nstack - 1];
}

static bool
is_root(const struct parser *ps, const struct block *b)
{
	return b->scope == &ps->p->root;
}

static struct block *
push(struct parser *ps, enum block_kind kind, struct mc_pscope *scope, unsigned depth,
     const struct line *ln)
{
	struct block *b;

	/* cannot happen: assign refuses to nest deeper than the stack */
	if (ps->nstack == sizeof(ps->stack) / sizeof(ps->stack[0]))
		abort();
	b = &ps->stack[ps->nstack++];
	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->scope = scope;
	b->depth = depth;
	b->opener_indent = ln->indent;
	b->opener_line = ln->no;
	mc_htab_init(&b->values);
	return b;
}

static bool
values_equal(const void *entry, const void *key)
{
	return strcmp(entry, key) == 0;
}

/* Append a child to s; NULL when out of memory. */
static struct mc_pscope *
add_child(struct mc_pscope *s, unsigned line)
{
	size_t n = s->nchildren;

	if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
		size_t cap = n == 0 ? 4 : 2 * n;
		struct mc_pscope *c = realloc(s->children, cap * sizeof(*c));

		if (c == NULL)
			return NULL;
		s->children = c;
	}
	scope_init(&s->children[n], line);
	s->nchildren++;
	return &s->children[n];
}

/* Close the innermost block: the checks that need all of it, then pop. */
static int
close_block(struct parser *ps)
{
	struct block *b = top(ps);
	struct mc_pscope *s = b->scope;

	if (b->kind == BLOCK_BODY) {
		if (b->fallback_line != 0 && !s->has_assign)
			return fail(ps, b->fallback_line,
				    "fallback without an assign in its scope");
		if (is_root(ps, b) && ps->top_evict != NULL) {
			ps->p->ranker = ps->top_evict;
			if (!s->has_assign)
				s->ranker = ps->top_evict;
		}
	} else {
		/* the implicit `scope *`: values nobody named, weight 1, default ranker */
		if (b->rest_line == 0) {
			struct mc_pscope *rest = add_child(s, b->opener_line);

			if (rest == NULL)
				return out_of_memory(ps);
			rest->rest = true;
			rest->value = strdup("*");
			if (rest->value == NULL)
				return out_of_memory(ps);
		}
		mc_htab_free(&b->values);
	}
	ps->nstack--;
	return 0;
}

/*
 * Find the block a line of this indentation belongs to, closing the
 * blocks it leaves. A block still waiting for its first line takes any
 * line indented deeper than the line that opened it.
 */
static int
place_line(struct parser *ps, const struct line *ln)
{
	bool closed = false;

	for (;;) {
		struct block *b = top(ps);

		if (!b->indent_known) {
			if (ln->indent > b->opener_indent || ps->nstack == 1) {
				b->indent_known = true;
				b->indent = ln->indent;
				if (ps->nstack == 1 && ln->indent != 0)
					return fail(ps, ln->no,
						    "indented with nothing to nest under (the top "
						    "level starts in the first column)");
				return 0;
			}
		} else if (ln->indent == b->indent) {
			return 0;
		} else if (ln->indent > b->indent) {
			if (closed)
				return fail(ps, ln->no,
					    "inconsistent indentation: %zu spaces matches no "
					    "enclosing block",
					    ln->indent);
			return fail(ps, ln->no,
				    "indented deeper than the line before, with nothing to nest "
				    "under it");
		}
		if (ps->nstack == 1)
			return fail(ps, ln->no, "inconsistent indentation");
		if (close_block(ps) < 0)
			return -1;
		closed = true;
	}
}

/* ---- statements ---- */

static int
usage(struct parser *ps, const struct line *ln, const char *form)
{
	return fail(ps, ln->no, "expected '%s'", form);
}

static int
st_evict(struct parser *ps, const struct line *ln, struct block *b)
{
	const struct mc_ranker *r;

	if (ln->n != 2)
		return usage(ps, ln, "evict RANKER");
	if (find_ranker(ps, ln, &ln->w[1], &r) < 0)
		return -1;
	if (b->evict_line != 0)
		return fail(ps, ln->no, "second evict in one scope (first at line %u)",
			    b->evict_line);
	if (b->assign_line != 0 && !is_root(ps, b))
		return fail(ps, ln->no, "evict and assign in one scope (assign at line %u)",
			    b->assign_line);
	b->evict_line = ln->no;
	if (is_root(ps, b))
		ps->top_evict = r;
	else
		b->scope->ranker = r;
	return 0;
}

static int
st_assign(struct parser *ps, const struct line *ln, struct block *b)
{
	char shown[SHOWBUF];
	const struct word *w = ln->w;
	int dim;
	size_t mode;

	if (ln->n != 4 || strcmp(w[2].s, "by") != 0)
		return usage(ps, ln, "assign DIMENSION by MODE");
	dim = mc_dim_from_name(w[1].s, w[1].len);
	if (dim < 0)
		return fail(ps, ln->no,
			    "unknown dimension '%s' (known: tenant, type, group, peer, tier, "
			    "domain, prefix)",
			    show(w[1].s, shown, sizeof(shown)));
	for (mode = 0; mode < MODE_COUNT; mode++)
		if (strcmp(w[3].s, mode_names[mode]) == 0)
			break;
	if (mode == MODE_COUNT)
		return fail(ps, ln->no, "unknown mode '%s' (known: weight, usage, quota)",
			    show(w[3].s, shown, sizeof(shown)));
	if (b->assign_line != 0)
		return fail(ps, ln->no, "second assign in one scope (first at line %u)",
			    b->assign_line);
	if (b->evict_line != 0 && !is_root(ps, b))
		return fail(ps, ln->no, "evict and assign in one scope (evict at line %u)",
			    b->evict_line);
	if (b->depth >= MC_POLICY_MAX_DEPTH)
		return fail(ps, ln->no, "assign nested too deep (at most %d levels of scopes)",
			    MC_POLICY_MAX_DEPTH);
	b->assign_line = ln->no;
	b->scope->has_assign = true;
	b->scope->dim = dim;
	b->scope->mode = (int)mode;
	push(ps, BLOCK_ASSIGN, b->scope, b->depth, ln);
	return 0;
}

static int
st_fallback(struct parser *ps, const struct line *ln, struct block *b)
{
	const struct mc_ranker *r = NULL;

	if (ln->n > 2)
		return usage(ps, ln, "fallback [RANKER]");
	if (ln->n == 2 && find_ranker(ps, ln, &ln->w[1], &r) < 0)
		return -1;
	if (b->fallback_line != 0)
		return fail(ps, ln->no, "second fallback in one scope (first at line %u)",
			    b->fallback_line);
	b->fallback_line = ln->no;
	b->scope->has_fallback = true;
	b->scope->fallback_ranker = r;
	return 0;
}

static int
st_lowerbound(struct parser *ps, const struct line *ln, struct block *b)
{
	double v;

	if (ln->n != 2)
		return usage(ps, ln, "lowerbound PERCENT");
	if (lowerbound_arg(ps, ln, &ln->w[1], &v) < 0)
		return -1;
	if (b->lowerbound_line != 0)
		return fail(ps, ln->no, "second lowerbound for one scope (first at line %u)",
			    b->lowerbound_line);
	b->lowerbound_line = ln->no;
	if (is_root(ps, b))
		ps->p->lowerbound = v;
	else
		b->scope->lowerbound = v;
	return 0;
}

static int
st_cost(struct parser *ps, const struct line *ln)
{
	char shown[SHOWBUF];
	struct mc_policy *p = ps->p;
	const struct word *type = &ln->w[1], *num;
	bool by_bytes = ln->n == 4 && strcmp(ln->w[2].s, "bytes") == 0;
	struct mc_type_cost *tc;
	struct mc_err e;
	uint64_t hash;
	void *found;
	size_t n = p->ncosts;
	double v;

	if (ln->n != 3 && !by_bytes)
		return usage(ps, ln, "cost TYPE NUMBER' or 'cost TYPE bytes NUMBER");
	num = &ln->w[ln->n - 1];
	if (!valid_name(type->s, type->len))
		return fail(ps, ln->no,
			    "bad type '%s': printable ASCII without spaces, 1 to %d bytes",
			    show(type->s, shown, sizeof(shown)), MC_NAME_MAX);
	if (mc_parse_double(num->s, &v, &e) < 0)
		return fail(ps, ln->no, "bad cost '%s': %s", show(num->s, shown, sizeof(shown)),
			    e.msg);
	if (v < 0)
		return fail(ps, ln->no, "bad cost '%s': must not be negative",
			    show(num->s, shown, sizeof(shown)));
	hash = mc_hash64(type->s, type->len, VALUE_SEED);
	found = mc_htab_find(&ps->cost_types, hash, values_equal, type->s);
	if (found != NULL)
		return fail(ps, ln->no, "second cost for type '%s'",
			    show(type->s, shown, sizeof(shown)));
	if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
		size_t cap = n == 0 ? 4 : 2 * n;

		tc = realloc(p->costs, cap * sizeof(*tc));
		if (tc == NULL)
			return out_of_memory(ps);
		p->costs = tc;
	}
	tc = &p->costs[n];
	tc->type = strdup(type->s);
	if (tc->type == NULL)
		return out_of_memory(ps);
	tc->cost = v;
	tc->by_bytes = by_bytes;
	p->ncosts++;
	/* the type strings never move, unlike the array */
	if (mc_htab_insert(&ps->cost_types, hash, tc->type) < 0)
		return out_of_memory(ps);
	return 0;
}

/*
 * A count of accesses: digits, optionally followed by k for thousands.
 * Only k: m is already minutes in a duration, so "2m" must not also be
 * read as two million, and K is 1024 in sizes. 1 when s looks like a
 * count (even a bad one: "1.5", "99999999999999999999k"), 0 when it does
 * not and may be a duration.
 */
static int
parse_accesses(const char *s, uint64_t *out, const char **why)
{
	char num[32];
	size_t n = strlen(s);
	uint64_t mult = 1, v;
	struct mc_err e;

	if (n > 0 && s[n - 1] == 'k') {
		mult = 1000;
		n--;
	}
	if (n == 0 || strspn(s, "0123456789.") != n)
		return 0;
	*why = NULL;
	if (n >= sizeof(num)) {
		*why = "too large";
		return 1;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	if (mc_parse_u64(num, &v, &e) < 0)
		*why = strchr(num, '.') != NULL ? "a count of accesses is a whole number"
						: "too large";
	else if (v > UINT64_MAX / mult)
		*why = "too large";
	else
		*out = v * mult;
	return 1;
}

static int
st_half_life(struct parser *ps, const struct line *ln)
{
	char shown[SHOWBUF];
	const char *w, *why;
	struct mc_err e;
	uint64_t v = 0;
	unsigned *seen;
	bool count;

	if (ln->n != 2)
		return usage(ps, ln, "half-life ACCESSES' or 'half-life DURATION");
	w = ln->w[1].s;
	show(w, shown, sizeof(shown));
	count = parse_accesses(w, &v, &why) == 1;
	if (count && why != NULL)
		return fail(ps, ln->no, "bad half-life '%s': %s", shown, why);
	if (!count && mc_parse_duration_ms(w, &v, &e) < 0)
		return fail(ps, ln->no,
			    "bad half-life '%s': not a count of accesses (200000, 200k) or a "
			    "duration (10m)",
			    shown);
	if (v == 0)
		return fail(ps, ln->no, "bad half-life '%s': must be greater than 0", shown);
	/* one of each: the count for views with sequences, the duration for the rest */
	seen = count ? &ps->half_life_line : &ps->half_life_ms_line;
	if (*seen != 0)
		return fail(ps, ln->no, "second half-life (first at line %u)", *seen);
	*seen = ln->no;
	if (count)
		ps->p->lfu_half_life_accesses = v;
	else
		ps->p->lfu_half_life_ms = v;
	return 0;
}

/* The first child of s whose value is v (for a message; linear is fine). */
static unsigned
line_of_value(const struct mc_pscope *s, const char *v)
{
	size_t i;

	for (i = 0; i < s->nchildren; i++)
		if (!s->children[i].rest && strcmp(s->children[i].value, v) == 0)
			return s->children[i].line;
	return 0;
}

static int
check_scope_value(struct parser *ps, const struct line *ln, struct block *ab)
{
	char shown[SHOWBUF];
	const struct word *v = &ln->w[1];
	int dim = ab->scope->dim;

	if (dim == MC_DIM_PREFIX) {
		if (v->len == 0 || v->len > MC_KEY_MAX)
			return fail(ps, ln->no, "bad prefix: 1 to %d bytes", MC_KEY_MAX);
		return 0;
	}
	if (!valid_name(v->s, v->len))
		return fail(ps, ln->no,
			    "bad %s '%s': printable ASCII without spaces, 1 to %d bytes",
			    mc_dim_name(dim), show(v->s, shown, sizeof(shown)), MC_NAME_MAX);
	return 0;
}

static int
scope_options(struct parser *ps, const struct line *ln, const struct block *ab,
	      struct mc_pscope *opt, unsigned *lowerbound_line)
{
	char shown[SHOWBUF];
	bool seen_weight = false, seen_quota = false;
	size_t i;

	for (i = 2; i < ln->n; i += 2) {
		const char *name = ln->w[i].s;
		const struct word *arg = &ln->w[i + 1];
		struct mc_err e;

		if (i + 1 >= ln->n)
			return fail(ps, ln->no, "scope option '%s' without a value",
				    show(name, shown, sizeof(shown)));
		if (strcmp(name, "weight") == 0) {
			if (seen_weight)
				return fail(ps, ln->no, "weight given twice");
			if (ab->scope->mode != MC_ASSIGN_WEIGHT)
				return fail(ps, ln->no,
					    "weight only applies under 'assign ... by weight' "
					    "(this assign is by %s)",
					    mode_names[ab->scope->mode]);
			if (mc_parse_double(arg->s, &opt->weight, &e) < 0)
				return fail(ps, ln->no, "bad weight '%s': %s",
					    show(arg->s, shown, sizeof(shown)), e.msg);
			if (!(opt->weight > 0))
				return fail(ps, ln->no, "bad weight '%s': must be greater than 0",
					    show(arg->s, shown, sizeof(shown)));
			seen_weight = true;
		} else if (strcmp(name, "quota") == 0) {
			if (seen_quota)
				return fail(ps, ln->no, "quota given twice");
			if (ab->scope->mode != MC_ASSIGN_QUOTA)
				return fail(ps, ln->no,
					    "quota only applies under 'assign ... by quota' "
					    "(this assign is by %s)",
					    mode_names[ab->scope->mode]);
			if (mc_parse_size(arg->s, &opt->quota, &e) < 0)
				return fail(ps, ln->no, "bad quota '%s': %s",
					    show(arg->s, shown, sizeof(shown)), e.msg);
			seen_quota = true;
		} else if (strcmp(name, "lowerbound") == 0) {
			if (*lowerbound_line != 0)
				return fail(ps, ln->no, "lowerbound given twice");
			if (lowerbound_arg(ps, ln, arg, &opt->lowerbound) < 0)
				return -1;
			*lowerbound_line = ln->no;
		} else {
			return fail(ps, ln->no,
				    "unknown scope option '%s' (known: weight, quota, lowerbound)",
				    show(name, shown, sizeof(shown)));
		}
	}
	return 0;
}

static int
st_scope(struct parser *ps, const struct line *ln, struct block *ab)
{
	char shown[SHOWBUF];
	const struct word *v = &ln->w[1];
	struct mc_pscope opt, *child;
	unsigned lowerbound_line = 0;
	bool rest;
	uint64_t hash = 0;
	struct block *body;

	if (ln->n < 2)
		return usage(ps, ln, "scope VALUE [weight W] [quota SIZE] [lowerbound PERCENT]");
	rest = !v->quoted && strcmp(v->s, "*") == 0;
	if (rest) {
		if (ab->rest_line != 0)
			return fail(ps, ln->no,
				    "second 'scope *' under one assign (first at line %u)",
				    ab->rest_line);
	} else {
		if (check_scope_value(ps, ln, ab) < 0)
			return -1;
		hash = mc_hash64(v->s, v->len, VALUE_SEED);
		if (mc_htab_find(&ab->values, hash, values_equal, v->s) != NULL)
			return fail(ps, ln->no,
				    "duplicate scope '%s' under one assign (first at line %u)",
				    show(v->s, shown, sizeof(shown)),
				    line_of_value(ab->scope, v->s));
	}
	scope_init(&opt, ln->no);
	if (scope_options(ps, ln, ab, &opt, &lowerbound_line) < 0)
		return -1;
	child = add_child(ab->scope, ln->no);
	if (child == NULL)
		return out_of_memory(ps);
	*child = opt;
	child->rest = rest;
	child->value = strdup(v->s);
	if (child->value == NULL)
		return out_of_memory(ps);
	if (rest)
		ab->rest_line = ln->no;
	else if (mc_htab_insert(&ab->values, hash, child->value) < 0)
		return out_of_memory(ps);
	body = push(ps, BLOCK_BODY, child, ab->depth + 1, ln);
	body->lowerbound_line = lowerbound_line;
	return 0;
}

static int
statement(struct parser *ps, const struct line *ln)
{
	char shown[SHOWBUF];
	struct block *b = top(ps);
	const char *kw = ln->w[0].s;

	if (b->kind == BLOCK_ASSIGN) {
		if (strcmp(kw, "scope") != 0)
			return fail(ps, ln->no,
				    "'%s' under an assign (line %u): only scope lines go there",
				    show(kw, shown, sizeof(shown)), b->opener_line);
		return st_scope(ps, ln, b);
	}
	if (strcmp(kw, "scope") == 0) {
		show(ln->n > 1 ? ln->w[1].s : "", shown, sizeof(shown));
		if (b->assign_line != 0)
			return fail(ps, ln->no,
				    "scope '%s' is not indented under its assign (line %u)", shown,
				    b->assign_line);
		return fail(ps, ln->no, "scope '%s' without an assign above it", shown);
	}
	if (strcmp(kw, "evict") == 0)
		return st_evict(ps, ln, b);
	if (strcmp(kw, "assign") == 0)
		return st_assign(ps, ln, b);
	if (strcmp(kw, "fallback") == 0)
		return st_fallback(ps, ln, b);
	if (strcmp(kw, "lowerbound") == 0)
		return st_lowerbound(ps, ln, b);
	if (strcmp(kw, "cost") == 0 || strcmp(kw, "half-life") == 0) {
		if (!is_root(ps, b))
			return fail(ps, ln->no, "%s only at the top level", kw);
		return kw[0] == 'c' ? st_cost(ps, ln) : st_half_life(ps, ln);
	}
	return fail(ps, ln->no,
		    "unknown statement '%s' (known: assign, cost, evict, fallback, half-life, "
		    "lowerbound, scope)",
		    show(kw, shown, sizeof(shown)));
}

/* ---- entry points ---- */

static int
parse_text(struct parser *ps, const char *text, size_t len)
{
	struct line ln;
	size_t pos = 0;
	unsigned no = 0;

	while (pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl != NULL ? (size_t)(nl - s) : len - pos;

		pos += n + (nl != NULL);
		ln.no = ++no;
		if (memchr(s, '\0', n) != NULL)
			return fail(ps, ln.no, "NUL byte");
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (split_line(ps, s, n, &ln) < 0)
			return -1;
		if (ln.n == 0)
			continue;
		if (place_line(ps, &ln) < 0 || statement(ps, &ln) < 0)
			return -1;
	}
	while (ps->nstack > 0)
		if (close_block(ps) < 0)
			return -1;
	return 0;
}

int
mc_policy_parse(const char *text, size_t len, const char *name, struct mc_policy *p,
		struct mc_err *err)
{
	struct mc_policy np;
	struct parser ps;
	struct line root_line = { 0 };
	size_t i;
	int rc;

	mc_policy_default(p);
	if (len > MC_POLICY_MAX_BYTES)
		return mc_err_set(err, MC_ERR_TOO_LARGE,
				  "policy of %zu bytes, over the limit of %u", len,
				  MC_POLICY_MAX_BYTES);
	if (text == NULL && len > 0)
		return mc_err_set(err, MC_ERR_INVALID, "no policy text");
	mc_policy_default(&np);
	np.root.ranker = NULL;
	snprintf(np.name, sizeof(np.name), "%s", name != NULL ? name : "");
	memset(&ps, 0, sizeof(ps));
	ps.p = &np;
	ps.err = err;
	mc_htab_init(&ps.cost_types);
	ps.buf = malloc(len + 1);
	if (ps.buf == NULL)
		return out_of_memory(&ps);
	push(&ps, BLOCK_BODY, &np.root, 0, &root_line);
	rc = parse_text(&ps, text, len);
	for (i = 0; i < ps.nstack; i++)
		mc_htab_free(&ps.stack[i].values);
	mc_htab_free(&ps.cost_types);
	free(ps.buf);
	if (rc < 0) {
		mc_policy_free(&np);
		return -1;
	}
	*p = np;
	return 0;
}

int
mc_policy_load(const char *path, struct mc_policy *p, struct mc_err *err)
{
	struct mc_err e;
	const char *base;
	char *buf;
	size_t n;
	FILE *f;
	int rc;

	mc_policy_default(p);
	f = fopen(path, "rb");
	if (f == NULL)
		return mc_err_errno(err, "cannot open '%s'", path);
	buf = malloc(MC_POLICY_MAX_BYTES + 1);
	if (buf == NULL) {
		fclose(f);
		return mc_err_set(err, MC_ERR_SYSTEM, "%s: out of memory", path);
	}
	n = fread(buf, 1, MC_POLICY_MAX_BYTES + 1, f);
	if (ferror(f)) {
		mc_err_errno(err, "cannot read '%s'", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	if (n > MC_POLICY_MAX_BYTES) {
		free(buf);
		return mc_err_set(err, MC_ERR_TOO_LARGE, "%s: larger than the limit of %u bytes",
				  path, MC_POLICY_MAX_BYTES);
	}
	base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	rc = mc_policy_parse(buf, n, base, p, &e);
	free(buf);
	if (rc < 0)
		return mc_err_set(err, e.code, "%s: %s", path, e.msg);
	return 0;
}
