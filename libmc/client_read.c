/*
 * Reads of the client API (mc/client.h): get one key into memory, a
 * malloc'd buffer or a file, or a batch of keys into memory. Each key
 * asks the master for its replica list (which grants a lease), then is
 * read in waves, replica after replica until one verifies, and its lease
 * is released with a notification that leaves with the next request.
 *
 * A peer that refuses a key's grant is most likely right: the grant
 * expired while an earlier replica stalled, or while a long read went
 * before it. Between two waves, the keys so refused get new grants from
 * the master in one call, once per key, and the refused replica is
 * tried again with its new grant.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client_impl.h"
#include "mc/parse.h"
#include "mc/wire.h"

struct get_key {
	const char *key;
	size_t klen;
	struct mc_bulk_sink sink; /* where the bytes go, of the version's size */
	uint64_t version, size, checksum;
	uint64_t lease_id; /* this reader's lease, released once the read is over */
	unsigned nrep, next;
	struct rep rep[MC_REPLICAS_MAX];
	int state;
	bool all_checksum; /* every replica tried so far failed its checksum */
	/*
	 * Replicas whose peer had no copy when asked (NOT_FOUND): the copy
	 * went between the replica list and the read. The master counts them.
	 */
	unsigned raced;
	bool renew;   /* the peer of rep[next] refused its grant: ask the master again */
	bool renewed; /* asked once already: a second refusal is final */
	struct mc_err err;
};

static int
parse_list(const msgpack_object *body, struct get_key *k, struct mc_err *err)
{
	if (mc_map_u64(body, "version", &k->version, err) != 1 ||
	    mc_map_u64(body, "size", &k->size, err) != 1 ||
	    mc_map_u64(body, "checksum", &k->checksum, err) != 1)
		return mc_err_set(err, MC_ERR_PROTO, "malformed replica list for '%.*s'",
				  MC_KSHOWN(k->klen), k->key);
	/* An older master grants no lease ids: nothing to release. */
	if (mc_map_u64(body, "lease_id", &k->lease_id, err) < 0)
		k->lease_id = 0;
	if (mc_cl_parse_replicas(body, k->rep, &k->nrep, err) < 0)
		return -1;
	if (k->size > SIZE_MAX)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "'%.*s' is too large for memory",
				  MC_KSHOWN(k->klen), k->key);
	k->all_checksum = true;
	k->state = ST_PENDING;
	return 0;
}

static int
read_send(struct conns *t, struct mc_rpcc *r, void *item, struct mc_err *err)
{
	struct get_key *k = item;
	struct mc_dp_obj o = mc_cl_dp_obj(t, k->key, k->klen, k->version, k->size, k->checksum,
					  &k->rep[k->next]);

	o.lease_id = k->lease_id;
	return mc_dp_read_send(r, &o, err);
}

/*
 * A replica's peer that could not be reached: say which peer it is and,
 * from the master's word, how long it has before it is dropped (its
 * replicas with it), instead of a bare "connection refused".
 */
static void
peer_down(char *buf, size_t cap, const struct rep *r, const struct mc_err *err)
{
	const char *why = strstr(err->msg, r->addr);
	char when[32];
	int n;

	/* "cannot connect to ADDR: connection refused": the reason alone */
	why = why != NULL && strncmp(why + strlen(r->addr), ": ", 2) == 0
		      ? why + strlen(r->addr) + 2
		      : err->msg;
	n = snprintf(buf, cap, "peer %llu (%s) is not answering (%s)",
		     (unsigned long long)r->peer_id, r->addr, why);
	if (!r->has_drop || n < 0 || (size_t)n >= cap)
		return;
	if (r->drop_in_ms == 0)
		snprintf(buf + n, cap - (size_t)n, "; the master drops it at its next sweep");
	else
		snprintf(buf + n, cap - (size_t)n,
			 "; the master drops it in %s unless it comes back",
			 mc_fmt_duration_ms(r->drop_in_ms, when, sizeof(when)));
}

