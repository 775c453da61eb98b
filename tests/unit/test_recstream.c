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
			m->via.map.ptr[0].val.via.str.size == 3 &&
			memcmp(m->via.map.ptr[0].val.via.str.ptr, "x\xffy", 3) == 0 &&
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
	test_out();
	return tap_done();
}
