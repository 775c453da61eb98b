/*
 * msgpack -> JSON for --json output and people: maps become objects,
 * str becomes a JSON string when it is text (valid UTF-8 without control
 * characters) and {"b64":"..."} otherwise, bin becomes a base64 string,
 * ext becomes null. Keys are bytes, so a key that is not text keeps every
 * byte; every JSON reader in mc (mc/recstream.h) accepts both forms.
 *
 * Integers: JSON readers such as jq and JavaScript hold numbers as
 * doubles, exact only up to 2^53. A 64-bit hash (a field named
 * "checksum" or "..._checksum") is a string of 16 hex digits, as the
 * text output shows it. Any other integer is a number while its
 * magnitude is at most 2^53 (every count, size, id and millisecond
 * time mc has stays far below) and a string of its decimal digits
 * beyond, so that no value is ever rounded; mc's readers take either.
 */
#ifndef MC_JSON_H
#define MC_JSON_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void mc_json_write(FILE *f, const msgpack_object *o);
/* Write s[0..len) as a JSON value: a string if it is text, else {"b64":"..."}. */
void mc_json_write_str(FILE *f, const char *s, size_t len);
/* The largest integer every JSON reader holds exactly: 2^53. */
#define MC_JSON_EXACT_MAX (1ull << 53)

/* v as a JSON number, or as a decimal string above MC_JSON_EXACT_MAX. */
void mc_json_write_u64(FILE *f, uint64_t v);
/* A 64-bit hash as a string of 16 lowercase hex digits. */
void mc_json_write_hash(FILE *f, uint64_t v);
/* True when a map key of this name holds a 64-bit hash. */
bool mc_json_is_hash_field(const char *name, size_t len);
/*
 * An unsigned integer as a JSON reader gave it: a number, or the decimal
 * string mc_json_write_u64 writes above 2^53. True with *out set, or
 * false when o is neither.
 */
bool mc_json_get_u64(const msgpack_object *o, uint64_t *out);
/* The decimal digits s[0..len) (no sign, no leading zero) into *out. */
bool mc_json_parse_u64(const char *s, size_t len, uint64_t *out);

/* True when s[0..len) is valid UTF-8 without C0, DEL or C1 control characters. */
bool mc_json_is_text(const char *s, size_t len);

#endif
