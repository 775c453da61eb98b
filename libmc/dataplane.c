/*
 * Peer reads and writes (mc/dataplane.h).
 */
#include "mc/dataplane.h"
#include "mc/proto.h"
#include "mc/wire.h"

/*
 * A peer announcing more bytes than the version has is answered by
 * draining them, to keep the connection; far more is not worth it.
 */
#define DRAIN_MAX ((uint64_t)64 << 20)

/* What a peer's answer said, taken before its bulk is read. */
struct head {
	int remote; /* -1 when the answer is an error, described in err */
	struct mc_err err;
	bool bulk;
	uint64_t bulk_len;
};

/*
 * Read one answer's header and keep what the caller needs from it, then
 * release the message: it may point into the connection's buffer, which
 * reading the bulk reuses.
 */
static int
recv_head(struct mc_rpcc *r, struct head *h, struct mc_err *err)
{
	struct mc_msg m;

	if (mc_rpcc_recv(r, &m, err) < 0)
		return -1;
	h->remote = mc_msg_error(&m, &h->err);
	h->bulk = m.has_bulk;
	h->bulk_len = m.bulk_len;
	mc_msg_release(&m);
	return 0;
}

/* The grant as a bin field; nothing when there is none. */
static void
pack_grant(msgpack_packer *pk, const struct mc_dp_obj *o)
{
	if (o->glen == 0)
		return;
	mc_pack_key(pk, "grant");
	msgpack_pack_bin(pk, o->glen);
	msgpack_pack_bin_body(pk, o->grant, o->glen);
}

int
mc_dp_read_send(struct mc_rpcc *r, const struct mc_dp_obj *o, struct mc_err *err)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "read");

	msgpack_pack_map(pk, 4 + (o->glen > 0) + (o->lease_id != 0));
	mc_pack_kv_str(pk, "tenant", o->tenant);
	mc_pack_kv_strn(pk, "key", o->key, o->klen);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "size", o->len);
	pack_grant(pk, o);
	if (o->lease_id != 0)
		mc_pack_kv_u64(pk, "lease_id", o->lease_id);
	return mc_rpcc_send(r, NULL, 0, err) < 0 ? -1 : 0;
}

static void
tap_checksum(const void *p, size_t n, void *arg)
{
	mc_checksum_stream_update(arg, p, n);
}

int
mc_dp_read_recv(struct mc_rpcc *r, const struct mc_dp_obj *o, struct mc_bulk_sink *sink,
		struct mc_checksum_stream *cs, struct mc_err *refused, struct mc_err *err)
{
	uint64_t size = sink->len;
	struct head h;

	refused->code = MC_OK;
	refused->msg[0] = '\0';
	if (recv_head(r, &h, err) < 0)
		return -1;
	if (h.bulk && (h.remote < 0 || h.bulk_len != size)) {
		if (h.bulk_len > size + DRAIN_MAX)
			return mc_err_set(err, MC_ERR_PROTO,
					  "peer sent %llu bytes for '%.*s', %llu expected",
					  (unsigned long long)h.bulk_len, MC_KSHOWN(o->klen),
					  (const char *)o->key, (unsigned long long)size);
		if (mc_rpcc_skip_bulk(r, h.bulk_len, err) < 0)
			return -1;
		if (h.remote == 0) {
			mc_err_set(refused, MC_ERR_PROTO,
				   "size mismatch: %llu bytes sent, %llu expected",
				   (unsigned long long)h.bulk_len, (unsigned long long)size);
			return 0;
		}
	}
	if (h.remote < 0) {
		*refused = h.err;
		return 0;
	}
	if (!h.bulk && size > 0) {
		mc_err_set(refused, MC_ERR_PROTO, "read answered without data");
		return 0;
	}
	/*
	 * Hash each chunk as soon as it lands: it is still in cache, and the
	 * peer keeps sending while we hash, so verifying costs little beyond
	 * the transfer itself.
	 */
	mc_checksum_stream_reset(cs);
	sink->tap = tap_checksum;
	sink->tap_arg = cs;
	if (mc_rpcc_read_bulk_to(r, sink, err) < 0)
		return -1;
	if (mc_checksum_stream_digest(cs) != o->checksum)
		mc_err_set(refused, MC_ERR_CHECKSUM, "checksum mismatch");
	return 0;
}

int
mc_dp_write_send(struct mc_rpcc *r, const struct mc_dp_obj *o, const char *tier,
		 const struct mc_bulk_src *src, struct mc_err *err)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "write");

	msgpack_pack_map(pk, 6 + (o->glen > 0) + (o->plen > 0));
	pack_grant(pk, o);
	if (o->plen > 0)
		mc_pack_kv_strn(pk, "parent", o->parent, o->plen);
	mc_pack_kv_str(pk, "tenant", o->tenant);
	mc_pack_kv_strn(pk, "key", o->key, o->klen);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "len", src->len);
	mc_pack_kv_u64(pk, "checksum", o->checksum);
	mc_pack_kv_str(pk, "tier", tier);
	return mc_rpcc_send_src(r, src->len > 0 ? src : NULL, err) < 0 ? -1 : 0;
}

int
mc_dp_write_recv(struct mc_rpcc *r, struct mc_err *refused, struct mc_err *err)
{
	struct head h;

	refused->code = MC_OK;
	refused->msg[0] = '\0';
	if (recv_head(r, &h, err) < 0)
		return -1;
	if (h.bulk && mc_rpcc_skip_bulk(r, h.bulk_len, err) < 0)
		return -1;
	if (h.remote < 0)
		*refused = h.err;
	return 0;
}
