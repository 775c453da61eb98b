/*
 * The snapshot codec (layout in mc/snapshot.h and mc-snapshot(5)).
 *
 * Both directions stream: the writer packs records into a small buffer
 * and feeds it to zstd in chunks, the reader pulls fixed-size blocks from
 * its fd (which may be a pipe: it never seeks) and splits the
 * decompressed bytes into records with mc_wire_check(). Memory is bounded
 * by the block sizes and MC_SNAP_MAX_RECORD, never by a size the file
 * declares.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "mc/checksum.h"
#include "mc/io.h"
#include "mc/snapshot.h"
#include "mc/wire.h"

/* Records are compressed in batches of about this many bytes. */
#define FEED_BYTES (128u << 10)
/* Bytes read from the fd at a time. */
#define READ_BLOCK (128u << 10)
/* in[] holds a whole header or trailer (MC_SNAP_MAX_RECORD) plus a block. */
#define IN_CAP (MC_SNAP_MAX_RECORD + READ_BLOCK)

/* ---- plain I/O ---- */

static int
write_all(int fd, const void *buf, size_t len, struct mc_err *err)
{
	return mc_write_all(fd, buf, len) < 0 ? mc_err_errno(err, "cannot write snapshot") : 0;
}

/* One read() through EINTR: bytes read, 0 at end of file, -1 on error. */
static ssize_t
read_some(int fd, void *buf, size_t cap, struct mc_err *err)
{
	for (;;) {
		ssize_t n = read(fd, buf, cap);

		if (n >= 0)
			return n;
		if (errno != EINTR)
			return mc_err_errno(err, "cannot read snapshot");
	}
}

/* ---- writing ---- */

struct mc_snap_writer {
	int fd;
	ZSTD_CCtx *cctx;
	msgpack_sbuffer buf; /* packed records not yet compressed */
	msgpack_packer pk;
	size_t rec_start; /* where the record being packed begins in buf */
	char *out;	  /* compressed bytes on their way to fd */
	size_t out_cap;
	struct mc_checksum_stream *sum;
	uint64_t header_sum; /* the header is outside the payload's checksum */
	uint64_t records;
	bool failed; /* a write failed: the output is already invalid */
};

static void
writer_free(struct mc_snap_writer *w)
{
	if (w == NULL)
		return;
	ZSTD_freeCCtx(w->cctx);
	msgpack_sbuffer_destroy(&w->buf);
	free(w->out);
	mc_checksum_stream_free(w->sum);
	free(w);
}

/* The header map, every field always present. */
static void
pack_header(msgpack_packer *pk, const struct mc_snap_header *h)
{
	msgpack_pack_map(pk, 8);
	mc_pack_kv_str(pk, "format", MC_SNAP_FORMAT);
	mc_pack_kv_u64(pk, "version", MC_SNAP_VERSION);
	mc_pack_key(pk, "master_id");
	mc_pack_strn(pk, h->master_id, strnlen(h->master_id, sizeof(h->master_id)));
	mc_pack_kv_u64(pk, "created", h->created);
	mc_pack_kv_u64(pk, "objects", h->objects);
	mc_pack_kv_u64(pk, "peers", h->peers);
	mc_pack_kv_u64(pk, "tenants", h->tenants);
	mc_pack_kv_u64(pk, "bytes", h->bytes);
}

