/*
 * msgpack -> JSON for --json output and people: maps become objects,
 * str becomes a JSON string (invalid UTF-8 and control bytes escaped),
 * bin becomes a base64 string, ext becomes null.
 */
#ifndef MC_JSON_H
#define MC_JSON_H

#include <msgpack.h>
#include <stdio.h>

void mc_json_write(FILE *f, const msgpack_object *o);
/* Write a JSON string literal with escapes. */
void mc_json_write_str(FILE *f, const char *s, size_t len);

#endif