static void
read_fail(void *item, const char *addr, const struct mc_err *err)
{
	struct get_key *k = item;
	char down[MC_ERR_MSG_MAX];

	if ((err->code == MC_ERR_UNAVAILABLE || err->code == MC_ERR_TIMEOUT) &&
	    k->rep[k->next].peer_id != 0) {
		peer_down(down, sizeof(down), &k->rep[k->next], err);
		mc_cl_key_err(&k->err, err->code, "read", k->key, k->klen, "from", NULL, down);
	} else {
		mc_cl_key_err(&k->err, err->code, "read", k->key, k->klen, "from", addr, err->msg);
	}
	if (err->code != MC_ERR_CHECKSUM)
		k->all_checksum = false;
	k->next++;
}

static int
read_recv(struct conns *t, struct mc_rpcc *r, const char *addr, void *item, struct mc_err *err)
{
	struct get_key *k = item;
	struct mc_dp_obj o = mc_cl_dp_obj(t, k->key, k->klen, k->version, k->size, k->checksum,
					  &k->rep[k->next]);
	struct mc_err refused;

	if (mc_dp_read_recv(r, &o, &k->sink, t->csum, &refused, err) < 0)
		return -1;
	if (refused.code == MC_ERR_NOT_FOUND)
		k->raced++;
	if (refused.code == MC_ERR_PERMISSION && !k->renewed) {
		/* said if the renewal fails; rep[next] is tried again if it works */
		mc_cl_key_err(&k->err, refused.code, "read", k->key, k->klen, "from", addr,
			      refused.msg);
		k->renew = true;
	} else if (refused.code != MC_OK)
		read_fail(k, addr, &refused);
	else
		k->state = ST_DONE;
	return 0;
}

static const struct wave_ops read_ops = { read_send, read_recv, read_fail };

/* Settle a key that has no replica left to try. */
static void
read_exhausted(struct get_key *k)
{
	k->state = ST_FAILED;
	if (k->nrep == 0)
		mc_err_set(&k->err, MC_ERR_NOT_FOUND, "cannot get '%.*s': no replica",
			   MC_KSHOWN(k->klen), k->key);
	else if (k->all_checksum)
		mc_err_set(&k->err, MC_ERR_CHECKSUM, "checksum mismatch on every replica of '%.*s'",
			   MC_KSHOWN(k->klen), k->key);
}

/*
 * Tell the master how many reads found their copy gone (read_raced
 * {count}), as a notification that leaves with the next request or
 * when the connection closes; a lost one only loses the count.
 */
static void
report_races(struct conns *t, const struct get_key *ks, size_t n)
{
	uint64_t raced = 0;
	msgpack_packer *pk;
	struct mc_err e;

	for (size_t i = 0; i < n; i++)
		raced += ks[i].raced;
	if (raced == 0 || !t->master)
		return;
	pk = mc_rpcc_begin(t->master, "read_raced");
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "count", raced);
	(void)mc_rpcc_notify(t->master, &e);
}

static void renew_grants(struct conns *t, struct get_key *ks, size_t n);

/* Read every pending key, replica after replica, into its buffer. */
static int
read_keys(struct conns *t, struct get_key *ks, size_t n, struct mc_err *err)
{
	struct wave w;
	size_t i;

	if (mc_cl_wave_init(&w, n, err) < 0)
		return -1;
	for (;;) {
		mc_cl_wave_reset(&w);
		for (i = 0; i < n; i++) {
			struct get_key *k = &ks[i];

			if (k->state != ST_PENDING)
				continue;
			if (k->next >= k->nrep) {
				read_exhausted(k);
				continue;
			}
			mc_cl_wave_add(&w, k, k->rep[k->next].addr, k->size);
		}
		if (w.n == 0)
			break;
		mc_cl_wave_run(t, &read_ops, &w);
		renew_grants(t, ks, n);
	}
	mc_cl_wave_free(&w);
	report_races(t, ks, n);
	return 0;
}

