/*
 * msgpack -> JSON: escapes, invalid UTF-8, nesting, bin as base64.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/json.h"
#include "mc/wire.h"
#include "tap.h"

/* Render o to a string (caller frees). */
static char *
render(const msgpack_object *o)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (f == NULL)
		return NULL;
	mc_json_write(f, o);
	fclose(f);
	return buf;
}

static char *
render_str(const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (f == NULL)
		return NULL;
	mc_json_write_str(f, s, len);
	fclose(f);
	return buf;
}

static int
str_is(const char *s, size_t len, const char *want)
{
	char *got = render_str(s, len);
	int ok = got != NULL && strcmp(got, want) == 0;

	if (!ok)
		printf("# got %s want %s\n", got ? got : "(null)", want);
	free(got);
	return ok;
}

static void
test_escapes(void)
{
	TAP_OK(str_is("plain", 5, "\"plain\""), "str: plain text is quoted");
	TAP_OK(str_is("a\"b\\c", 5, "\"a\\\"b\\\\c\""), "str: quote and backslash are escaped");
	TAP_OK(str_is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
		      "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""),
	       "str: valid UTF-8 passes through");
	/* not text: the bytes in base64, so that every one survives */
	TAP_OK(str_is("a\nb", 3, "{\"b64\":\"YQpi\"}"), "str: a newline makes bytes, not text");
	TAP_OK(str_is("\x01\x1f\x7f", 3, "{\"b64\":\"AR9/\"}"),
	       "str: control bytes and DEL make bytes");
	TAP_OK(str_is("a\0b", 3, "{\"b64\":\"YQBi\"}"),
	       "str: an embedded NUL is kept, not a terminator");
	TAP_OK(str_is("x\xc2\x85", 3, "{\"b64\":\"eMKF\"}"),
	       "str: a C1 control character (U+0085) makes bytes");
	TAP_OK(str_is("\xc2\xa0", 2, "\"\xc2\xa0\""), "str: U+00A0, past C1, is text");
	TAP_OK(str_is("\xff\xc3", 2, "{\"b64\":\"/8M=\"}"),
	       "str: invalid and truncated UTF-8 make bytes");
	TAP_OK(str_is("\xc0\xaf", 2, "{\"b64\":\"wK8=\"}"), "str: overlong UTF-8 makes bytes");
	TAP_OK(str_is("\xed\xa0\x80", 3, "{\"b64\":\"7aCA\"}"), "str: UTF-8 surrogates make bytes");
	TAP_OK(mc_json_is_text("plain \"q\"", 9) && !mc_json_is_text("\t", 1) &&
		       mc_json_is_text("", 0),
	       "str: mc_json_is_text agrees");
	TAP_OK(str_is("", 0, "\"\""), "str: empty string");
}

static int
json_is(const char *packed, size_t len, const char *want)
{
	msgpack_unpacked u;
	size_t off = 0;
	char *got;
	int ok;

	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, packed, len, &off) != MSGPACK_UNPACK_SUCCESS)
		return 0;
	got = render(&u.data);
	ok = got != NULL && strcmp(got, want) == 0;
	if (!ok)
		printf("# got %s want %s\n", got ? got : "(null)", want);
	free(got);
	msgpack_unpacked_destroy(&u);
	return ok;
}

