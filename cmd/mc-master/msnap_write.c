/*
 * Writing snapshots: the forked child that writes the file, the parent
 * reaping it and answering its waiters, the periodic timer, and the
 * module's life cycle (see msnap.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/snapshot.h"
#include "mc/wire.h"
#include "request.h"
#include "master.h"
#include "ops.h"
#include "state.h"
#include "msnap_write.h"
#include "peers.h"
#include "reconcile.h"
#include "store.h"
#include "mmetrics.h"

/* Exit status of a child that wrote the file but could not prune. */
#define CHILD_PRUNE_FAILED 2

/* A stream reply's mapping of the finished file. */
struct mapping {
	void *p;
	size_t len;
};

static const char *
sp_mode_name(int mode)
{
	switch (mode) {
	case SP_PENDING:
		return "pending";
	case SP_ACTIVE:
		return "active";
	default:
		return "disabled";
	}
}

/* ---- writing (runs in the child) ---- */

static void
pack_peer(msgpack_packer *pk, uint32_t id, const char *addr, const char *host, const char *domain)
{
	msgpack_pack_map(pk, 5);
	mc_pack_kv_str(pk, "t", "peer");
	mc_pack_kv_u64(pk, "id", id);
	mc_pack_kv_str(pk, "addr", addr);
	mc_pack_kv_str(pk, "host", host);
	mc_pack_kv_str(pk, "domain", domain);
}

static void
pack_object(msgpack_packer *pk, struct store *s, const struct mobj *o)
{
	const struct group *g = store_group_get(s, o->group);
	const struct mrep *v = obj_creps(o);

	msgpack_pack_map(pk, 25);
	mc_pack_kv_str(pk, "t", "object");
	mc_pack_kv_str(pk, "tenant", s->tenants[o->tenant].name);
	mc_pack_key(pk, "key");
	msgpack_pack_bin(pk, o->key_len);
	msgpack_pack_bin_body(pk, o->key, o->key_len);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "checksum", o->checksum);
	mc_pack_kv_str(pk, "type", store_type_name(s, o->type));
	mc_pack_key(pk, "group");
	if (g != NULL)
		mc_pack_strn(pk, g->name, g->name_len);
	else
		msgpack_pack_nil(pk);
	mc_pack_kv_bool(pk, "hard_pin", o->hard_pin);
	mc_pack_kv_u64(pk, "created", o->created);
	mc_pack_kv_u64(pk, "last_access", o->last_access);
	mc_pack_kv_u64(pk, "access_seq", o->access_seq);
	mc_pack_kv_u64(pk, "created_seq", o->created_seq);
	mc_pack_kv_u64(pk, "access_count", o->access_count);
	mc_pack_kv_u64(pk, "lease_deadline", o->lease_deadline);
	mc_pack_kv_str(pk, "sp_mode", sp_mode_name(o->sp_mode));
	mc_pack_kv_u64(pk, "sp_deadline", o->sp_deadline);
	mc_pack_kv_u64(pk, "sp_ttl", o->sp_ttl);
	mc_pack_kv_u64(pk, "parent", o->parent);
	mc_pack_kv_u64(pk, "depth", o->depth);
	mc_pack_kv_u64(pk, "children", o->children);
	mc_pack_kv_double(pk, "crf", o->crf);
	mc_pack_kv_double(pk, "worth", o->worth);
	mc_pack_kv_bool(pk, "probation", o->probation);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, o->nrep);
	for (unsigned i = 0; i < o->nrep; i++) {
		msgpack_pack_map(pk, 6);
		mc_pack_kv_u64(pk, "id", v[i].id);
		mc_pack_kv_u64(pk, "peer", v[i].peer);
		mc_pack_kv_str(pk, "tier", mc_tier_name(v[i].tier));
		mc_pack_kv_str(pk, "state", v[i].state == REP_COMPLETE ? "complete" : "processing");
		mc_pack_kv_u64(pk, "version", v[i].version);
		mc_pack_kv_bool(pk, "dynamic", v[i].dynamic);
	}
}

