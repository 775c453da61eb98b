/*
 * The snapshot_* methods: save (into --snapshot-dir or streamed),
 * restore from a bulk, status (see msnap.h; msnap_write.c writes,
 * msnap_load.c loads).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/snapshot.h"
#include "mc/wire.h"
#include "request.h"
#include "master.h"
#include "msnap.h"
#include "ops.h"
#include "state.h"
#include "msnap_load.h"
#include "msnap_write.h"
#include "reconcile.h"
#include "store.h"

/* A snapshot_restore whose bulk is arriving. */
struct restore_job {
	struct master *m;
	int fd;
	void *map;
	size_t len;
	bool force;
};

/* ---- methods ---- */

static void
h_snapshot_save(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct msnap *sn = m->snap;
	struct mc_err err;
	struct mc_req *d;
	bool stream = false, stream_only = false, need_dir;

	if (mc_map_bool(req->params, "stream", &stream, &err) < 0 ||
	    mc_map_bool(req->params, "stream_only", &stream_only, &err) < 0) {
		handler_fail(req, err.code, "%s", err.msg);
		return;
	}
	if (stream_only && !stream) {
		handler_fail(req, MC_ERR_INVALID, "stream_only: needs stream");
		return;
	}
	/* stream_only: the caller keeps the file; the directory gets none */
	need_dir = m->cfg.snapshot_dir != NULL && !stream_only;
	if (m->cfg.snapshot_dir == NULL && !stream) {
		handler_fail(req, MC_ERR_UNAVAILABLE,
			     "no --snapshot-dir on this master: stream the snapshot instead");
		return;
	}
	if (sn->nwait == sn->wcap) {
		size_t cap = sn->wcap ? 2 * sn->wcap : 4;
		struct snap_waiter *v = realloc(sn->waiters, cap * sizeof(*v));
		if (v == NULL) {
			handler_fail(req, MC_ERR_SYSTEM, "out of memory");
			return;
		}
		sn->waiters = v;
		sn->wcap = cap;
	}
	/* One at a time: a request meanwhile waits for the running one. */
	if (sn->pid == 0 && msnap_write_start(m, need_dir, &err) != 0) {
		mc_metric_inc(sn->m_failures);
		mc_warn("cannot start a snapshot: %s", err.msg);
		handler_fail(req, err.code, "cannot start a snapshot: %s", err.msg);
		return;
	}
	d = mc_req_defer(req);
	if (d == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	sn->waiters[sn->nwait].req = d;
	sn->waiters[sn->nwait].stream = stream;
	sn->waiters[sn->nwait].need_dir = need_dir;
	sn->nwait++;
}

static void
restore_job_free(struct restore_job *j)
{
	if (j->map != NULL && j->map != MAP_FAILED)
		munmap(j->map, j->len);
	if (j->fd >= 0)
		close(j->fd);
	free(j);
}

static void
restore_done(struct mc_req *req, bool ok, void *arg)
{
	struct restore_job *j = arg;
	struct master *m = j->m;
	struct restore_out out;
	struct mc_err err;

	m->snap->restoring = false;
	if (!ok) {
		restore_job_free(j);
		/* The connection is gone: this only frees the request. */
		mc_reply_err(req, MC_ERR_UNAVAILABLE, "connection lost");
		return;
	}
	munmap(j->map, j->len);
	j->map = NULL;
	if (!j->force && m->store->objects.count > 0) {
		restore_job_free(j);
		handler_fail(req, MC_ERR_EXISTS,
			     "the master holds %zu objects; use force to replace them",
			     m->store->objects.count);
		return;
	}
	if (lseek(j->fd, 0, SEEK_SET) != 0 || msnap_load_fd(m, j->fd, &out, &err) != 0) {
		if (err.code != MC_ERR_SYSTEM)
			err.code = MC_ERR_PROTO;
		mc_warn("snapshot_restore from %s failed: %s", mc_conn_peer_name(req->conn),
			err.msg);
		restore_job_free(j);
		handler_fail(req, err.code, "%s", err.msg);
		return;
	}
	restore_job_free(j);
	msnap_log_restored(m, "a snapshot sent by a client", &out);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 3);
	mc_pack_kv_u64(pk, "objects", out.objects);
	mc_pack_kv_u64(pk, "peers", out.peers);
	mc_pack_kv_u64(pk, "tenants", out.tenants);
	mc_reply_end(req);
}

