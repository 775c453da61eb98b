/*
 * Writing snapshots from a forked child, loading them back, and the
 * snapshot_* methods.
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
#include "msnap.h"
#include "ops.h"
#include "state.h"

/* Table slots pre-sized from a file's header at most (it is not trusted). */
#define RESERVE_MAX (1u << 21)
/* Exit status of a child that wrote the file but could not prune. */
#define CHILD_PRUNE_FAILED 2

/* A stream reply's mapping of the finished file. */
struct mapping {
	void *p;
	size_t len;
};

/* The peers of a file being loaded: the id in the file, the id here. */
struct peer_map {
	uint32_t file_id;
	uint32_t id;
};

struct loader {
	struct master *m;
	struct store s;
	struct ghost *ghosts;
	uint32_t nghost, gcap;
	struct peer_map *map;
	uint32_t nmap, mcap;
	uint64_t next_version, next_replica, next_peer;
	uint64_t max_version, max_replica;
	/* the file's access counter, and the highest sequence of its objects */
	uint64_t access_seq, max_access_seq;
	uint32_t next_fresh; /* ids for snapshot peers whose own id is taken */
	uint64_t objects, skipped, tenants;
	uint64_t now;
	/* what the records hold, held against the header once all are read */
	uint64_t bytes;
	bool meta_seen;
	/* tenants a tenant record named, and the ids those records carried */
	uint64_t tenant_listed[TENANTS_MAX / 64];
	uint64_t tenant_ids[TENANTS_MAX / 64];
	/* every replica id of the file, sorted at the end to find one listed twice */
	uint32_t *rep_ids;
	size_t nrep_ids, rep_ids_cap;
};

struct restore_out {
	uint64_t objects, skipped, peers, tenants, millis;
	struct mc_snap_header h;
};

/* A snapshot_restore whose bulk is arriving. */
struct restore_job {
	struct master *m;
	int fd;
	void *map;
	size_t len;
	bool force;
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

static int
write_records(struct master *m, int fd, uint64_t created, struct mc_err *err)
{
	struct store *s = &m->store;
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
	h.peers = m->peers.n + m->recon.n;
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
	mc_pack_kv_u64(pk, "next_peer_id", m->peers.next_id);
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
	for (uint32_t i = 0; i < m->peers.n; i++) {
		const struct peer *p = m->peers.v[i];
		pack_peer(mc_snap_writer_record(w), p->id, p->addr, p->host, p->domain);
		if (mc_snap_writer_end_record(w, err) != 0)
			goto fail;
	}
	for (uint32_t i = 0; i < m->recon.n; i++) {
		const struct ghost *g = &m->recon.ghosts[i];
		pack_peer(mc_snap_writer_record(w), g->id, g->addr, g->host, g->domain);
		if (mc_snap_writer_end_record(w, err) != 0)
			goto fail;
	}
	while ((o = mc_htab_next(&s->objects, &cur)) != NULL) {
		pack_object(mc_snap_writer_record(w), s, o);
		if (mc_snap_writer_end_record(w, err) != 0)
			goto fail;
	}
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
	const struct msnap *sn = &m->snap;
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
static int
snap_start(struct master *m, bool in_dir, struct mc_err *err)
{
	struct msnap *sn = &m->snap;
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
	sn->objects = m->store.objects.count;
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
	if (m->snap.pid != 0 && !m->snap.in_dir) {
		/* a stream-only snapshot is running: the directory's comes after it */
		m->snap.dir_owed = true;
		return 0;
	}
	return snap_start(m, true, err);
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
	const struct msnap *sn = &m->snap;
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
	struct msnap *sn = &m->snap;
	struct mc_err err;
	size_t kept = 0;

	for (size_t i = 0; i < sn->nwait; i++)
		if (!served(sn, &sn->waiters[i]))
			sn->waiters[kept++] = sn->waiters[i];
	sn->nwait = kept;
	if (kept == 0 && !sn->dir_owed)
		return;
	if (snap_start(m, true, &err) == 0)
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
	struct msnap *sn = &m->snap;
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
	struct msnap *sn = &m->snap;

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
	struct msnap *sn = &m->snap;
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
	struct msnap *sn = &m->snap;
	struct mc_metrics *reg = m->mx.reg;

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
	struct msnap *sn = &m->snap;

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

/* ---- loading ---- */

static int
proto_err(struct mc_err *err, const char *what, const struct mc_err *why)
{
	return mc_err_set(err, MC_ERR_PROTO, "%s record: %s", what, why->msg);
}

/* An optional name field into (s, len); default when absent or nil. */
static int
rec_name(const msgpack_object *rec, const char *field, const char **s, size_t *len,
	 struct mc_err *err)
{
	const msgpack_object *o = mc_map_get(rec, field);

	if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (mc_map_str(rec, field, s, len, err) != 1)
		return -1;
	if (!store_name_ok(*s, *len))
		return mc_err_set(err, MC_ERR_PROTO, "bad %s name", field);
	return 1;
}

/* Set bit i of v; whether it was set already. */
static bool
bit_test_set(uint64_t *v, uint32_t i)
{
	uint64_t b = 1ull << (i % 64);
	bool was = (v[i / 64] & b) != 0;

	v[i / 64] |= b;
	return was;
}

/*
 * The counters the master goes on from. Each must be able to advance:
 * one at its maximum would wrap, and hand out again what it handed out
 * before.
 */
static int
load_meta(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mc_err why;

	if (L->meta_seen)
		return mc_err_set(err, MC_ERR_PROTO, "meta record listed twice");
	L->meta_seen = true;
	if (mc_map_u64(rec, "next_version", &L->next_version, &why) < 0 ||
	    mc_map_u64(rec, "next_replica_id", &L->next_replica, &why) < 0 ||
	    mc_map_u64(rec, "next_peer_id", &L->next_peer, &why) < 0 ||
	    mc_map_u64(rec, "access_seq", &L->access_seq, &why) < 0)
		return proto_err(err, "meta", &why);
	if (L->next_version == 0 || L->next_version > VERSION_MAX + 1)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_version %llu leaves no version to write",
				  (unsigned long long)L->next_version);
	if (L->next_replica > (uint64_t)UINT32_MAX + 1)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_replica_id %llu beyond the replica ids",
				  (unsigned long long)L->next_replica);
	if (L->next_peer > UINT32_MAX)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_peer_id %llu beyond the peer ids",
				  (unsigned long long)L->next_peer);
	if (L->access_seq == UINT64_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "meta record: access_seq at its maximum");
	return 0;
}