/* Queue a release of m lease ids (none are 0) on the master connection. */
static void
release_ids(struct conns *t, const uint64_t *ids, size_t m)
{
	msgpack_packer *pk;
	struct mc_err e;

	if (m == 0 || !t->master)
		return;
	pk = mc_rpcc_begin(t->master, "release");
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "lease_ids");
	msgpack_pack_array(pk, m);
	for (size_t i = 0; i < m; i++)
		msgpack_pack_uint64(pk, ids[i]);
	(void)mc_rpcc_notify(t->master, &e);
}

/*
 * End the leases of keys whose read is over (the bytes are verified, or
 * every replica failed). The release is a notification queued on the
 * master connection: it leaves with the next request, so a get costs no
 * extra round trip. If it is lost, the TTL ends the lease.
 */
static void
release_leases(struct conns *t, const struct get_key *ks, size_t n)
{
	uint64_t ids[CHUNK_KEYS];
	size_t i, j, m;

	for (i = 0; i < n; i += CHUNK_KEYS) {
		size_t end = n - i < CHUNK_KEYS ? n : i + CHUNK_KEYS;

		for (m = 0, j = i; j < end; j++)
			if (ks[j].lease_id != 0)
				ids[m++] = ks[j].lease_id;
		release_ids(t, ids, m);
	}
}

/*
 * The master's new list for k, with fresh grants: its replicas not yet
 * tried follow the tried ones, from the one refused on, and its lease
 * replaces k's. -1 when the list is of another version, which this read
 * cannot take into its sink. Either way *old is the lease left over, to
 * be released (0: none).
 */
static int
renew_one(struct get_key *k, const msgpack_object *it, uint64_t *old)
{
	struct get_key fresh = { .key = k->key, .klen = k->klen };
	struct mc_err e;

	*old = 0;
	if (mc_cl_item_error(it, &e) < 0 || parse_list(it, &fresh, &e) < 0)
		return -1;
	if (fresh.version != k->version || fresh.size != k->size || fresh.checksum != k->checksum) {
		*old = fresh.lease_id;
		return -1;
	}
	k->nrep = mc_cl_renewed_reps(k->rep, k->next, fresh.rep, fresh.nrep);
	*old = k->lease_id;
	k->lease_id = fresh.lease_id;
	return 0;
}

/*
 * New grants for the keys whose peer refused theirs, in one call to the
 * master (n is at most CHUNK_KEYS). A key the master cannot renew goes
 * on to its next replica with the refusal as its error.
 */
static void
renew_grants(struct conns *t, struct get_key *ks, size_t n)
{
	const msgpack_object_array *items = NULL;
	struct mc_key keys[CHUNK_KEYS];
	uint64_t old[CHUNK_KEYS];
	size_t i, m = 0, nold = 0;
	msgpack_packer *pk;
	struct mc_err e;
	struct mc_msg msg;
	bool answered = false;

	for (i = 0; i < n; i++)
		if (ks[i].renew)
			keys[m++] = (struct mc_key){ ks[i].key, ks[i].klen };
	if (m == 0)
		return;
	if ((pk = mc_cl_master_begin(t, "batch_get_replica_list", &e)) != NULL) {
		msgpack_pack_map(pk, 1);
		mc_cl_pack_keys(pk, keys, m);
		answered = mc_cl_master_call(t, &msg, &e) == 0;
	}
	if (answered && (!(items = mc_map_array(msg.body, "items")) || items->size != m))
		items = NULL;
	for (i = 0, m = 0; i < n; i++) {
		struct get_key *k = &ks[i];

		if (!k->renew)
			continue;
		k->renew = false;
		k->renewed = true;
		if (items != NULL && renew_one(k, &items->ptr[m], &old[nold]) == 0) {
			__atomic_add_fetch(&t->c->grant_renewals, 1, __ATOMIC_RELAXED);
		} else {
			k->all_checksum = false;
			k->next++;
		}
		nold += items != NULL && old[nold] != 0;
		m++;
	}
	if (answered)
		mc_msg_release(&msg);
	release_ids(t, old, nold);
}

