/*
 * The record stream reader and output buffer on their own: framing,
 * truncation, JSON trees and where errors say they are.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "mc/err.h"
#include "mc/recstream.h"
#include "tap.h"

#define MAX (1u << 16)

static FILE *
file_of(const void *buf, size_t len)
{
	FILE *f = tmpfile();

	if (f == NULL)
		return NULL;
	if (len > 0 && fwrite(buf, 1, len, f) != len) {
		fclose(f);
		return NULL;
	}
	rewind(f);
	return f;
}

static bool
has(const struct mc_err *err, const char *s)
{
	return strstr(err->msg, s) != NULL;
}

/*
 * Read every record of buf; the number read into *n, and the last
 * next() result (0 clean end, -1 error) returned.
 */
static int
read_all(const void *buf, size_t len, bool json, int flags, struct mc_err *err, int *n)
{
	FILE *f = file_of(buf, len);
	const msgpack_object *o;
	struct mc_rs *r;
	int rc;

	*n = 0;
	if (f == NULL)
		return -2;
	r = mc_rs_open(f, json, "mc-test", "the test stream", MAX, flags, err);
	if (r == NULL) {
		fclose(f);
		return -2;
	}
	while ((rc = mc_rs_next(r, &o, err)) == 1)
		(*n)++;
	mc_rs_close(r);
	fclose(f);
	return rc;
}

static void
pack_rec(msgpack_packer *pk, uint64_t i)
{
	msgpack_pack_map(pk, 1);
	msgpack_pack_str(pk, 1);
	msgpack_pack_str_body(pk, "i", 1);
	msgpack_pack_uint64(pk, i);
}

static void
test_msgpack(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct mc_err err;
	size_t whole;
	int n;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	for (uint64_t i = 0; i < 3; i++)
		pack_rec(&pk, i);
	whole = sb.size;
	TAP_OK(read_all(sb.data, whole, false, 0, &err, &n) == 0 && n == 3,
	       "msgpack: three whole records are yielded, then a clean end");
	TAP_OK(read_all(sb.data, whole - 2, false, 0, &err, &n) == -1 && n == 2 &&
		       has(&err, "record 2: truncated after"),
	       "msgpack: a cut last record fails naming its number (header is record 0)");
	TAP_OK(read_all(sb.data, 2, false, 0, &err, &n) == -1 && n == 0 &&
		       has(&err, "truncated header"),
	       "msgpack: a cut first record is a truncated header");
	TAP_OK(read_all(sb.data, 0, false, 0, &err, &n) == -1 &&
		       has(&err, "not an mc-test stream: empty input"),
	       "msgpack: empty input is not a stream");
	msgpack_sbuffer_destroy(&sb);
}

static void
test_json(void)
{
	const char *nested = "{\"h\":1}\n\n{\"a\":[1,{\"b\":\"x\\u00ffy\"}],\"c\":-5}\n";
	const char *bad = "{\"h\":1}\n{\"a\":1}\n\n{\"a\":1,}\n";
	FILE *f = file_of(nested, strlen(nested));
	const msgpack_object *o = NULL, *a, *m;
	struct mc_err err;
	struct mc_rs *r = NULL;
	bool shape = false;
	int n;

	if (f != NULL)
		r = mc_rs_open(f, true, "mc-test", "the test stream", MAX, 0, &err);
	if (r != NULL && mc_rs_next(r, &o, &err) == 1 && mc_rs_in_header(r) &&
	    mc_rs_next(r, &o, &err) == 1 && !mc_rs_in_header(r) && o->type == MSGPACK_OBJECT_MAP &&
	    o->via.map.size == 2) {
		a = &o->via.map.ptr[0].val;
		m = a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 2 ? &a->via.array.ptr[1]
									      : NULL;
		shape = m != NULL && m->type == MSGPACK_OBJECT_MAP && m->via.map.size == 1 &&
			m->via.map.ptr[0].val.type == MSGPACK_OBJECT_STR &&
			m->via.map.ptr[0].val.via.str.size == 4 &&
			memcmp(m->via.map.ptr[0].val.via.str.ptr, "x\xc3\xbfy", 4) == 0 &&
			o->via.map.ptr[1].val.type == MSGPACK_OBJECT_NEGATIVE_INTEGER &&
			o->via.map.ptr[1].val.via.i64 == -5;
	}
	TAP_OK(shape, "json: a nested line becomes the same tree msgpack would give");
	TAP_OK(r != NULL && mc_rs_next(r, &o, &err) == 0, "json: blank lines and the end are "
							  "a clean end");
	mc_rs_close(r);
	if (f != NULL)
		fclose(f);

	TAP_OK(read_all(bad, strlen(bad), true, 0, &err, &n) == -1 && n == 2 &&
		       has(&err, "line 4: expected a field name at column 8"),
	       "json: a bad line fails naming its line (blank lines counted) and column");
	TAP_OK(read_all(nested, strlen(nested), true, MC_RS_FLAT, &err, &n) == -1 &&
		       has(&err, "line 3: nested objects and arrays are not supported"),
	       "json: a flat reader refuses a nested value naming the line");
	TAP_OK(read_all("[1]\n", 4, true, 0, &err, &n) == -1 && has(&err, "not an mc-test stream"),
	       "json: a first line that is not an object is not our stream");
	TAP_OK(read_all("{\"h\":1}\n{\"n\":18446744073709551616}\n", 35, true, 0, &err, &n) == -1 &&
		       has(&err, "line 2: integer out of range"),
	       "json: an integer past 64 bits is refused, not wrapped");
}