/* The recreate cooldowns running: {t: cooldown, hash, until}, after the objects. */
struct cooldown_writer {
	struct mc_snap_writer *w;
	struct mc_err *err;
	int rc;
};

static void
write_cooldown(uint64_t hash, uint64_t until, void *arg)
{
	struct cooldown_writer *cw = arg;
	msgpack_packer *pk;

	if (cw->rc != 0)
		return;
	pk = mc_snap_writer_record(cw->w);
	msgpack_pack_map(pk, 3);
	mc_pack_kv_str(pk, "t", "cooldown");
	mc_pack_kv_u64(pk, "hash", hash);
	mc_pack_kv_u64(pk, "until", until);
	cw->rc = mc_snap_writer_end_record(cw->w, cw->err);
}

static int
write_cooldowns(struct master *m, struct mc_snap_writer *w, struct mc_err *err)
{
	const struct cooldowns *c = state_cooldowns(m);
	struct cooldown_writer cw = { w, err, 0 };

	if (c != NULL)
		cooldowns_each(c, mc_now_ms(), write_cooldown, &cw);
	return cw.rc;
}

static int
write_records(struct master *m, int fd, uint64_t created, struct mc_err *err)
{
	struct store *s = m->store;
	struct mc_snap_header h;
	struct mc_snap_writer *w;
	msgpack_packer *pk;
	size_t cur = 0;
	struct mobj *o;

	if (mc_fault("snapshot.write"))
		return mc_err_set(err, MC_ERR_SYSTEM, "fault injected: snapshot write");
	memset(&h, 0, sizeof(h));
	snprintf(h.format, sizeof(h.format), "%s", MC_SNAP_FORMAT);
	h.version = MC_SNAP_VERSION;
	snprintf(h.master_id, sizeof(h.master_id), "%s", m->master_id);
	h.created = created;
	h.objects = s->objects.count;
	h.peers = m->peers->n + m->recon->n;
	h.tenants = s->ntenants;
	h.bytes = s->bytes;
	w = mc_snap_writer_open(fd, &h, 0, err);
	if (w == NULL)
		return -1;
	pk = mc_snap_writer_record(w);
	msgpack_pack_map(pk, 5);
	mc_pack_kv_str(pk, "t", "meta");
	mc_pack_kv_u64(pk, "next_version", s->version_seq + 1);
	mc_pack_kv_u64(pk, "next_replica_id", (uint64_t)s->replica_seq + 1);
	mc_pack_kv_u64(pk, "next_peer_id", m->peers->next_id);
	mc_pack_kv_u64(pk, "access_seq", s->access_seq);
	if (mc_snap_writer_end_record(w, err) != 0)
		goto fail;
	for (uint32_t i = 0; i < s->ntenants; i++) {
		pk = mc_snap_writer_record(w);
		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "t", "tenant");
		mc_pack_kv_u64(pk, "id", i);
		mc_pack_kv_str(pk, "name", s->tenants[i].name);
		mc_pack_kv_u64(pk, "quota", s->tenants[i].quota);
		if (mc_snap_writer_end_record(w, err) != 0)
			goto fail;
	}
	/* Peers come before objects, so a reader knows every replica's peer. */
	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];
		pack_peer(mc_snap_writer_record(w), p->id, p->addr, p->host, p->domain);
		if (mc_snap_writer_end_record(w, err) != 0)
			goto fail;
	}
	for (uint32_t i = 0; i < m->recon->n; i++) {
		const struct ghost *g = &m->recon->ghosts[i];
		pack_peer(mc_snap_writer_record(w), g->id, g->addr, g->host, g->domain);
		if (mc_snap_writer_end_record(w, err) != 0)
			goto fail;
	}
	while ((o = mc_htab_next(&s->objects, &cur)) != NULL) {
		pack_object(mc_snap_writer_record(w), s, o);
		if (mc_snap_writer_end_record(w, err) != 0)
			goto fail;
	}
	if (write_cooldowns(m, w, err) != 0)
		goto fail;
	return mc_snap_writer_finish(w, err);