struct mc_snap_writer *
mc_snap_writer_open(int fd, const struct mc_snap_header *h, int level, struct mc_err *err)
{
	struct mc_snap_writer *w;
	msgpack_sbuffer hb;
	msgpack_packer hp;
	size_t rc;
	int wrc;

	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "cannot start snapshot: out of memory");
		return NULL;
	}
	w->fd = fd;
	msgpack_sbuffer_init(&w->buf);
	msgpack_packer_init(&w->pk, &w->buf, msgpack_sbuffer_write);
	w->cctx = ZSTD_createCCtx();
	w->out_cap = ZSTD_CStreamOutSize();
	w->out = malloc(w->out_cap);
	w->sum = mc_checksum_stream_new();
	if (w->cctx == NULL || w->out == NULL || w->sum == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "cannot start snapshot: out of memory");
		goto fail;
	}
	rc = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
				    level != 0 ? level : ZSTD_CLEVEL_DEFAULT);
	if (ZSTD_isError(rc)) {
		mc_err_set(err, MC_ERR_INVALID, "cannot start snapshot: zstd level %d: %s", level,
			   ZSTD_getErrorName(rc));
		goto fail;
	}
	/* a checksum of the frame's content catches what ours cannot name */
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);

	msgpack_sbuffer_init(&hb);
	msgpack_packer_init(&hp, &hb, msgpack_sbuffer_write);
	pack_header(&hp, h);
	if (hb.data != NULL)
		w->header_sum = mc_checksum(hb.data, hb.size);
	wrc = hb.data != NULL
		      ? write_all(fd, hb.data, hb.size, err)
		      : mc_err_set(err, MC_ERR_NO_SPACE, "cannot start snapshot: out of memory");
	msgpack_sbuffer_destroy(&hb);
	if (wrc < 0)
		goto fail;
	return w;
fail:
	writer_free(w);
	return NULL;
}

/*
 * rec_start already marks the end of the last record, so calling this
 * more than once for one record is harmless.
 */
msgpack_packer *
mc_snap_writer_record(struct mc_snap_writer *w)
{
	return &w->pk;
}