static int
load_tenant(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mc_err why;
	const char *name;
	size_t len;
	uint64_t quota = 0, file_id = 0;
	int64_t id;
	int has_id;

	if (rec_name(rec, "name", &name, &len, &why) != 1 ||
	    mc_map_u64(rec, "quota", &quota, &why) < 0 ||
	    (has_id = mc_map_u64(rec, "id", &file_id, &why)) < 0) {
		if (mc_map_get(rec, "name") == NULL)
			mc_err_set(&why, MC_ERR_PROTO, "missing name");
		return proto_err(err, "tenant", &why);
	}
	if (has_id == 1 && file_id >= TENANTS_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "tenant record: id %llu out of range",
				  (unsigned long long)file_id);
	if (has_id == 1 && bit_test_set(L->tenant_ids, (uint32_t)file_id))
		return mc_err_set(err, MC_ERR_PROTO, "tenant id %llu listed twice",
				  (unsigned long long)file_id);
	if ((id = store_tenant_intern(&L->s, name, len, &why)) < 0) {
		if (why.code != MC_ERR_TOO_LARGE)
			return mc_err_set(err, why.code, "%s", why.msg);
		return mc_err_set(err, MC_ERR_PROTO, "tenant record: %s: see --max-tenants",
				  why.msg);
	}
	if (bit_test_set(L->tenant_listed, (uint32_t)id))
		return mc_err_set(err, MC_ERR_PROTO, "tenant '%.*s' listed twice", (int)len, name);
	L->s.tenants[id].quota = quota;
	L->tenants++;
	return 0;
}

static bool
id_taken(const struct loader *L, uint32_t id)
{
	if (peers_find(&L->m->peers, id) != NULL)
		return true;
	for (uint32_t i = 0; i < L->nmap; i++)
		if (L->map[i].id == id)
			return true;
	return false;
}

