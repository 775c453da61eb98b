/*
 * msgpack -> JSON for --json output and people: maps become objects,
 * str becomes a JSON string when it is text (valid UTF-8 without control
 * characters) and {"b64":"..."} otherwise, bin becomes a base64 string,
 * ext becomes null. Keys are bytes, so a key that is not text keeps every
 * byte; every JSON reader in mc (mc/recstream.h) accepts both forms.
 */
#ifndef MC_JSON_H
#define MC_JSON_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdio.h>

void mc_json_write(FILE *f, const msgpack_object *o);
/* Write s[0..len) as a JSON value: a string if it is text, else {"b64":"..."}. */
void mc_json_write_str(FILE *f, const char *s, size_t len);
/* True when s[0..len) is valid UTF-8 without C0, DEL or C1 control characters. */
bool mc_json_is_text(const char *s, size_t len);

#endif