/* The value of the one field of the second record of a flat JSON stream, or NULL. */
static const msgpack_object *
only_field(const char *text, struct mc_rs **r, FILE **f, struct mc_err *err)
{
	const msgpack_object *o;

	*f = file_of(text, strlen(text));
	*r = *f != NULL ? mc_rs_open(*f, true, "mc-test", "the test stream", MAX, MC_RS_FLAT, err)
			: NULL;
	if (*r == NULL || mc_rs_next(*r, &o, err) != 1 || mc_rs_next(*r, &o, err) != 1 ||
	    o->type != MSGPACK_OBJECT_MAP || o->via.map.size != 1)
		return NULL;
	return &o->via.map.ptr[0].val;
}

static bool
bytes_are(const char *text, const char *want, size_t want_len)
{
	struct mc_rs *r = NULL;
	FILE *f = NULL;
	struct mc_err err;
	const msgpack_object *v = only_field(text, &r, &f, &err);
	bool ok = v != NULL && v->type == MSGPACK_OBJECT_STR && v->via.str.size == want_len &&
		  memcmp(v->via.str.ptr, want, want_len) == 0;

	mc_rs_close(r);
	if (f != NULL)
		fclose(f);
	return ok;
}

/* read_all of a JSON text. */
static int
read_text(const char *text, int flags, struct mc_err *err, int *n)
{
	return read_all(text, strlen(text), true, flags, err, n);
}

static void
test_json_bytes(void)
{
	struct mc_err err;
	int n;

	TAP_OK(bytes_are("{\"h\":1}\n{\"k\":{\"b64\":\"AP8K\"}}\n", "\0\xff\n", 3),
	       "json bytes: {\"b64\":...} reads as the string of its bytes, in a flat record too");
	TAP_OK(bytes_are("{\"h\":1}\n{\"k\": { \"b64\" : \"\" } }\n", "", 0),
	       "json bytes: spaces and the empty string");
	TAP_OK(bytes_are("{\"h\":1}\n{\"k\":{\"b64\":\"YQ==\"}}\n", "a", 1) &&
		       bytes_are("{\"h\":1}\n{\"k\":{\"b64\":\"YWI=\"}}\n", "ab", 2),
	       "json bytes: one and two padding characters");
	TAP_OK(bytes_are("{\"h\":1}\n{\"k\":\"caf\\u00e9\"}\n", "caf\xc3\xa9", 5),
	       "json bytes: a \\u escape is a code point, written as UTF-8");
	TAP_OK(read_text("{\"h\":1}\n{\"k\":{\"b64\":\"abc\"}}\n", MC_RS_FLAT, &err, &n) == -1 &&
		       has(&err, "line 2: bad base64"),
	       "json bytes: a length that is not a multiple of 4 is refused: %s", err.msg);
	TAP_OK(read_text("{\"h\":1}\n{\"k\":{\"b64\":\"a=bc\"}}\n", 0, &err, &n) == -1 &&
		       has(&err, "line 2: bad base64"),
	       "json bytes: padding inside is refused: %s", err.msg);
	TAP_OK(read_text("{\"h\":1}\n{\"k\":{\"b64\":\"YQ==\",\"x\":1}}\n", 0, &err, &n) == -1 &&
		       has(&err, "must be alone in its object"),
	       "json bytes: another field beside b64 is refused: %s", err.msg);
	TAP_OK(read_text("{\"h\":1}\n{\"k\":{\"b64\":1}}\n", 0, &err, &n) == -1 &&
		       has(&err, "wants a base64 string"),
	       "json bytes: b64 of a number is refused: %s", err.msg);
	TAP_OK(read_text("{\"h\":1}\n{\"k\":{\"x\":1}}\n", MC_RS_FLAT, &err, &n) == -1 &&
		       has(&err, "nested objects and arrays are not supported"),
	       "json bytes: another object is still nested to a flat reader");
	TAP_OK(read_text("{\"h\":1}\n{\"k\":{\"x\":1}}\n", 0, &err, &n) == 0 && n == 2,
	       "json bytes: and an object to a reader of nested records");
}

static void
test_out(void)
{
	FILE *f = tmpfile();
	struct mc_rs_out *o = NULL;
	msgpack_packer pk;
	struct mc_err err;
	int n = 0;
	long size = -1;
	char *buf = NULL;

	if (f != NULL)
		o = mc_rs_out_new(f, &pk, &err);
	if (o != NULL) {
		/* enough records to cross several 64 KiB blocks */
		for (uint64_t i = 0; i < 50000; i++)
			pack_rec(&pk, i);
		if (mc_rs_out_done(o, "the test stream", &err) == 0 && fflush(f) == 0) {
			size = ftell(f);
			buf = size > 0 ? malloc((size_t)size) : NULL;
			rewind(f);
			if (buf != NULL && fread(buf, 1, (size_t)size, f) != (size_t)size)
				size = -1;
		}
	}
	TAP_OK(buf != NULL && size > 0 && read_all(buf, (size_t)size, false, 0, &err, &n) == 0 &&
		       n == 50000,
	       "out: records packed through the buffer all come back in order");
	free(buf);
	if (f != NULL)
		fclose(f);
}

int
main(void)
{
	test_msgpack();
	test_json();
	test_json_bytes();
	test_out();
	return tap_done();
}