static void
test_objects(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 7);
	mc_pack_kv_str(&pk, "key", "k\"1");
	mc_pack_kv_u64(&pk, "size", 18446744073709551615ull);
	mc_pack_kv_i64(&pk, "delta", -42);
	mc_pack_kv_bool(&pk, "pin", false);
	mc_pack_kv_double(&pk, "ratio", 0.1);
	mc_pack_key(&pk, "replicas");
	msgpack_pack_array(&pk, 2);
	msgpack_pack_map(&pk, 2);
	mc_pack_kv_u64(&pk, "peer", 1);
	mc_pack_key(&pk, "tiers");
	msgpack_pack_array(&pk, 0);
	msgpack_pack_nil(&pk);
	mc_pack_key(&pk, "empty");
	msgpack_pack_map(&pk, 0);
	TAP_OK(json_is(sb.data, sb.size,
		       "{\"key\":\"k\\\"1\",\"size\":\"18446744073709551615\","
		       "\"delta\":-42,\"pin\":false,\"ratio\":0.1,"
		       "\"replicas\":[{\"peer\":1,\"tiers\":[]},null],"
		       "\"empty\":{}}"),
	       "json: nested maps and arrays of every scalar");
	msgpack_sbuffer_clear(&sb);

	msgpack_pack_array(&pk, 5);
	msgpack_pack_bin(&pk, 0);
	msgpack_pack_bin(&pk, 1);
	msgpack_pack_bin_body(&pk, "M", 1);
	msgpack_pack_bin(&pk, 2);
	msgpack_pack_bin_body(&pk, "Ma", 2);
	msgpack_pack_bin(&pk, 3);
	msgpack_pack_bin_body(&pk, "Man", 3);
	msgpack_pack_bin(&pk, 3);
	msgpack_pack_bin_body(&pk, "\xff\xfe\x00", 3);
	TAP_OK(json_is(sb.data, sb.size, "[\"\",\"TQ==\",\"TWE=\",\"TWFu\",\"//4A\"]"),
	       "json: bin is base64 with padding");
	msgpack_sbuffer_clear(&sb);

	msgpack_pack_array(&pk, 4);
	msgpack_pack_ext(&pk, 2, 5);
	msgpack_pack_ext_body(&pk, "ab", 2);
	msgpack_pack_double(&pk, 1.0 / 0.0);
	msgpack_pack_float(&pk, 0.5f);
	msgpack_pack_double(&pk, 1e300);
	TAP_OK(json_is(sb.data, sb.size, "[null,null,0.5,1e+300]"),
	       "json: ext and infinity become null, floats read back exactly");
	msgpack_sbuffer_clear(&sb);

	msgpack_pack_map(&pk, 2);
	msgpack_pack_uint8(&pk, 7);
	msgpack_pack_true(&pk);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_str(&pk, 1);
	msgpack_pack_str_body(&pk, "q", 1);
	msgpack_pack_nil(&pk);
	TAP_OK(json_is(sb.data, sb.size, "{\"7\":true,\"[\\\"q\\\"]\":null}"),
	       "json: non-string map keys become strings");
	msgpack_sbuffer_destroy(&sb);
}

/*
 * Numbers that jq and JavaScript read as doubles must not be rounded: a
 * checksum is its 16 hex digits, any other integer past 2^53 its decimal
 * digits in a string, and the readers take both back.
 */
static void
test_big_integers(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_object o;
	uint64_t v = 0;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6);
	mc_pack_kv_u64(&pk, "checksum", 16483095250448565003ull);
	mc_pack_kv_u64(&pk, "header_checksum", 5);
	mc_pack_kv_u64(&pk, "exact", 1ull << 53);
	mc_pack_kv_u64(&pk, "over", (1ull << 53) + 1);
	mc_pack_kv_i64(&pk, "low", -(int64_t)(1ull << 53) - 1);
	mc_pack_kv_str(&pk, "checksums", "x");
	TAP_OK(json_is(sb.data, sb.size,
		       "{\"checksum\":\"e4bfb7cc91ea430b\",\"header_checksum\":"
		       "\"0000000000000005\",\"exact\":9007199254740992,"
		       "\"over\":\"9007199254740993\",\"low\":\"-9007199254740993\","
		       "\"checksums\":\"x\"}"),
	       "json: checksums are 16 hex digits, integers past 2^53 decimal strings");
	msgpack_sbuffer_destroy(&sb);
	TAP_OK(mc_json_is_hash_field("checksum", 8) && mc_json_is_hash_field("a_checksum", 10) &&
		       !mc_json_is_hash_field("_checksum", 9) &&
		       !mc_json_is_hash_field("checksums", 9),
	       "json: the hash fields are 'checksum' and '..._checksum'");
	o.type = MSGPACK_OBJECT_STR;
	o.via.str.ptr = "18446744073709551615";
	o.via.str.size = 20;
	TAP_OK(mc_json_get_u64(&o, &v) && v == UINT64_MAX, "json: a decimal string reads back");
	o.via.str.ptr = "18446744073709551616";
	TAP_OK(!mc_json_get_u64(&o, &v), "json: a decimal string over 64 bits is refused");
	o.via.str.ptr = "012";
	o.via.str.size = 3;
	TAP_OK(!mc_json_get_u64(&o, &v), "json: a leading zero is not a number");
	o.via.str.ptr = "1x";
	o.via.str.size = 2;
	TAP_OK(!mc_json_get_u64(&o, &v), "json: a string with a non-digit is not a number");
	o.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
	o.via.u64 = 7;
	TAP_OK(mc_json_get_u64(&o, &v) && v == 7, "json: a plain number reads");
}

int
main(void)
{
	test_escapes();
	test_objects();
	test_big_integers();
	return tap_done();
}
