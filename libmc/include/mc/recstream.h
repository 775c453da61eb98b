/*
 * Record streams: the plumbing shared by the stream codecs (plans,
 * reports, candidate views) that carry one msgpack map a record, or one
 * JSON object a line.
 *
 * Writing: mc_rs_out gathers a msgpack_packer's output into 64 KiB
 * blocks, so a record of many small fields costs one fwrite() per block.
 *
 * Reading: mc_rs_next() yields the next record as a msgpack_object tree
 * that lives in a zone reused from record to record (valid until the next
 * call). In msgpack form each record passes mc_wire_check() before it is
 * unpacked; in JSON-lines form each non-blank line is parsed into the
 * same tree (strings unescaped, {"b64":"..."} read as the string of those
 * bytes, even under MC_RS_FLAT, nested arrays and maps unless
 * MC_RS_FLAT), so one decoder judges both forms. Input is read in blocks; a record or line over max_record bytes
 * is refused. Errors name where they are: "header: ", "record N: " or
 * "line N: ". The first record is the header; a failure inside it reads
 * "not an <format> stream".
 */
#ifndef MC_RECSTREAM_H
#define MC_RECSTREAM_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "mc/err.h"

/* ---- output ---- */

struct mc_rs_out;

/* A buffer over f, with pk initialised to pack into it. */
struct mc_rs_out *mc_rs_out_new(FILE *f, msgpack_packer *pk, struct mc_err *err);
/* True once a write to f has failed: the writer may stop early. */
bool mc_rs_out_failed(const struct mc_rs_out *o);
/* Flush and free o; -1 with err ("cannot write <what>") if anything failed. */
int mc_rs_out_done(struct mc_rs_out *o, const char *what, struct mc_err *err);
/* Free o without writing what is still buffered (the writer gave up). */
void mc_rs_out_abort(struct mc_rs_out *o);

/* ---- input ---- */

/* JSON lines: refuse nested arrays and objects anywhere in a line. */
#define MC_RS_FLAT 1

struct mc_rs;

/*
 * A reader of f. format names the stream in "not an <format> stream";
 * what names it in I/O errors ("cannot read <what>").
 */
struct mc_rs *mc_rs_open(FILE *f, bool json, const char *format, const char *what,
			 size_t max_record, int flags, struct mc_err *err);
void mc_rs_close(struct mc_rs *r);
/*
 * The next record into *o: 1 when there is one, 0 at a clean end of the
 * input, -1 with err. An input without even a header is an error.
 */
int mc_rs_next(struct mc_rs *r, const msgpack_object **o, struct mc_err *err);
/* True while the record being read or judged is the header. */
bool mc_rs_in_header(const struct mc_rs *r);
/* MC_ERR_PROTO with the position of the current record prefixed; -1. */
int mc_rs_fail(const struct mc_rs *r, struct mc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