/* Compress what is buffered (mode: continue or end) and write it out. */
static int
writer_feed(struct mc_snap_writer *w, ZSTD_EndDirective mode, struct mc_err *err)
{
	ZSTD_inBuffer in = { w->buf.data, w->buf.size, 0 };
	size_t left;

	do {
		ZSTD_outBuffer out = { w->out, w->out_cap, 0 };

		left = ZSTD_compressStream2(w->cctx, &out, &in, mode);
		if (ZSTD_isError(left)) {
			w->failed = true;
			return mc_err_set(err, MC_ERR_INTERNAL, "cannot compress snapshot: %s",
					  ZSTD_getErrorName(left));
		}
		if (out.pos > 0) {
			mc_checksum_stream_update(w->sum, w->out, out.pos);
			if (write_all(w->fd, w->out, out.pos, err) < 0) {
				w->failed = true;
				return -1;
			}
		}
		/*
		 * continue: done once zstd took all the input; end: done once
		 * it says nothing of the frame is left to flush.
		 */
	} while (mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	msgpack_sbuffer_clear(&w->buf);
	w->rec_start = 0;
	return 0;
}

int
mc_snap_writer_end_record(struct mc_snap_writer *w, struct mc_err *err)
{
	size_t len = w->buf.size - w->rec_start, ml = 0;
	const char *why = "empty";
	const unsigned char *rec;
	int v = MC_WIRE_MORE;

	if (w->failed)
		return mc_err_set(err, MC_ERR_INTERNAL, "snapshot writer already failed");
	/*
	 * Refuse here what every reader would refuse later: a file that
	 * cannot be read back must not be written in the first place.
	 */
	rec = len > 0 ? (const unsigned char *)w->buf.data + w->rec_start : NULL;
	if (rec != NULL) {
		why = "incomplete";
		v = mc_wire_check(rec, len, MC_SNAP_MAX_RECORD, &ml, &why);
		if (v == MC_WIRE_WHOLE && ml != len)
			why = "more than one object";
		else if (v == MC_WIRE_WHOLE &&
			 !((rec[0] & 0xf0) == 0x80 || rec[0] == 0xde || rec[0] == 0xdf))
			why = "not a map";
		else if (v == MC_WIRE_WHOLE)
			why = NULL;
	}
	if (why != NULL) {
		/* drop what was packed, so the next record starts clean */
		w->buf.size = w->rec_start;
		return mc_err_set(err, MC_ERR_INVALID, "snapshot record %" PRIu64 " is bad: %s",
				  w->records + 1, why);
	}
	w->records++;
	w->rec_start = w->buf.size;
	if (w->buf.size >= FEED_BYTES)
		return writer_feed(w, ZSTD_e_continue, err);
	return 0;
}

int
mc_snap_writer_finish(struct mc_snap_writer *w, struct mc_err *err)
{
	msgpack_sbuffer tb;
	msgpack_packer tp;
	int rc = -1;

	if (w->failed) {
		mc_err_set(err, MC_ERR_INTERNAL, "snapshot writer already failed");
		goto out;
	}
	if (writer_feed(w, ZSTD_e_end, err) < 0)
		goto out;
	msgpack_sbuffer_init(&tb);
	msgpack_packer_init(&tp, &tb, msgpack_sbuffer_write);
	msgpack_pack_map(&tp, 3);
	mc_pack_kv_u64(&tp, "records", w->records);
	mc_pack_kv_u64(&tp, "checksum", mc_checksum_stream_digest(w->sum));
	mc_pack_kv_u64(&tp, "header_checksum", w->header_sum);
	if (tb.data == NULL)
		mc_err_set(err, MC_ERR_NO_SPACE, "cannot finish snapshot: out of memory");
	else
		rc = write_all(w->fd, tb.data, tb.size, err);
	msgpack_sbuffer_destroy(&tb);
out:
	writer_free(w);
	return rc;
}

void
mc_snap_writer_abort(struct mc_snap_writer *w)
{
	writer_free(w);
}

uint64_t
mc_snap_writer_records(const struct mc_snap_writer *w)
{
	return w->records;
}

/* ---- reading ---- */

struct mc_snap_reader {
	int fd;
	ZSTD_DCtx *dctx;
	/* bytes read from fd: in[in_pos..in_end) not yet consumed */
	char *in;
	size_t in_pos, in_end;
	/* decompressed bytes: out[out_pos..out_end) not yet split into records */
	char *out;
	size_t out_cap, out_pos, out_end;
	struct mc_checksum_stream *sum;
	uint64_t header_sum;
	msgpack_zone *zone; /* the current record's objects */
	msgpack_object rec;
	uint64_t records;
	uint64_t offset; /* bytes read from fd */
	bool frame_done;
	int state; /* 0 reading, 1 done (trailer matched), -1 failed */
	struct mc_err fail;
};

static void
reader_free(struct mc_snap_reader *r)
{
	if (r == NULL)
		return;
	ZSTD_freeDCtx(r->dctx);
	free(r->in);
	free(r->out);
	mc_checksum_stream_free(r->sum);
	if (r->zone != NULL)
		msgpack_zone_free(r->zone);
	free(r);
}

/*
 * Read one more block into in[], first moving what is left to the
 * front. 1 read, 0 end of file, -1 error.
 */
static int
reader_fill(struct mc_snap_reader *r, struct mc_err *err)
{
	ssize_t n;

	if (r->in_pos > 0) {
		memmove(r->in, r->in + r->in_pos, r->in_end - r->in_pos);
		r->in_end -= r->in_pos;
		r->in_pos = 0;
	}
	if (r->in_end == IN_CAP)
		return 1; /* full already: the caller has enough to look at */
	n = read_some(r->fd, r->in + r->in_end,
		      IN_CAP - r->in_end < READ_BLOCK ? IN_CAP - r->in_end : READ_BLOCK, err);
	if (n < 0)
		return -1;
	r->in_end += (size_t)n;
	r->offset += (uint64_t)n;
	return n > 0;
}

/*
 * Frame one small uncompressed map (header or trailer) at the front of
 * in[], reading more as needed. Returns its length, 0 if the file ends
 * first (*got says how many bytes there were), or -1 (err set; a
 * malformed map is reported with *why and code MC_ERR_PROTO).
 */
static ssize_t
reader_frame_map(struct mc_snap_reader *r, size_t max, size_t *got, const char **why,
		 struct mc_err *err)
{
	for (;;) {
		size_t ml = 0;
		int v = MC_WIRE_MORE, f;

		if (r->in_end > r->in_pos)
			v = mc_wire_check(r->in + r->in_pos, r->in_end - r->in_pos, max, &ml, why);
		if (v == MC_WIRE_WHOLE)
			return (ssize_t)ml;
		if (v == MC_WIRE_BAD)
			return mc_err_set(err, MC_ERR_PROTO, "%s", *why);
		f = reader_fill(r, err);
		if (f < 0)
			return -1;
		if (f == 0) {
			*got = r->in_end - r->in_pos;
			return 0;
		}
	}
}

/* Decode the map of len bytes at the front of in[] into the zone. */
static int
reader_decode_map(struct mc_snap_reader *r, size_t len, msgpack_object *o)
{
	size_t off = 0;

	msgpack_zone_clear(r->zone);
	if (msgpack_unpack(r->in + r->in_pos, len, &off, r->zone, o) != MSGPACK_UNPACK_SUCCESS ||
	    off != len || o->type != MSGPACK_OBJECT_MAP)
		return -1;
	return 0;
}

static int
not_ours(struct mc_err *err)
{
	return mc_err_set(err, MC_ERR_PROTO, "not an mc-snapshot file");
}

/* A u64 header field: absent is 0, any other type is an error. */
static int
header_u64(const msgpack_object *map, const char *key, uint64_t *out, struct mc_err *err)
{
	struct mc_err e;

	*out = 0;
	if (mc_map_u64(map, key, out, &e) < 0)
		return mc_err_set(err, MC_ERR_PROTO, "bad header: %s is not a number", key);
	return 0;
}

static int
reader_header(struct mc_snap_reader *r, struct mc_snap_header *h, struct mc_err *err)
{
	const char *why = "truncated header", *s;
	msgpack_object o;
	size_t got = 0, slen = 0;
	ssize_t len;

	len = reader_frame_map(r, MC_SNAP_MAX_RECORD, &got, &why, err);
	if (len < 0)
		return err->code == MC_ERR_PROTO ? not_ours(err) : -1;
	if (len == 0) {
		/*
		 * A file cut inside its header still names the format (it
		 * comes first); anything else never was a snapshot.
		 */
		if (got > 0 &&
		    memmem(r->in + r->in_pos, got, MC_SNAP_FORMAT, strlen(MC_SNAP_FORMAT)) != NULL)
			return mc_err_set(err, MC_ERR_PROTO, "truncated header");
		return not_ours(err);
	}
	if (reader_decode_map(r, (size_t)len, &o) < 0)
		return not_ours(err);
	if (mc_map_str(&o, "format", &s, &slen, NULL) != 1 || slen != strlen(MC_SNAP_FORMAT) ||
	    memcmp(s, MC_SNAP_FORMAT, slen) != 0)
		return not_ours(err);
	memset(h, 0, sizeof(*h));
	memcpy(h->format, MC_SNAP_FORMAT, sizeof(MC_SNAP_FORMAT));
	if (mc_map_u64(&o, "version", &h->version, NULL) != 1)
		return mc_err_set(err, MC_ERR_PROTO, "bad header: no version");
	if (h->version != MC_SNAP_VERSION)
		return mc_err_set(err, MC_ERR_PROTO, "unsupported snapshot version %" PRIu64,
				  h->version);
	switch (mc_map_str(&o, "master_id", &s, &slen, NULL)) {
	case 1:
		if (slen >= sizeof(h->master_id))
			return mc_err_set(err, MC_ERR_PROTO, "bad header: master_id too long");
		memcpy(h->master_id, s, slen);
		break;
	case -1:
		return mc_err_set(err, MC_ERR_PROTO, "bad header: master_id is not a string");
	}
	if (header_u64(&o, "created", &h->created, err) < 0 ||
	    header_u64(&o, "objects", &h->objects, err) < 0 ||
	    header_u64(&o, "peers", &h->peers, err) < 0 ||
	    header_u64(&o, "tenants", &h->tenants, err) < 0 ||
	    header_u64(&o, "bytes", &h->bytes, err) < 0)
		return -1;
	r->header_sum = mc_checksum(r->in + r->in_pos, (size_t)len);
	r->in_pos += (size_t)len;
	return 0;
}

struct mc_snap_reader *
mc_snap_reader_open(int fd, struct mc_snap_header *h, struct mc_err *err)
{
	struct mc_snap_reader *r;

	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "cannot read snapshot: out of memory");
		return NULL;
	}
	r->fd = fd;
	/*
	 * A whole record must fit in out[] next to the room zstd writes
	 * into, so a record that is still MORE always has space to grow.
	 */
	r->out_cap = MC_SNAP_MAX_RECORD + ZSTD_DStreamOutSize();
	r->in = malloc(IN_CAP);
	r->out = malloc(r->out_cap);
	r->dctx = ZSTD_createDCtx();
	r->sum = mc_checksum_stream_new();
	r->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
	if (r->in == NULL || r->out == NULL || r->dctx == NULL || r->sum == NULL ||
	    r->zone == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "cannot read snapshot: out of memory");
		goto fail;
	}
	if (reader_header(r, h, err) < 0)
		goto fail;
	return r;