fail:
	mc_snap_writer_abort(w);
	return -1;
}

/*
 * Close the child's copies of everything but the two descriptors it
 * writes: a listening socket held by a child would keep the port busy
 * after the master stops, and a client socket would not see its close.
 */
static void
keep_only(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 3)
		close_range(3, (unsigned)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
	close_range((unsigned)hi + 1, ~0u, 0);
}

/*
 * The child: a frozen copy of the parent's memory. It must not run the
 * event loop or touch connections; it writes the file and leaves with
 * _exit so nothing of the parent's (stdio, atexit) runs twice.
 */
static void child_main(struct master *m, int fd, int errw) __attribute__((noreturn));

static void
child_main(struct master *m, int fd, int errw)
{
	const struct msnap *sn = m->snap;
	struct mc_err err;
	int status = 0;

	/*
	 * libevent's signal handlers write to the parent's loop: a SIGTERM
	 * meant for this child must not stop the master.
	 */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	keep_only(fd, errw);
	if (write_records(m, fd, sn->created, &err) != 0) {
		close(fd);
		if (sn->in_dir)
			unlink(sn->tmp);
		status = 1;
	} else if (!sn->in_dir) {
		if (close(fd) != 0) {
			mc_err_errno(&err, "cannot close '%s'", sn->tmp);
			status = 1;
		}
	} else if (mc_snap_commit(fd, sn->tmp, sn->path, &err) != 0) {
		status = 1;
	} else {
		size_t removed;
		if (mc_snap_prune(m->cfg.snapshot_dir, (size_t)m->cfg.snapshot_keep, &removed,
				  &err) != 0 ||
		    mc_snap_clean_tmp(m->cfg.snapshot_dir, &removed, &err) != 0)
			status = CHILD_PRUNE_FAILED;
	}
	if (status != 0) {
		ssize_t n = write(errw, err.msg, strnlen(err.msg, sizeof(err.msg)));
		(void)n;
	}
	_exit(status);
}

/*
 * Start the child: into --snapshot-dir when in_dir (and there is one),
 * else into a nameless temporary that only a stream reply reads.
 */
int
msnap_write_start(struct master *m, bool in_dir, struct mc_err *err)
{
	struct msnap *sn = m->snap;
	int fd = -1, pfd[2] = { -1, -1 };
	uint64_t created = mc_now_ms();
	pid_t pid;

	if (sn->pid != 0)
		return 0;
	if (created <= sn->last_created)
		created = sn->last_created + 1;
	sn->in_dir = in_dir && m->cfg.snapshot_dir != NULL;
	sn->dir_owed = false;
	if (sn->in_dir) {
		fd = mc_snap_create_tmp(m->cfg.snapshot_dir, sn->tmp, sizeof(sn->tmp), err);
		if (fd < 0)
			return -1;
		mc_snap_path(m->cfg.snapshot_dir, created, sn->path, sizeof(sn->path));
	} else {
		const char *t = getenv("TMPDIR");
		snprintf(sn->tmp, sizeof(sn->tmp), "%s/mc-snapshot-XXXXXX",
			 t != NULL && t[0] != '\0' ? t : "/tmp");
		fd = mkostemp(sn->tmp, O_CLOEXEC);
		if (fd < 0)
			return mc_err_errno(err, "cannot create '%s'", sn->tmp);
		/*
		 * Nameless from the start: the child writes through fd, this
		 * process maps the result through its own copy, and a master
		 * killed in between leaves nothing behind in TMPDIR.
		 */
		unlink(sn->tmp);
		snprintf(sn->path, sizeof(sn->path), "%s", sn->tmp);
	}
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		mc_err_errno(err, "cannot create a pipe");
		goto fail;
	}
	sn->created = created;
	sn->objects = m->store->objects.count;
	sn->started_ns = mc_mono_ns();
	pid = fork();
	if (pid < 0) {
		mc_err_errno(err, "cannot fork the snapshot writer");
		goto fail;
	}
	if (pid == 0) {
		close(pfd[0]);
		child_main(m, fd, pfd[1]);
	}
	if (sn->in_dir)
		close(fd);
	else
		sn->stream_fd = fd;
	close(pfd[1]);
	if (fcntl(pfd[0], F_SETFL, O_NONBLOCK) != 0)
		mc_warn("snapshot: cannot make the error pipe non-blocking");
	sn->pid = pid;
	sn->err_fd = pfd[0];
	sn->last_created = created;
	mc_debug("snapshot child %d writing %s", (int)pid, sn->path);
	return 0;
