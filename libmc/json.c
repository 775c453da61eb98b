/*
 * msgpack -> JSON for people and jq. The output is always valid JSON: a
 * string value that is not text (valid UTF-8 without control characters)
 * becomes {"b64":"..."}, non-finite floats become null, and non-string
 * map keys are rendered as strings.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mc/json.h"

/*
 * msgpack-c nests at most 32 deep when it unpacks, but an object built by
 * hand could nest deeper; stop recursing well before the stack matters.
 */
#define JSON_MAX_DEPTH 64

/*
 * Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one
 * (overlong forms, surrogates and code points past U+10FFFF included).
 */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t need, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
		cp = c & 0x1fu;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		cp = c & 0x0fu;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		cp = c & 0x07u;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return need;
}

static void
write_base64(FILE *f, const unsigned char *s, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	fputc('"', f);
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		fputc(tab[v >> 18 & 63], f);
		fputc(tab[v >> 12 & 63], f);
		fputc(tab[v >> 6 & 63], f);
		fputc(tab[v & 63], f);
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)s[i] << 16;

		fputc(tab[v >> 18 & 63], f);
		fputc(tab[v >> 12 & 63], f);
		fputs("==", f);
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;

		fputc(tab[v >> 18 & 63], f);
		fputc(tab[v >> 12 & 63], f);
		fputc(tab[v >> 6 & 63], f);
		fputc('=', f);
	}
	fputc('"', f);
}

/*
 * A string literal for a map key (JSON names must be strings): escapes
 * control bytes, and a stray byte becomes the code point of its value.
 */