static int
load_peer(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mc_err why;
	struct ghost g;
	const struct peer *live;
	uint64_t id = 0;

	memset(&g, 0, sizeof(g));
	if (mc_map_u64(rec, "id", &id, &why) != 1 || id == 0 || id > UINT32_MAX ||
	    mc_map_strcpy(rec, "addr", g.addr, sizeof(g.addr), &why) != 1 ||
	    mc_map_strcpy(rec, "host", g.host, sizeof(g.host), &why) < 0 ||
	    mc_map_strcpy(rec, "domain", g.domain, sizeof(g.domain), &why) < 0) {
		mc_err_set(&why, MC_ERR_PROTO, "needs an id and an addr");
		return proto_err(err, "peer", &why);
	}
	/* live peers and the ghosts of a churn: the table is scanned per replica */
	if (L->nmap >= 2 * PEERS_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "more than %u peer records", 2 * PEERS_MAX);
	for (uint32_t i = 0; i < L->nmap; i++)
		if (L->map[i].file_id == id)
			return mc_err_set(err, MC_ERR_PROTO, "peer %llu listed twice",
					  (unsigned long long)id);
	if (L->nmap == L->mcap) {
		uint32_t cap = L->mcap ? 2 * L->mcap : 16;
		struct peer_map *v = realloc(L->map, cap * sizeof(*v));
		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		L->map = v;
		L->mcap = cap;
	}
	struct peer_map *pm = &L->map[L->nmap];
	pm->file_id = (uint32_t)id;
	live = peers_find_addr(&L->m->peers, g.addr);
	if (live != NULL) {
		/* Restoring into a running master: that peer is here already. */
		pm->id = live->id;
		L->nmap++;
		return 0;
	}
	pm->id = (uint32_t)id;
	if (id_taken(L, pm->id)) {
		while (id_taken(L, L->next_fresh) || L->next_fresh == 0)
			L->next_fresh++;
		pm->id = L->next_fresh++;
	}
	L->nmap++;
	if (L->nghost == L->gcap) {
		uint32_t cap = L->gcap ? 2 * L->gcap : 16;
		struct ghost *v = realloc(L->ghosts, cap * sizeof(*v));
		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		L->ghosts = v;
		L->gcap = cap;
	}
	g.id = pm->id;
	L->ghosts[L->nghost++] = g;
	return 0;
}

static const struct peer_map *
map_peer(const struct loader *L, uint64_t file_id)
{
	for (uint32_t i = 0; i < L->nmap; i++)
		if (L->map[i].file_id == file_id)
			return &L->map[i];
	return NULL;
}

/* Remember a replica id, for the check that none is listed twice. */
static int
note_rep_id(struct loader *L, uint32_t id, struct mc_err *err)
{
	if (L->nrep_ids == L->rep_ids_cap) {
		size_t cap = L->rep_ids_cap ? 2 * L->rep_ids_cap : 1024;
		uint32_t *v = realloc(L->rep_ids, cap * sizeof(*v));

		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		L->rep_ids = v;
		L->rep_ids_cap = cap;
	}
	L->rep_ids[L->nrep_ids++] = id;
	return 0;
}

/*
 * The replicas of an object record worth keeping: COMPLETE copies of
 * the object's version. PROCESSING ones belong to writers that are gone.
 * Every entry, kept or not, must name a peer the file listed, a tier,
 * and an id and a version the counters could have handed out.
 */