static void
h_snapshot_restore(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct restore_job *j = NULL;
	struct mc_err err;
	struct mc_req *d;
	uint64_t len = 0;
	bool force = false;

	if (mc_map_u64(req->params, "len", &len, &err) != 1 ||
	    mc_map_bool(req->params, "force", &force, &err) < 0 || !req->has_bulk ||
	    req->bulk_len != len || len == 0) {
		handler_fail(req, MC_ERR_INVALID,
			     "snapshot_restore needs 'len' and that many bytes of a snapshot");
		return;
	}
	/*
	 * The bytes are held in memory until the last one is in. Refused
	 * here, before any arrive, they are read past and dropped: the
	 * connection stays usable.
	 */
	if (len > m->cfg.max_restore_bytes) {
		mc_metric_inc(m->snap->m_restore_too_large);
		handler_fail(req, MC_ERR_TOO_LARGE,
			     "snapshot of %llu bytes over --max-restore-bytes (%llu)",
			     (unsigned long long)len, (unsigned long long)m->cfg.max_restore_bytes);
		return;
	}
	if (m->snap->restoring) {
		handler_fail(req, MC_ERR_BUSY, "a restore is in progress");
		return;
	}
	if (!force && m->store->objects.count > 0) {
		handler_fail(req, MC_ERR_EXISTS,
			     "the master holds %zu objects; use force to replace them",
			     m->store->objects.count);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		goto oom;
	j->m = m;
	j->len = (size_t)len;
	j->force = force;
	/*
	 * The bytes land in an anonymous file: pages appear only as they
	 * arrive, and the reader then takes it as an ordinary fd.
	 */
	j->fd = memfd_create("mc-restore", MFD_CLOEXEC);
	if (j->fd < 0 || ftruncate(j->fd, (off_t)len) != 0)
		goto sys;
	j->map = mmap(NULL, j->len, PROT_READ | PROT_WRITE, MAP_SHARED, j->fd, 0);
	if (j->map == MAP_FAILED)
		goto sys;
	d = mc_req_defer(req);
	if (d == NULL)
		goto oom;
	if (mc_req_recv_bulk(d, j->map, restore_done, j) != 0) {
		restore_job_free(j);
		handler_fail(d, MC_ERR_INTERNAL, "cannot receive the snapshot");
		return;
	}
	m->snap->restoring = true;
	return;
sys:
	mc_err_errno(&err, "cannot make room for the snapshot");
	restore_job_free(j);
	handler_fail(req, MC_ERR_SYSTEM, "%s", err.msg);
	return;
oom:
	if (j != NULL)
		restore_job_free(j);
	handler_fail(req, MC_ERR_SYSTEM, "out of memory");
}

static void
h_snapshot_status(struct mc_req *req)
{
	struct master *m = req->ctx;
	const struct msnap *sn = m->snap;

	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 7);
	mc_pack_kv_str(pk, "dir", m->cfg.snapshot_dir);
	mc_pack_kv_u64(pk, "interval_ms", m->cfg.snapshot_interval);
	mc_pack_kv_u64(pk, "keep", (uint64_t)m->cfg.snapshot_keep);
	mc_pack_kv_bool(pk, "in_progress", sn->pid != 0);
	mc_pack_kv_bool(pk, "restoring", sn->restoring);
	mc_pack_key(pk, "last");
	if (sn->last.valid) {
		msgpack_pack_map(pk, 5);
		mc_pack_kv_str(pk, "path", sn->last.path);
		mc_pack_kv_u64(pk, "created", sn->last.created);
		mc_pack_kv_u64(pk, "objects", sn->last.objects);
		mc_pack_kv_u64(pk, "size", sn->last.size);
		mc_pack_kv_u64(pk, "millis", sn->last.millis);
	} else {
		msgpack_pack_nil(pk);
	}
	mc_pack_kv_u64(pk, "reconcile_deadline", m->recon->deadline);
	mc_reply_end(req);
}

const struct mc_method msnap_methods[] = {
	{ "snapshot_save", h_snapshot_save, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ "snapshot_restore", h_snapshot_restore, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ "snapshot_status", h_snapshot_status, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ NULL, NULL, 0 },
};

const struct master_module msnap_module = {
	.name = "snapshots",
	.init = msnap_init,
	.free = msnap_free,
	.sweep = msnap_poll,
	.methods = msnap_methods,
};