fail:
	if (pfd[0] >= 0) {
		close(pfd[0]);
		close(pfd[1]);
	}
	close(fd);
	if (sn->in_dir)
		unlink(sn->tmp);
	return -1;
}

int
msnap_start(struct master *m, struct mc_err *err)
{
	if (m->cfg.snapshot_dir == NULL)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "no --snapshot-dir");
	if (m->snap->pid != 0 && !m->snap->in_dir) {
		/* a stream-only snapshot is running: the directory's comes after it */
		m->snap->dir_owed = true;
		return 0;
	}
	return msnap_write_start(m, true, err);
}

static void
unmap_release(void *arg)
{
	struct mapping *mp = arg;

	munmap(mp->p, mp->len);
	free(mp);
}

static void
reply_saved(struct master *m, struct snap_waiter *w, int fd, uint64_t size)
{
	const struct msnap *sn = m->snap;
	struct mapping *mp = NULL;
	msgpack_packer *pk;

	if (w->stream) {
		mp = malloc(sizeof(*mp));
		if (mp == NULL || fd < 0 || size == 0) {
			free(mp);
			handler_fail(w->req, MC_ERR_SYSTEM, "cannot read back the snapshot '%s'",
				     sn->path);
			return;
		}
		mp->len = (size_t)size;
		mp->p = mmap(NULL, mp->len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (mp->p == MAP_FAILED) {
			char why[128];
			mc_lower_reason(why, sizeof(why), strerror(errno));
			free(mp);
			handler_fail(w->req, MC_ERR_SYSTEM, "cannot map '%s': %s", sn->path, why);
			return;
		}
	}
	pk = mc_reply_ok_begin(w->req);
	msgpack_pack_map(pk, 4 + (mp != NULL));
	mc_pack_kv_str(pk, "path", sn->path);
	mc_pack_kv_u64(pk, "created", sn->created);
	mc_pack_kv_u64(pk, "objects", sn->objects);
	mc_pack_kv_u64(pk, "size", size);
	if (mp == NULL) {
		mc_reply_end(w->req);
		return;
	}
	mc_pack_kv_u64(pk, "len", size);
	mc_reply_end_bulk(w->req, mp->p, mp->len, unmap_release, mp);
}

/* Whether the snapshot just written answers w. */
static bool
served(const struct msnap *sn, const struct snap_waiter *w)
{
	return sn->in_dir || !w->need_dir;
}

/*
 * After a snapshot ended and answered its waiters: drop them, keep those
 * it could not serve, and start the snapshot into the directory they (or
 * the interval) asked for meanwhile.
 */
static void
start_owed(struct master *m)
{
	struct msnap *sn = m->snap;
	struct mc_err err;
	size_t kept = 0;

	for (size_t i = 0; i < sn->nwait; i++)
		if (!served(sn, &sn->waiters[i]))
			sn->waiters[kept++] = sn->waiters[i];
	sn->nwait = kept;
	if (kept == 0 && !sn->dir_owed)
		return;
	if (msnap_write_start(m, true, &err) == 0)
		return;
	mc_metric_inc(sn->m_failures);
	mc_warn("cannot start a snapshot: %s", err.msg);
	for (size_t i = 0; i < sn->nwait; i++)
		handler_fail(sn->waiters[i].req, err.code, "cannot start a snapshot: %s", err.msg);
	sn->nwait = 0;
}

static void
finish_ok(struct master *m, uint64_t millis)
{
	struct msnap *sn = m->snap;
	struct stat st;
	uint64_t size = 0;
	int fd = -1;
	bool stream = false;

	for (size_t i = 0; i < sn->nwait; i++)
		stream |= sn->waiters[i].stream && served(sn, &sn->waiters[i]);
	if (!sn->in_dir) {
		fd = sn->stream_fd;
		sn->stream_fd = -1;
	} else if (stream) {
		fd = open(sn->path, O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0 ? fstat(fd, &st) == 0 : stat(sn->path, &st) == 0)
		size = (uint64_t)st.st_size;
	sn->last.valid = true;
	snprintf(sn->last.path, sizeof(sn->last.path), "%s", sn->path);
	sn->last.created = sn->created;
	sn->last.objects = sn->objects;
	sn->last.size = size;
	sn->last.millis = millis;
	mc_metric_set(sn->m_last_success, (double)sn->created / 1000.0);
	mc_metric_set(sn->m_duration, (double)millis / 1000.0);
	mc_metric_set(sn->m_objects, (double)sn->objects);
	mc_info("snapshot %s: %llu objects in %llu ms", sn->path, (unsigned long long)sn->objects,
		(unsigned long long)millis);
	for (size_t i = 0; i < sn->nwait; i++)
		if (served(sn, &sn->waiters[i]))
			reply_saved(m, &sn->waiters[i], fd, size);
	/* A streamed temporary lives on in the mappings only. */
	if (fd >= 0)
		close(fd);
	start_owed(m);
}

static void
finish_fail(struct master *m, const char *why)
{
	struct msnap *sn = m->snap;

	mc_metric_inc(sn->m_failures);
	mc_warn("snapshot %s failed: %s", sn->path, why);
	if (sn->in_dir)
		unlink(sn->tmp);
	if (sn->stream_fd >= 0)
		close(sn->stream_fd);
	sn->stream_fd = -1;
	for (size_t i = 0; i < sn->nwait; i++)
		if (served(sn, &sn->waiters[i]))
			handler_fail(sn->waiters[i].req, MC_ERR_SYSTEM, "snapshot failed: %s", why);
	start_owed(m);
}

void
msnap_poll(struct master *m)
{
	struct msnap *sn = m->snap;
	char why[MC_ERR_MSG_MAX];
	ssize_t n;
	int st = 0;
	pid_t r;

	if (sn->pid == 0)
		return;
	r = waitpid(sn->pid, &st, WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return;
	n = read(sn->err_fd, why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = '\0';
	close(sn->err_fd);
	sn->err_fd = -1;
	sn->pid = 0;
	uint64_t millis = (mc_mono_ns() - sn->started_ns) / 1000000;
	if (r < 0) {
		finish_fail(m, "the writer vanished");
	} else if (WIFSIGNALED(st)) {
		snprintf(why, sizeof(why), "the writer was killed by signal %d", WTERMSIG(st));
		finish_fail(m, why);
	} else if (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == CHILD_PRUNE_FAILED) {
		if (WEXITSTATUS(st) == CHILD_PRUNE_FAILED)
			mc_warn("snapshot %s: cannot prune old snapshots: %s", sn->path, why);
		finish_ok(m, millis);
	} else {
		if (why[0] == '\0')
			snprintf(why, sizeof(why), "the writer exited with status %d",
				 WEXITSTATUS(st));
		finish_fail(m, why);
	}
}

static void
interval_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	struct mc_err err;

	(void)fd;
	(void)what;
	/* a snapshot into the directory that is running already will do */
	if (msnap_start(m, &err) != 0)
		mc_warn("cannot start a periodic snapshot: %s", err.msg);
}

/* The created time in a snapshot file's name, or 0. */
static uint64_t
name_created(const char *path)
{
	const char *b = strrchr(path, '/');
	unsigned long long v = 0;

	b = b != NULL ? b + 1 : path;
	if (sscanf(b, "mc-snapshot-%llu", &v) != 1)
		return 0;
	return v;
}

static void
sigchld_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	msnap_poll(arg);
}

int
msnap_init(struct master *m, struct mc_err *err)
{
	struct msnap *sn = m->snap;
	struct mc_metrics *reg = m->mx->reg;

	sn->err_fd = -1;
	sn->stream_fd = -1;
	sn->m_last_success = mc_metric_get(reg, "mc_snapshot_last_success_timestamp", MC_GAUGE,
					   "When the last good snapshot was taken (seconds "
					   "since the epoch).",
					   NULL, NULL);
	sn->m_duration = mc_metric_get(reg, "mc_snapshot_duration_seconds", MC_GAUGE,
				       "Time the last good snapshot took to write.", NULL, NULL);
	sn->m_failures = mc_metric_get(reg, "mc_snapshot_failures_total", MC_COUNTER,
				       "Snapshots that failed.", NULL, NULL);
	sn->m_objects = mc_metric_get(reg, "mc_snapshot_objects", MC_GAUGE,
				      "Objects in the last good snapshot.", NULL, NULL);
	sn->m_restore_too_large = mc_metric_get(
		reg, "mc_snapshot_restore_too_large_total", MC_COUNTER,
		"Restores refused for a snapshot over --max-restore-bytes.", NULL, NULL);
	if (sn->m_last_success == NULL || sn->m_duration == NULL || sn->m_failures == NULL ||
	    sn->m_objects == NULL || sn->m_restore_too_large == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory for snapshot metrics");
	if (m->cfg.snapshot_dir != NULL) {
		char **paths;
		size_t n;
		/* One level, like the directory a unit file names; no parents. */
		if (mkdir(m->cfg.snapshot_dir, 0755) != 0 && errno != EEXIST) {
			char why[128];
			mc_warn("cannot create %s: %s; snapshots will fail", m->cfg.snapshot_dir,
				mc_lower_reason(why, sizeof(why), strerror(errno)));
		}
		/* New names must sort after the files already there. */
		if (mc_snap_list(m->cfg.snapshot_dir, &paths, &n, err) != 0)
			return -1;
		if (n > 0)
			sn->last_created = name_created(paths[0]);
		mc_snap_list_free(paths, n);
		/*
		 * A writer killed with the master that forked it leaves its
		 * temporary behind; no child of this master is writing yet.
		 */
		if (mc_snap_clean_tmp(m->cfg.snapshot_dir, &n, err) != 0)
			mc_warn("%s", err->msg);
		else if (n > 0)
			mc_info("removed %zu unfinished snapshot files from %s", n,
				m->cfg.snapshot_dir);
	}
	sn->sigchld_ev = evsignal_new(m->base, SIGCHLD, sigchld_cb, m);
	if (sn->sigchld_ev == NULL || event_add(sn->sigchld_ev, NULL) != 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot watch for SIGCHLD");
	if (m->cfg.snapshot_interval > 0) {
		struct timeval tv = mc_ms_timeval(m->cfg.snapshot_interval);
		sn->interval_ev = event_new(m->base, -1, EV_PERSIST, interval_cb, m);
		if (sn->interval_ev == NULL || event_add(sn->interval_ev, &tv) != 0)
			return mc_err_set(err, MC_ERR_SYSTEM, "cannot set the snapshot timer");
	}
	return 0;
}

void
msnap_free(struct master *m)
{
	struct msnap *sn = m->snap;

	if (sn->pid != 0) {
		/*
		 * A child writing into the directory finishes on its own;
		 * nobody will read a streamed temporary any more.
		 */
		if (!sn->in_dir) {
			kill(sn->pid, SIGKILL);
			waitpid(sn->pid, NULL, 0);
		}
		close(sn->err_fd);
	}
	if (sn->stream_fd >= 0)
		close(sn->stream_fd);
	for (size_t i = 0; i < sn->nwait; i++)
		mc_reply_err(sn->waiters[i].req, MC_ERR_UNAVAILABLE, "the master is stopping");
	free(sn->waiters);
	if (sn->interval_ev != NULL)
		event_free(sn->interval_ev);
	if (sn->sigchld_ev != NULL)
		event_free(sn->sigchld_ev);
	memset(sn, 0, sizeof(*sn));
	sn->err_fd = -1;
	sn->stream_fd = -1;
}