static int
load_replicas(struct loader *L, const msgpack_object *rec, uint64_t version, struct mrep *out,
	      unsigned *n, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(rec, "replicas");
	struct mc_err why;

	*n = 0;
	if (a == NULL)
		return 0;
	if (a->size > 2 * MC_REPLICAS_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "object record: %u replicas", a->size);
	for (uint32_t j = 0; j < a->size; j++) {
		const msgpack_object *e = &a->ptr[j];
		uint64_t id = 0, peer = 0, rv = 0;
		const char *tier = mc_tier_name(MC_TIER_DRAM), *state = "complete";
		size_t tlen = strlen(tier), slen = 8;
		bool dynamic = false;
		const struct peer_map *pm;
		int t;

		if (e->type != MSGPACK_OBJECT_MAP || mc_map_u64(e, "id", &id, &why) != 1 ||
		    mc_map_u64(e, "peer", &peer, &why) != 1 ||
		    mc_map_u64(e, "version", &rv, &why) < 0 ||
		    mc_map_str(e, "tier", &tier, &tlen, &why) < 0 ||
		    mc_map_str(e, "state", &state, &slen, &why) < 0 ||
		    mc_map_bool(e, "dynamic", &dynamic, &why) < 0)
			return mc_err_set(err, MC_ERR_PROTO, "object record: bad replica %u", j);
		if ((t = mc_tier_parse(tier, tlen, NULL)) < 0)
			return mc_err_set(err, MC_ERR_PROTO, "object record: unknown tier '%.*s'",
					  (int)(tlen > 16 ? 16 : tlen), tier);
		if (id == 0 || id > UINT32_MAX)
			return mc_err_set(err, MC_ERR_PROTO,
					  "object record: replica id %llu out of range",
					  (unsigned long long)id);
		if ((pm = map_peer(L, peer)) == NULL)
			return mc_err_set(err, MC_ERR_PROTO,
					  "object record: replica on peer %llu, which the file "
					  "does not list",
					  (unsigned long long)peer);
		if (mc_map_get(e, "version") == NULL)
			rv = version;
		if (rv == 0 || rv > VERSION_MAX)
			return mc_err_set(err, MC_ERR_PROTO,
					  "object record: replica version %llu out of range",
					  (unsigned long long)rv);
		if (rv > L->max_version)
			L->max_version = rv;
		if (note_rep_id(L, (uint32_t)id, err) != 0)
			return -1;
		if (slen != 8 || memcmp(state, "complete", 8) != 0 || rv != version)
			continue;
		memset(&out[*n], 0, sizeof(out[*n]));
		out[*n].id = (uint32_t)id;
		out[*n].peer = pm->id;
		out[*n].tier = (uint8_t)t;
		out[*n].state = REP_COMPLETE;
		out[*n].version = rv;
		out[*n].dynamic = dynamic;
		if (out[*n].id > L->max_replica)
			L->max_replica = out[*n].id;
		(*n)++;
	}
	return 0;
}