fail:
	reader_free(r);
	return NULL;
}

/* Remember the first failure: later calls repeat it. */
static int reader_fail(struct mc_snap_reader *r, struct mc_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
reader_fail(struct mc_snap_reader *r, struct mc_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mc_err_vset(&r->fail, code, fmt, ap);
	va_end(ap);
	r->state = -1;
	if (err != NULL)
		*err = r->fail;
	return -1;
}

/* After the frame: the trailer, then nothing. */
static int
reader_trailer(struct mc_snap_reader *r, struct mc_err *err)
{
	const char *why = "truncated trailer";
	uint64_t n = 0, sum = 0, hsum = 0;
	struct mc_err e = { 0 };
	msgpack_object o;
	size_t got = 0;
	ssize_t len;
	int f;

	len = reader_frame_map(r, MC_SNAP_MAX_RECORD, &got, &why, &e);
	if (len < 0 && e.code == MC_ERR_PROTO)
		return reader_fail(r, err, MC_ERR_PROTO, "bad trailer: %s", why);
	if (len < 0)
		return reader_fail(r, err, e.code, "%s", e.msg);
	if (len == 0)
		return reader_fail(r, err, MC_ERR_PROTO, "truncated trailer");
	if (reader_decode_map(r, (size_t)len, &o) < 0 || mc_map_u64(&o, "records", &n, NULL) != 1 ||
	    mc_map_u64(&o, "checksum", &sum, NULL) != 1 ||
	    mc_map_u64(&o, "header_checksum", &hsum, NULL) != 1)
		return reader_fail(r, err, MC_ERR_PROTO, "bad trailer: a field is missing");
	r->in_pos += (size_t)len;
	if (sum != mc_checksum_stream_digest(r->sum))
		return reader_fail(r, err, MC_ERR_CHECKSUM, "checksum mismatch");
	if (hsum != r->header_sum)
		return reader_fail(r, err, MC_ERR_CHECKSUM, "header checksum mismatch");
	if (n != r->records)
		return reader_fail(r, err, MC_ERR_PROTO,
				   "record count mismatch: trailer says %" PRIu64 ", read %" PRIu64,
				   n, r->records);
	if (r->in_end > r->in_pos)
		return reader_fail(r, err, MC_ERR_PROTO, "trailing bytes after the trailer");
	f = reader_fill(r, &e);
	if (f < 0)
		return reader_fail(r, err, e.code, "%s", e.msg);
	if (f > 0)
		return reader_fail(r, err, MC_ERR_PROTO, "trailing bytes after the trailer");
	r->state = 1;
	return 0;
}

/* Decompress more of the frame into out[]. 0, or -1 on failure. */
static int
reader_inflate(struct mc_snap_reader *r, struct mc_err *err)
{
	struct mc_err e = { 0 };
	ZSTD_inBuffer in;
	ZSTD_outBuffer out;
	size_t ret;

	if (r->out_pos > 0) {
		memmove(r->out, r->out + r->out_pos, r->out_end - r->out_pos);
		r->out_end -= r->out_pos;
		r->out_pos = 0;
	}
	if (r->in_pos == r->in_end) {
		int f = reader_fill(r, &e);

		if (f < 0)
			return reader_fail(r, err, e.code, "%s", e.msg);
		if (f == 0)
			return reader_fail(r, err, MC_ERR_PROTO, "truncated payload");
	}
	in = (ZSTD_inBuffer){ r->in, r->in_end, r->in_pos };
	out = (ZSTD_outBuffer){ r->out, r->out_cap, r->out_end };
	ret = ZSTD_decompressStream(r->dctx, &out, &in);
	/* the checksum covers the compressed bytes exactly as stored */
	mc_checksum_stream_update(r->sum, r->in + r->in_pos, in.pos - r->in_pos);
	r->in_pos = in.pos;
	r->out_end = out.pos;
	if (ZSTD_isError(ret)) {
		char why[128];

		/* corruption usually shows here first; say so in the same words */
		if (ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong)
			return reader_fail(r, err, MC_ERR_CHECKSUM, "checksum mismatch");
		return reader_fail(r, err, MC_ERR_PROTO, "bad payload: zstd: %s",
				   mc_lower_reason(why, sizeof(why), ZSTD_getErrorName(ret)));
	}
	if (ret == 0)
		r->frame_done = true;
	return 0;
}

int
mc_snap_reader_next(struct mc_snap_reader *r, const msgpack_object **rec, struct mc_err *err)
{
	if (r->state < 0) {
		if (err != NULL)
			*err = r->fail;
		return -1;
	}
	if (r->state > 0)
		return 0;
	for (;;) {
		const char *why = "truncated record";
		size_t ml = 0, off = 0;
		int v = MC_WIRE_MORE;

		if (r->out_end > r->out_pos)
			v = mc_wire_check(r->out + r->out_pos, r->out_end - r->out_pos,
					  MC_SNAP_MAX_RECORD, &ml, &why);
		if (v == MC_WIRE_BAD)
			return reader_fail(r, err, MC_ERR_PROTO, "bad record %" PRIu64 ": %s",
					   r->records + 1, why);
		if (v == MC_WIRE_WHOLE) {
			const msgpack_object *t;

			msgpack_zone_clear(r->zone);
			if (msgpack_unpack(r->out + r->out_pos, ml, &off, r->zone, &r->rec) !=
				    MSGPACK_UNPACK_SUCCESS ||
			    off != ml)
				return reader_fail(r, err, MC_ERR_PROTO,
						   "bad record %" PRIu64 ": cannot decode",
						   r->records + 1);
			t = mc_map_get(&r->rec, "t");
			if (r->rec.type != MSGPACK_OBJECT_MAP || t == NULL ||
			    t->type != MSGPACK_OBJECT_STR)
				return reader_fail(r, err, MC_ERR_PROTO,
						   "bad record %" PRIu64 ": not a map with a kind",
						   r->records + 1);
			r->out_pos += ml;
			r->records++;
			*rec = &r->rec;
			return 1;
		}
		if (r->frame_done) {
			if (r->out_end > r->out_pos)
				return reader_fail(r, err, MC_ERR_PROTO,
						   "bad record %" PRIu64 ": cut off by the end "
						   "of the payload",
						   r->records + 1);
			return reader_trailer(r, err) < 0 ? -1 : 0;
		}
		if (reader_inflate(r, err) < 0)
			return -1;
	}
}

void
mc_snap_reader_close(struct mc_snap_reader *r)
{
	reader_free(r);
}

uint64_t
mc_snap_reader_offset(const struct mc_snap_reader *r)
{
	return r->offset;
}

int
mc_snap_verify_fd(int fd, struct mc_snap_header *h, uint64_t *records, struct mc_err *err)
{
	struct mc_snap_header local;
	struct mc_snap_reader *r;
	const msgpack_object *rec;
	int rc;

	r = mc_snap_reader_open(fd, h != NULL ? h : &local, err);
	if (r == NULL)
		return -1;
	while ((rc = mc_snap_reader_next(r, &rec, err)) > 0)
		;
	if (records != NULL)
		*records = r->records;
	mc_snap_reader_close(r);
	return rc;
}

/* ---- files and directories ---- */

#define TMP_PREFIX ".mc-snapshot-"
#define TMP_RANDOM 6 /* the XXXXXX mkostemp fills in */

int
mc_snap_create_tmp(const char *dir, char *tmp, size_t cap, struct mc_err *err)
{
	struct stat st;
	int fd, n, tries;

	for (tries = 0; tries < 8; tries++) {
		n = snprintf(tmp, cap, "%s/" TMP_PREFIX "XXXXXX", dir);
		if (n < 0 || (size_t)n >= cap)
			return mc_err_set(err, MC_ERR_INVALID,
					  "snapshot directory name too long: %s", dir);
		fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0)
			return mc_err_errno(err, "cannot create a snapshot in %s", dir);
		/*
		 * mkostemp makes 0600; snapshots are meant to be read by
		 * admins' tools. The lock marks the file as being written.
		 */
		if (fchmod(fd, 0644) < 0 || flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0) {
			mc_err_errno(err, "cannot create a snapshot in %s", dir);
			close(fd);
			unlink(tmp);
			return -1;
		}
		/* a cleaner took it for a dead writer's before the lock: again */
		if (st.st_nlink > 0)
			return fd;
		close(fd);
	}
	return mc_err_set(err, MC_ERR_SYSTEM, "cannot create a snapshot in %s: it keeps vanishing",
			  dir);
}