static void
write_escaped(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n;

	fputc('"', f);
	while (i < len) {
		unsigned char c = s[i];

		switch (c) {
		case '"':
			fputs("\\\"", f);
			i++;
			continue;
		case '\\':
			fputs("\\\\", f);
			i++;
			continue;
		case '\b':
			fputs("\\b", f);
			i++;
			continue;
		case '\f':
			fputs("\\f", f);
			i++;
			continue;
		case '\n':
			fputs("\\n", f);
			i++;
			continue;
		case '\r':
			fputs("\\r", f);
			i++;
			continue;
		case '\t':
			fputs("\\t", f);
			i++;
			continue;
		default:
			break;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		n = utf8_len(s + i, len - i);
		if (n == 0) {
			/*
			 * A stray byte becomes the code point of the same
			 * value, so binary keys stay distinguishable.
			 */
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		fwrite(s + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

/* A C0 or C1 control character, or DEL: U+0000..U+001F, U+007F..U+009F. */
static bool
is_control(const unsigned char *s, size_t n)
{
	return s[0] < 0x20 || s[0] == 0x7f || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

bool
mc_json_is_text(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t i = 0, n; i < len; i += n) {
		n = utf8_len(s + i, len - i);
		if (n == 0 || is_control(s + i, n))
			return false;
	}
	return true;
}

void
mc_json_write_str(FILE *f, const char *str, size_t len)
{
	size_t i, from = 0;

	if (!mc_json_is_text(str, len)) {
		fputs("{\"b64\":", f);
		write_base64(f, (const unsigned char *)str, len);
		fputc('}', f);
		return;
	}
	/* text needs only its quote and backslash escaped */
	fputc('"', f);
	for (i = 0; i < len; i++) {
		if (str[i] != '"' && str[i] != '\\')
			continue;
		fwrite(str + from, 1, i - from, f);
		fputc('\\', f);
		from = i;
	}
	fwrite(str + from, 1, len - from, f);
	fputc('"', f);
}

/* The shortest of %.Ng that reads back as the same value. */
static void
write_double(FILE *f, double v, int is_float32)
{
	char buf[40];
	int prec;

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	for (prec = is_float32 ? 6 : 15; prec <= 17; prec++) {
		double back;

		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		back = strtod(buf, NULL);
		if (is_float32 ? (float)back == (float)v : back == v)
			break;
	}
	fputs(buf, f);
}

static void write_obj(FILE *f, const msgpack_object *o, int depth);

void
mc_json_write_u64(FILE *f, uint64_t v)
{
	if (v > MC_JSON_EXACT_MAX)
		fprintf(f, "\"%" PRIu64 "\"", v);
	else
		fprintf(f, "%" PRIu64, v);
}

void
mc_json_write_hash(FILE *f, uint64_t v)
{
	fprintf(f, "\"%016" PRIx64 "\"", v);
}

bool
mc_json_is_hash_field(const char *name, size_t len)
{
	static const char suffix[] = "_checksum";
	size_t n = sizeof(suffix) - 1;

	if (len == n - 1 && memcmp(name, suffix + 1, len) == 0)
		return true;
	return len > n && memcmp(name + len - n, suffix, n) == 0;
}

bool
mc_json_parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || (s[0] == '0' && len > 1))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)((unsigned char)s[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool
mc_json_get_u64(const msgpack_object *o, uint64_t *out)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		*out = o->via.u64;
		return true;
	}
	return o->type == MSGPACK_OBJECT_STR &&
	       mc_json_parse_u64(o->via.str.ptr, o->via.str.size, out);
}

static void
write_key(FILE *f, const msgpack_object *k, int depth)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m;

	if (k->type == MSGPACK_OBJECT_STR) {
		write_escaped(f, k->via.str.ptr, k->via.str.size);
		return;
	}
	if (k->type == MSGPACK_OBJECT_BIN) {
		write_base64(f, (const unsigned char *)k->via.bin.ptr, k->via.bin.size);
		return;
	}
	/* JSON keys are strings: render the key as JSON, then quote that. */
	m = open_memstream(&buf, &n);
	if (m == NULL) {
		fputs("\"?\"", f);
		return;
	}
	write_obj(m, k, depth);
	if (fclose(m) != 0 || buf == NULL) {
		free(buf);
		fputs("\"?\"", f);
		return;
	}
	write_escaped(f, buf, n);
	free(buf);
}

static void
write_obj(FILE *f, const msgpack_object *o, int depth)
{
	uint32_t i;

	if (o == NULL || depth > JSON_MAX_DEPTH) {
		fputs("null", f);
		return;
	}
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		fputs("null", f);
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		fputs(o->via.boolean ? "true" : "false", f);
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		mc_json_write_u64(f, o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		if (o->via.i64 < -(int64_t)MC_JSON_EXACT_MAX)
			fprintf(f, "\"%" PRId64 "\"", o->via.i64);
		else
			fprintf(f, "%" PRId64, o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
		write_double(f, o->via.f64, 1);
		break;
	case MSGPACK_OBJECT_FLOAT64:
		write_double(f, o->via.f64, 0);
		break;
	case MSGPACK_OBJECT_STR:
		mc_json_write_str(f, o->via.str.ptr, o->via.str.size);
		break;
	case MSGPACK_OBJECT_BIN:
		write_base64(f, (const unsigned char *)o->via.bin.ptr, o->via.bin.size);
		break;
	case MSGPACK_OBJECT_ARRAY:
		fputc('[', f);
		for (i = 0; i < o->via.array.size; i++) {
			if (i > 0)
				fputc(',', f);
			write_obj(f, &o->via.array.ptr[i], depth + 1);
		}
		fputc(']', f);
		break;
	case MSGPACK_OBJECT_MAP:
		fputc('{', f);
		for (i = 0; i < o->via.map.size; i++) {
			if (i > 0)
				fputc(',', f);
			const msgpack_object *k = &o->via.map.ptr[i].key;
			const msgpack_object *v = &o->via.map.ptr[i].val;

			write_key(f, k, depth + 1);
			fputc(':', f);
			if (k->type == MSGPACK_OBJECT_STR &&
			    v->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
			    mc_json_is_hash_field(k->via.str.ptr, k->via.str.size))
				mc_json_write_hash(f, v->via.u64);
			else
				write_obj(f, v, depth + 1);
		}
		fputc('}', f);
		break;
	default:
		/* ext has no JSON form */
		fputs("null", f);
		break;
	}
}

void
mc_json_write(FILE *f, const msgpack_object *o)
{
	write_obj(f, o, 0);
}