static int
load_object(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mrep reps[2 * MC_REPLICAS_MAX];
	struct mc_err why;
	const char *tname, *key, *type = MC_DEFAULT_TYPE, *group = NULL, *sp = "disabled";
	size_t tlen, klen, ylen = strlen(MC_DEFAULT_TYPE), glen = 0, splen = 8;
	uint64_t size = 0, version = 0, checksum = 0, created = 0, last_access = 0, count = 0;
	uint64_t lease = 0, sp_deadline = 0, sp_ttl = 0, until;
	/* absent in files written before the master numbered accesses */
	uint64_t access_seq = 0, created_seq = 0;
	/* absent before prefix chains and LRFU values */
	uint64_t parent = 0, depth = 0, children = 0;
	double crf = 0, worth = -1;
	bool hard_pin = false, probation = false;
	struct state_obj f;
	unsigned nrep;
	int64_t tenant, tid;
	struct mobj *o;

	if (rec_name(rec, "tenant", &tname, &tlen, &why) != 1 ||
	    mc_map_str(rec, "key", &key, &klen, &why) != 1 || klen == 0 ||
	    mc_map_u64(rec, "size", &size, &why) != 1 ||
	    mc_map_u64(rec, "version", &version, &why) != 1) {
		mc_err_set(&why, MC_ERR_PROTO, "needs tenant, key, size and version");
		return proto_err(err, "object", &why);
	}
	if (klen > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "object record: key of %zu bytes over %d",
				  klen, MC_KEY_MAX);
	if (mc_map_u64(rec, "checksum", &checksum, &why) < 0 ||
	    rec_name(rec, "type", &type, &ylen, &why) < 0 ||
	    rec_name(rec, "group", &group, &glen, &why) < 0 ||
	    mc_map_bool(rec, "hard_pin", &hard_pin, &why) < 0 ||
	    mc_map_u64(rec, "created", &created, &why) < 0 ||
	    mc_map_u64(rec, "last_access", &last_access, &why) < 0 ||
	    mc_map_u64(rec, "access_seq", &access_seq, &why) < 0 ||
	    mc_map_u64(rec, "created_seq", &created_seq, &why) < 0 ||
	    mc_map_u64(rec, "access_count", &count, &why) < 0 ||
	    mc_map_u64(rec, "lease_deadline", &lease, &why) < 0 ||
	    mc_map_str(rec, "sp_mode", &sp, &splen, &why) < 0 ||
	    mc_map_u64(rec, "sp_deadline", &sp_deadline, &why) < 0 ||
	    mc_map_u64(rec, "sp_ttl", &sp_ttl, &why) < 0 ||
	    mc_map_u64(rec, "parent", &parent, &why) < 0 ||
	    mc_map_u64(rec, "depth", &depth, &why) < 0 ||
	    mc_map_u64(rec, "children", &children, &why) < 0 ||
	    mc_map_double(rec, "crf", &crf, &why) < 0 ||
	    mc_map_double(rec, "worth", &worth, &why) < 0 ||
	    mc_map_bool(rec, "probation", &probation, &why) < 0)
		return proto_err(err, "object", &why);
	if (worth < 0)
		worth = crf; /* a file from before worths: the value itself */
	if (!(crf >= 0 && crf < 1e30) || !(worth >= 0 && worth < 1e30)) {
		mc_err_set(&why, MC_ERR_PROTO, "crf or worth out of range");
		return proto_err(err, "object", &why);
	}
	/* the limits a put meets on the wire */
	if (version == 0 || version > VERSION_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "object record: version %llu out of range",
				  (unsigned long long)version);
	if (size > MC_CONN_MAX_BULK)
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: size %llu over the largest object (%llu)",
				  (unsigned long long)size, (unsigned long long)MC_CONN_MAX_BULK);
	if (access_seq == UINT64_MAX || created_seq == UINT64_MAX)
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: access sequence at its maximum");
	/* Tenant records come first: an object of any other tenant is made up. */
	tenant = store_tenant_find(&L->s, tname, tlen);
	if (tenant < 0 || !(L->tenant_listed[tenant / 64] & (1ull << (tenant % 64))))
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: tenant '%.*s' has no tenant record", (int)tlen,
				  tname);
	if (load_replicas(L, rec, version, reps, &nrep, err) != 0)
		return -1;
	if (version > L->max_version)
		L->max_version = version;
	if (access_seq > L->max_access_seq)
		L->max_access_seq = access_seq;
	if (created_seq > L->max_access_seq)
		L->max_access_seq = created_seq;
	if (size > UINT64_MAX - L->bytes)
		return mc_err_set(err, MC_ERR_PROTO, "object records: sizes add up past 2^64");
	L->bytes += size;
	/* Never completed, or every copy was on its way: nothing to read. */
	if (nrep == 0) {
		L->skipped++;
		return 0;
	}
	/*
	 * The default type is every tenant's: objects adopted from peers
	 * take it without counting it, so a file may hold it past the cap.
	 */
	if (ylen == strlen(MC_DEFAULT_TYPE) && memcmp(type, MC_DEFAULT_TYPE, ylen) == 0)
		tid = store_type_intern(&L->s, type, ylen, &why);
	else
		tid = store_tenant_type(&L->s, (uint32_t)tenant, type, ylen, &why);
	if (tid < 0) {
		if (why.code != MC_ERR_TOO_LARGE)
			return mc_err_set(err, why.code, "%s", why.msg);
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: %s: see --max-types-per-tenant", why.msg);
	}
	uint64_t h = store_key_hash((uint32_t)tenant, key, klen);
	if (store_find(&L->s, h, (uint32_t)tenant, key, klen) != NULL)
		return mc_err_set(err, MC_ERR_PROTO, "object record: key listed twice");
	memset(&f, 0, sizeof(f));
	f.version = version;
	f.size = size;
	f.checksum = checksum;
	f.type = (uint32_t)tid;
	f.hard_pin = hard_pin;
	/*
	 * Deadlines past what this master could grant from now are cut to
	 * that, so a file cannot hold an object up for ever. Cut, not
	 * refused: a clock or an option that moved since is no reason to
	 * lose the file.
	 */
	until = mc_add_sat(L->now, L->m->cfg.lease_ttl);
	f.lease_deadline = lease < until ? lease : until;
	/*
	 * Only a pin still running survives: an expired one is ordinary
	 * cache now, and a pending one waited for a write that is gone.
	 */
	if (splen == 6 && memcmp(sp, "active", 6) == 0 && sp_deadline > L->now) {
		until = mc_add_sat(L->now, L->m->cfg.max_soft_pin_ttl);
		f.sp_mode = SP_ACTIVE;
		f.sp_deadline = sp_deadline < until ? sp_deadline : until;
		f.sp_ttl =
			sp_ttl < L->m->cfg.max_soft_pin_ttl ? sp_ttl : L->m->cfg.max_soft_pin_ttl;
	}
	o = state_load_object(&L->s, h, (uint32_t)tenant, key, klen, group, glen, &f, err);
	if (o == NULL)
		return -1;
	o->created = created;
	o->last_access = last_access;
	o->access_seq = access_seq;
	o->created_seq = created_seq;
	o->access_count = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
	o->parent = parent;
	o->depth = depth > UINT8_MAX ? UINT8_MAX : (uint8_t)depth;
	o->children = children > UINT16_MAX ? UINT16_MAX : (uint16_t)children;
	o->crf = (float)crf;
	o->worth = (float)worth;
	o->probation = probation;
	for (unsigned i = 0; i < nrep; i++)
		if (state_load_replica(o, &reps[i]) != 0)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	L->objects++;
	return 0;
}