static int
get_list(struct conns *t, struct get_key *k, struct mc_err *err)
{
	msgpack_packer *pk = mc_cl_master_begin(t, "get_replica_list", err);
	struct mc_msg m;
	int rc;

	if (pk) {
		msgpack_pack_map(pk, 1);
		mc_pack_kv_strn(pk, "key", k->key, k->klen);
	}
	if (!pk || mc_cl_master_call(t, &m, err) < 0) {
		mc_cl_key_err(err, err->code, "get", k->key, k->klen, "at",
			      mc_cl_is_transport(err->code) ? t->c->master_addr : NULL, err->msg);
		return -1;
	}
	rc = parse_list(m.body, k, err);
	mc_msg_release(&m);
	return rc;
}

static struct get_key *
get_one(struct conns *t, const void *key, size_t klen, struct mc_err *err)
{
	struct get_key *k;

	if (mc_cl_check_key(key, klen, err) < 0)
		return NULL;
	if (!(k = calloc(1, sizeof(*k)))) {
		mc_err_errno(err, "cannot allocate");
		return NULL;
	}
	k->key = key;
	k->klen = klen;
	if (get_list(t, k, err) < 0) {
		free(k);
		return NULL;
	}
	return k;
}

static int
get_finish(struct conns *t, struct get_key *k, struct mc_err *err)
{
	if (read_keys(t, k, 1, err) < 0)
		return -1;
	if (k->state != ST_DONE) {
		*err = k->err;
		return -1;
	}
	return 0;
}

int
mc_get(struct mc_client *c, const void *key, size_t key_len, void *buf, size_t cap, size_t *len,
       struct mc_err *err)
{
	struct conns *t = mc_cl_conns_of(c, err);
	struct get_key *k = t ? get_one(t, key, key_len, err) : NULL;
	int rc = -1;

	if (!k)
		return -1;
	*len = k->size;
	if (k->size > cap) {
		mc_err_set(err, MC_ERR_TOO_LARGE, "cannot get '%.*s': %llu bytes, buffer holds %zu",
			   MC_KSHOWN(key_len), (const char *)key, (unsigned long long)k->size, cap);
		goto out;
	}
	mc_bulk_sink_mem(&k->sink, buf, k->size);
	rc = get_finish(t, k, err);
out:
	release_leases(t, k, 1);
	free(k);
	return rc;
}

int
mc_get_fd(struct mc_client *c, const void *key, size_t key_len, int fd, size_t *len,
	  struct mc_err *err)
{
	struct conns *t = mc_cl_conns_of(c, err);
	struct get_key *k = t ? get_one(t, key, key_len, err) : NULL;
	int rc;

	if (!k)
		return -1;
	*len = k->size;
	mc_bulk_sink_fd(&k->sink, fd, 0, k->size);
	rc = get_finish(t, k, err);
	mc_bulk_sink_release(&k->sink);
	release_leases(t, k, 1);
	free(k);
	return rc;
}

int
mc_get_alloc(struct mc_client *c, const void *key, size_t key_len, void **buf, size_t *len,
	     struct mc_err *err)
{
	struct conns *t = mc_cl_conns_of(c, err);
	struct get_key *k = t ? get_one(t, key, key_len, err) : NULL;
	int rc = -1;

	*buf = NULL;
	if (!k)
		return -1;
	/* one spare byte so that an empty object still gets a real pointer */
	mc_bulk_sink_mem(&k->sink, malloc(k->size + 1), k->size);
	if (!k->sink.data) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate %llu bytes for '%.*s'",
			   (unsigned long long)k->size, MC_KSHOWN(key_len), (const char *)key);
		goto out;
	}
	rc = get_finish(t, k, err);
	if (rc == 0) {
		*buf = k->sink.data;
		*len = k->size;
	} else {
		free(k->sink.data);
	}