/* Whether name is one mc_snap_create_tmp() could have made. */
static bool
tmp_name(const char *name)
{
	size_t len = strlen(name), i;

	if (len != strlen(TMP_PREFIX) + TMP_RANDOM ||
	    strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
		return false;
	for (i = strlen(TMP_PREFIX); i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9')))
			return false;
	return true;
}

int
mc_snap_clean_tmp(const char *dir, size_t *removed, struct mc_err *err)
{
	struct dirent *de;
	size_t gone = 0;
	int rc = 0;
	DIR *d;

	if (removed != NULL)
		*removed = 0;
	d = opendir(dir);
	if (d == NULL) {
		if (errno == ENOENT)
			return 0;
		return mc_err_errno(err, "cannot list %s", dir);
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		int fd;

		if (!tmp_name(de->d_name))
			continue;
		/* not through a link, and a fifo of that name cannot block the open */
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* a writer holds its file locked until the rename: a live one is left alone */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (unlinkat(dirfd(d), de->d_name, 0) == 0)
				gone++;
			else if (errno != ENOENT && rc == 0)
				rc = mc_err_errno(err, "cannot remove %s/%s", dir, de->d_name);
		}
		close(fd);
	}
	closedir(d);
	if (removed != NULL)
		*removed = gone;
	return rc;
}

/* fsync the directory holding path, so a rename in it survives a crash. */
static int
sync_parent(const char *path, struct mc_err *err)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int fd, rc = 0;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	else
		return mc_err_set(err, MC_ERR_INVALID, "snapshot path too long: %s", path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return mc_err_errno(err, "cannot open directory %s", dir);
	if (fsync(fd) < 0)
		rc = mc_err_errno(err, "cannot sync directory %s", dir);
	close(fd);
	return rc;
}

int
mc_snap_commit(int fd, const char *tmp, const char *final, struct mc_err *err)
{
	if (fsync(fd) < 0) {
		mc_err_errno(err, "cannot sync %s", tmp);
		close(fd);
		goto fail;
	}
	if (close(fd) < 0) {
		mc_err_errno(err, "cannot close %s", tmp);
		goto fail;
	}
	if (rename(tmp, final) < 0) {
		mc_err_errno(err, "cannot rename %s to %s", tmp, final);
		goto fail;
	}
	return sync_parent(final, err);
fail:
	unlink(tmp);
	return -1;
}

void
mc_snap_path(const char *dir, uint64_t created, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/mc-snapshot-%" PRIu64 "%s", dir, created, MC_SNAP_SUFFIX);
}

struct snap_entry {
	uint64_t created;
	char *path;
};

/* The created time in a snapshot file name; false for any other name. */
static bool
snap_name(const char *name, uint64_t *created)
{
	static const char prefix[] = "mc-snapshot-";
	const char *p = name + sizeof(prefix) - 1;
	uint64_t v = 0;
	size_t nd = 0;

	if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
		return false;
	for (; *p >= '0' && *p <= '9'; p++, nd++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (nd == 0 || strcmp(p, MC_SNAP_SUFFIX) != 0)
		return false;
	*created = v;
	return true;
}

/* Newest first; equal times (leading zeros) by name, for a stable order. */
static int
entry_cmp(const void *a, const void *b)
{
	const struct snap_entry *x = a, *y = b;

	if (x->created != y->created)
		return x->created < y->created ? 1 : -1;
	return strcmp(y->path, x->path);
}

int
mc_snap_list(const char *dir, char ***paths, size_t *n, struct mc_err *err)
{
	struct snap_entry *v = NULL, *nv;
	size_t nv_len = 0, cap = 0, i;
	struct dirent *de;
	char **out;
	DIR *d;

	*paths = NULL;
	*n = 0;
	d = opendir(dir);
	if (d == NULL) {
		if (errno == ENOENT)
			return 0;
		return mc_err_errno(err, "cannot list %s", dir);
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		uint64_t created;
		size_t plen;

		if (!snap_name(de->d_name, &created))
			continue;
		if (nv_len == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (nv == NULL)
				goto oom;
			v = nv;
		}
		plen = strlen(dir) + 1 + strlen(de->d_name) + 1;
		v[nv_len].path = malloc(plen);
		if (v[nv_len].path == NULL)
			goto oom;
		snprintf(v[nv_len].path, plen, "%s/%s", dir, de->d_name);
		v[nv_len].created = created;
		nv_len++;
	}
	closedir(d);
	if (nv_len > 1) /* qsort of a NULL array is undefined even for 0 items */
		qsort(v, nv_len, sizeof(*v), entry_cmp);
	out = malloc((nv_len ? nv_len : 1) * sizeof(*out));
	if (out == NULL) {
		d = NULL;
		goto oom;
	}
	for (i = 0; i < nv_len; i++)
		out[i] = v[i].path;
	free(v);
	*paths = out;
	*n = nv_len;
	return 0;
oom:
	if (d != NULL)
		closedir(d);
	for (i = 0; i < nv_len; i++)
		free(v[i].path);
	free(v);
	return mc_err_set(err, MC_ERR_NO_SPACE, "cannot list %s: out of memory", dir);
}

void
mc_snap_list_free(char **paths, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

int
mc_snap_prune(const char *dir, size_t keep, size_t *removed, struct mc_err *err)
{
	char **paths;
	size_t n, i, gone = 0;
	int rc = 0;

	if (removed != NULL)
		*removed = 0;
	if (mc_snap_list(dir, &paths, &n, err) < 0)
		return -1;
	for (i = keep; i < n; i++) {
		if (unlink(paths[i]) == 0) {
			gone++;
		} else if (errno != ENOENT && rc == 0) {
			/* keep going: one stuck file should not pin the rest */
			rc = mc_err_errno(err, "cannot remove %s", paths[i]);
		}
	}
	mc_snap_list_free(paths, n);
	if (removed != NULL)
		*removed = gone;
	return rc;
}