static int
load_record(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	const msgpack_object *t = mc_map_get(rec, "t");

	if (t == NULL || t->type != MSGPACK_OBJECT_STR)
		return mc_err_set(err, MC_ERR_PROTO, "record without a kind ('t')");
	if (mc_obj_streq(t, "object"))
		return load_object(L, rec, err);
	if (mc_obj_streq(t, "tenant"))
		return load_tenant(L, rec, err);
	if (mc_obj_streq(t, "peer"))
		return load_peer(L, rec, err);
	if (mc_obj_streq(t, "meta"))
		return load_meta(L, rec, err);
	return 0; /* a kind from a newer writer */
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* What can be judged only once every record is in. */
static int
loader_finish(struct loader *L, const struct mc_snap_header *h, struct mc_err *err)
{
	const struct {
		const char *what;
		uint64_t said, held;
	} counts[] = {
		{ "objects", h->objects, L->objects + L->skipped },
		{ "peers", h->peers, L->nmap },
		{ "tenants", h->tenants, L->tenants },
		{ "bytes", h->bytes, L->bytes },
	};

	if (!L->meta_seen)
		return mc_err_set(err, MC_ERR_PROTO, "no meta record");
	if (L->next_version <= L->max_version)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_version %llu is not above version %llu, "
				  "which the file holds",
				  (unsigned long long)L->next_version,
				  (unsigned long long)L->max_version);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (counts[i].said != counts[i].held)
			return mc_err_set(err, MC_ERR_PROTO,
					  "header says %llu %s, the records hold %llu",
					  (unsigned long long)counts[i].said, counts[i].what,
					  (unsigned long long)counts[i].held);
	if (L->nrep_ids > 1)
		qsort(L->rep_ids, L->nrep_ids, sizeof(*L->rep_ids), cmp_u32);
	for (size_t i = 1; i < L->nrep_ids; i++)
		if (L->rep_ids[i] == L->rep_ids[i - 1])
			return mc_err_set(err, MC_ERR_PROTO, "replica id %u listed twice",
					  L->rep_ids[i]);
	return 0;
}

/* Peer usage follows the replicas placed on them; recount after a swap. */
static void
recount_usage(struct master *m)
{
	size_t cur = 0;
	struct mobj *o;

	if (m->peers.n == 0)
		return;
	for (uint32_t i = 0; i < m->peers.n; i++)
		for (int t = 0; t < MC_TIER_COUNT; t++)
			m->peers.v[i]->tiers[t].used = m->peers.v[i]->tiers[t].moving = 0;
	while ((o = mc_htab_next(&m->store.objects, &cur)) != NULL) {
		const struct mrep *v = obj_creps(o);
		for (unsigned i = 0; i < o->nrep; i++)
			ops_rep_charge(m, o, &v[i]);
	}
}