out:
	release_leases(t, k, 1);
	free(k);
	return rc;
}

/* One chunk of a batch get; -1 only when the master failed. */
static int
batch_get_chunk(struct conns *t, size_t n, const struct mc_key *keys, void *const *bufs,
		const size_t *caps, size_t *lens, int *results, struct get_key *ks,
		struct mc_err *err)
{
	const msgpack_object_array *items;
	msgpack_packer *pk;
	struct mc_msg m;
	size_t i;
	int rc;

	memset(ks, 0, n * sizeof(*ks));
	if (!(pk = mc_cl_master_begin(t, "batch_get_replica_list", err)))
		return -1;
	msgpack_pack_map(pk, 1);
	mc_cl_pack_keys(pk, keys, n);
	if (mc_cl_master_call(t, &m, err) < 0)
		return -1;
	items = mc_map_array(m.body, "items");
	if (!items || items->size != n) {
		mc_msg_release(&m);
		return mc_err_set(err, MC_ERR_PROTO, "batch_get_replica_list: %zu items expected",
				  n);
	}
	for (i = 0; i < n; i++) {
		const msgpack_object *it = &items->ptr[i];
		struct get_key *k = &ks[i];

		k->key = keys[i].data;
		k->klen = keys[i].len;
		k->state = ST_FAILED;
		lens[i] = 0;
		if (mc_cl_item_error(it, &k->err) < 0) {
			results[i] = k->err.code;
			continue;
		}
		if (parse_list(it, k, &k->err) < 0) {
			k->state = ST_FAILED;
			results[i] = k->err.code;
			continue;
		}
		lens[i] = k->size;
		if (k->size > caps[i]) {
			k->state = ST_FAILED;
			results[i] = MC_ERR_TOO_LARGE;
			continue;
		}
		mc_bulk_sink_mem(&k->sink, bufs[i], k->size);
		/* to be read: settled below */
		results[i] = MC_OK;
	}
	mc_msg_release(&m);
	rc = read_keys(t, ks, n, err);
	release_leases(t, ks, n);
	if (rc < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (results[i] == MC_OK && ks[i].state != ST_DONE)
			results[i] = ks[i].err.code ? ks[i].err.code : MC_ERR_INTERNAL;
	return 0;
}

int
mc_batch_get(struct mc_client *c, size_t n, const struct mc_key *keys, void *const *bufs,
	     const size_t *caps, size_t *lens, int *results, struct mc_err *err)
{
	struct conns *t = mc_cl_conns_of(c, err);
	struct get_key *ks;
	size_t i, done, m;
	bool any = false;
	int rc = 0;

	for (i = 0; i < n; i++) {
		results[i] = MC_ERR_INVALID;
		lens[i] = 0;
	}
	if (!t)
		return -1;
	if (!(ks = calloc(CHUNK_KEYS, sizeof(*ks))))
		return mc_err_errno(err, "cannot allocate a batch");
	for (done = 0; done < n; done += m) {
		m = n - done < CHUNK_KEYS ? n - done : CHUNK_KEYS;
		/* the master refuses the whole call for one bad key: weed them out */
		for (i = 0; i < m; i++)
			if (mc_cl_check_key(keys[done + i].data, keys[done + i].len, NULL) < 0)
				break;
		if (i < m) {
			m = i ? i : 1;
			if (i == 0)
				continue;
		}
		if (batch_get_chunk(t, m, keys + done, bufs + done, caps + done, lens + done,
				    results + done, ks, err) < 0) {
			for (i = done; i < n; i++)
				results[i] = err->code;
			rc = -1;
			break;
		}
		any = true;
	}
	free(ks);
	return rc < 0 && !any ? -1 : 0;
}