/* Swap the loaded store in; the loader's store and ghosts move to m. */
static void
install(struct master *m, struct loader *L)
{
	uint64_t vseq = L->next_version > 0 ? L->next_version - 1 : 0;
	uint64_t rseq = L->next_replica > 0 ? L->next_replica - 1 : 0;
	uint64_t next_peer = L->next_peer;
	uint64_t aseq = L->access_seq;

	if (vseq < L->max_version)
		vseq = L->max_version;
	if (vseq < m->store.version_seq)
		vseq = m->store.version_seq;
	if (rseq < L->max_replica)
		rseq = L->max_replica;
	if (rseq < m->store.replica_seq)
		rseq = m->store.replica_seq;
	/*
	 * Accesses are numbered after every restored one (a file whose
	 * counter lags its objects is repaired), and never below what this
	 * master already handed out.
	 */
	if (aseq < L->max_access_seq)
		aseq = L->max_access_seq;
	if (aseq < m->store.access_seq)
		aseq = m->store.access_seq;
	/* Tasks name tenants by id in the old store: send them first. */
	peers_flush(&m->peers);
	peers_retire_tasks(&m->peers);
	/* Leases point at objects of the store about to go; readers fall back on their TTL. */
	leases_clear(&m->leases);
	/* the caps are the running master's options, not the snapshot's */
	L->s.max_tenants = m->store.max_tenants;
	L->s.max_types_per_tenant = m->store.max_types_per_tenant;
	store_free(&m->store);
	m->store = L->s;
	ops_hook_store(m);
	/* those who follow the state hear the old store go and the new one come */
	state_restored(m);
	/* the loader placed copies without the index: build its lists in access order */
	if (recency_rebuild(&m->store.rank, &m->store.objects) != 0)
		mc_warn("restore: out of memory building the recency index; some copies are "
			"never offered as eviction candidates");
	m->store.version_seq = vseq;
	m->store.replica_seq = rseq > UINT32_MAX ? UINT32_MAX : (uint32_t)rseq;
	m->store.access_seq = aseq;
	/* New registrations must never reuse the id of a snapshot peer. */
	for (uint32_t i = 0; i < L->nghost; i++)
		if (L->ghosts[i].id >= next_peer)
			next_peer = (uint64_t)L->ghosts[i].id + 1;
	if (next_peer > m->peers.next_id && next_peer <= UINT32_MAX)
		m->peers.next_id = (uint32_t)next_peer;
	recount_usage(m);
	/*
	 * The index named objects of the store just freed: derive it anew
	 * from the pins that survived (expired ones were already dropped).
	 */
	softpin_rebuild(m);
	recon_install(m, L->ghosts, L->nghost);
	L->ghosts = NULL;
	L->nghost = 0;
	free(L->map);
	L->map = NULL;
}

/*
 * Load the snapshot on fd into m, all or nothing. On failure m is
 * untouched and err says what was wrong with the file.
 */
static int
load_fd(struct master *m, int fd, struct restore_out *out, struct mc_err *err)
{
	struct loader L;
	struct mc_snap_reader *r = NULL;
	const msgpack_object *rec;
	uint64_t t0 = mc_mono_ns();
	int rc;

	memset(&L, 0, sizeof(L));
	memset(out, 0, sizeof(*out));
	L.m = m;
	L.now = mc_now_ms();
	L.next_fresh = m->peers.next_id;
	if (store_init(&L.s, err) != 0)
		return -1;
	/* a file holds no more tenants and types than puts could have made */
	L.s.max_tenants = m->store.max_tenants;
	L.s.max_types_per_tenant = m->store.max_types_per_tenant;
	/* Connections hold tenant ids: keep each one naming the same tenant. */
	for (uint32_t i = 0; i < m->store.ntenants; i++) {
		const char *name = m->store.tenants[i].name;
		if (store_tenant_intern(&L.s, name, strlen(name), err) < 0)
			goto fail;
	}
	r = mc_snap_reader_open(fd, &out->h, err);
	if (r == NULL)
		goto fail;
	if (mc_htab_reserve(&L.s.objects,
			    out->h.objects < RESERVE_MAX ? out->h.objects : RESERVE_MAX) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		goto fail;
	}
	while ((rc = mc_snap_reader_next(r, &rec, err)) == 1)
		if (load_record(&L, rec, err) != 0)
			goto fail;
	if (rc < 0 || loader_finish(&L, &out->h, err) != 0)
		goto fail;
	mc_snap_reader_close(r);
	free(L.rep_ids);
	out->objects = L.objects;
	out->skipped = L.skipped;
	out->peers = L.nmap;
	out->tenants = L.s.ntenants;
	install(m, &L);
	out->millis = (mc_mono_ns() - t0) / 1000000;
	return 0;
fail:
	if (r != NULL)
		mc_snap_reader_close(r);
	store_free(&L.s);
	free(L.ghosts);
	free(L.map);
	free(L.rep_ids);
	/*
	 * Nothing of the rejected file may linger in the index before the
	 * next candidate: re-derive it from the store we kept (empty at
	 * start-up, so this is a clear).
	 */
	softpin_rebuild(m);
	return -1;
}

static int
load_path(struct master *m, const char *path, struct restore_out *out, struct mc_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return mc_err_errno(err, "cannot open");
	rc = load_fd(m, fd, out, err);
	close(fd);
	return rc;
}

static void
log_restored(const struct master *m, const char *what, const struct restore_out *out)
{
	mc_info("restored %s: %llu objects, %llu peers, %llu tenants in %llu ms "
		"(%llu objects without a complete replica skipped)",
		what, (unsigned long long)out->objects, (unsigned long long)out->peers,
		(unsigned long long)out->tenants, (unsigned long long)out->millis,
		(unsigned long long)out->skipped);
	if (m->recon.n > 0)
		mc_info("waiting %llu ms for %u snapshot peers to confirm their replicas",
			(unsigned long long)m->cfg.reconcile_timeout, m->recon.n);
}

int
msnap_restore_startup(struct master *m)
{
	const char *want = m->cfg.restore;
	struct restore_out out;
	struct mc_err err;
	char **paths;
	size_t n;

	if (want == NULL)
		return 0;
	if (strcmp(want, "latest") != 0) {
		if (load_path(m, want, &out, &err) != 0) {
			mc_complain("cannot restore '%s': %s", want, err.msg);
			/* a file that cannot even be opened is bad input all the same */
			return MC_EXIT_DATAERR;
		}
		log_restored(m, want, &out);
		return 0;
	}
	if (mc_snap_list(m->cfg.snapshot_dir, &paths, &n, &err) != 0) {
		mc_warn("cannot list snapshots in %s: %s; starting empty", m->cfg.snapshot_dir,
			err.msg);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (load_path(m, paths[i], &out, &err) == 0) {
			log_restored(m, paths[i], &out);
			mc_snap_list_free(paths, n);
			return 0;
		}
		mc_warn("cannot restore %s: %s%s", paths[i], err.msg,
			i + 1 < n ? "; trying an older snapshot" : "");
	}
	if (n == 0)
		mc_info("no snapshot in %s; starting empty", m->cfg.snapshot_dir);
	else
		mc_warn("no snapshot in %s could be restored; starting empty", m->cfg.snapshot_dir);
	mc_snap_list_free(paths, n);
	return 0;
}

/* ---- methods ---- */

static void
h_snapshot_save(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct msnap *sn = &m->snap;
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
	if (sn->pid == 0 && snap_start(m, need_dir, &err) != 0) {
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

	m->snap.restoring = false;
	if (!ok) {
		restore_job_free(j);
		/* The connection is gone: this only frees the request. */
		mc_reply_err(req, MC_ERR_UNAVAILABLE, "connection lost");
		return;
	}
	munmap(j->map, j->len);
	j->map = NULL;
	if (!j->force && m->store.objects.count > 0) {
		restore_job_free(j);
		handler_fail(req, MC_ERR_EXISTS,
			     "the master holds %zu objects; use force to replace them",
			     m->store.objects.count);
		return;
	}
	if (lseek(j->fd, 0, SEEK_SET) != 0 || load_fd(m, j->fd, &out, &err) != 0) {
		if (err.code != MC_ERR_SYSTEM)
			err.code = MC_ERR_PROTO;
		mc_warn("snapshot_restore from %s failed: %s", mc_conn_peer_name(req->conn),
			err.msg);
		restore_job_free(j);
		handler_fail(req, err.code, "%s", err.msg);
		return;
	}
	restore_job_free(j);
	log_restored(m, "a snapshot sent by a client", &out);
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
		mc_metric_inc(m->snap.m_restore_too_large);
		handler_fail(req, MC_ERR_TOO_LARGE,
			     "snapshot of %llu bytes over --max-restore-bytes (%llu)",
			     (unsigned long long)len, (unsigned long long)m->cfg.max_restore_bytes);
		return;
	}
	if (m->snap.restoring) {
		handler_fail(req, MC_ERR_BUSY, "a restore is in progress");
		return;
	}
	if (!force && m->store.objects.count > 0) {
		handler_fail(req, MC_ERR_EXISTS,
			     "the master holds %zu objects; use force to replace them",
			     m->store.objects.count);
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
	m->snap.restoring = true;
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
	const struct msnap *sn = &m->snap;

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
	mc_pack_kv_u64(pk, "reconcile_deadline", m->recon.deadline);
	mc_reply_end(req);
}

const struct mc_method msnap_methods[] = {
	{ "snapshot_save", h_snapshot_save, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ "snapshot_restore", h_snapshot_restore, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ "snapshot_status", h_snapshot_status, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ NULL, NULL, 0 },
};
