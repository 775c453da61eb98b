/*
 * Unit tests for the peer's SSD medium (cmd/mc-peer/medium_ssd.c)
 * through the medium interface, over small files in a temporary
 * directory: opening (a file, a directory, refusals), space counted with
 * headers and never above capacity, bytes in and out (buffered, direct
 * and the tmpfs fallback), sinks and sources, sealing and recovery with
 * every field, torn and corrupt extents dropped and counted, released
 * copies never coming back, and the fault points; the superblock and its
 * key (a file without one, or with a damaged one, started afresh), and
 * what recovery makes of what lies in free space: garbage, headers not
 * signed with the file's key or signed with absurd fields, extents of
 * another file, a stale older version (the pool keeps the newer) and a
 * copy dropped while a reader held it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mc/checksum.h"
#include "mc/fault.h"
#include "mc/proto.h"
#include "mc/transport.h"

#include "medium.h"
#include "medium_ssd.h"
#include "pages.h"
#include "pool.h"
#include "tap.h"

#define SIZE (4u << 20)

static char dir[64] = "/tmp/test_peer_ssd.XXXXXX";
static char file[128];
static uint64_t hdr; /* an extent's header, in bytes */

/* A step the checks depend on failed: stop, as TAP says. */
static void __attribute__((format(printf, 1, 2), noreturn)) bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static struct medium *
open_ssd(const char *path, uint64_t size, bool direct, struct mc_err *err)
{
	return medium_open(MC_TIER_SSD,
			   &(struct medium_conf){ .size = size, .path = path, .direct = direct },
			   err);
}

/* Nothing to recover: keep whatever is offered (none in a new file). */
static int
keep(void *arg, uint64_t off, const struct medium_meta *meta)
{
	(void)arg;
	(void)off;
	(void)meta;
	return 0;
}

static struct medium *
fresh(const char *path, bool direct)
{
	struct mc_err err;
	struct medium *m;

	unlink(path);
	m = open_ssd(path, SIZE, direct, &err);
	if (!m || medium_recover(m, keep, NULL, &err) < 0)
		bail("cannot open a fresh ssd medium at %s: %s", path, err.msg);
	return m;
}

/* How many of this process's descriptors on path are open with O_DIRECT. */
static int
direct_fds(const char *path)
{
	char link[64], target[256], line[128];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		ssize_t len;
		FILE *f;
		unsigned flags = 0;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if ((len = readlink(link, target, sizeof(target) - 1)) < 0)
			continue;
		target[len] = '\0';
		if (strcmp(target, path) != 0)
			continue;
		snprintf(link, sizeof(link), "/proc/self/fdinfo/%d", fd);
		if (!(f = fopen(link, "r")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "flags: %o", &flags) == 1 && (flags & O_DIRECT))
				n++;
		fclose(f);
	}
	return n;
}

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + seed + (i >> 12));
}

static void
test_open(void)
{
	struct mc_err err;
	struct medium *m, *again;
	char path[192];
	struct stat st;
	struct statvfs fs;
	uint64_t huge;

	m = open_ssd(dir, SIZE + 5, false, &err);
	snprintf(path, sizeof(path), "%s/extents", dir);
	TAP_OK(m != NULL && m->tier == MC_TIER_SSD && m->ops == medium_types[MC_TIER_SSD],
	       "open: the ssd tier's medium, from the table");
	TAP_OK(m && stat(path, &st) == 0 && st.st_size == SIZE + SSD_SB_BYTES &&
		       st.st_blocks * 512 >= SIZE + SSD_SB_BYTES,
	       "open: a directory holds the extents file, fallocated to the size and a superblock");
	TAP_OK(m && strcmp(medium_dir(m), dir) == 0, "dir: the directory given");
	TAP_OK(m && medium_capacity(m) == SIZE && medium_used(m) == 0,
	       "capacity: the size in whole pages, nothing used");
	again = open_ssd(dir, SIZE, false, &err);
	TAP_OK(again == NULL && err.code == MC_ERR_BUSY,
	       "open: a file another medium holds is refused (%s)", err.msg);
	medium_close(m);
	unlink(path);
	m = open_ssd(file, SIZE, false, &err);
	TAP_OK(m != NULL && strcmp(medium_dir(m), dir) == 0,
	       "open: a file path is the extents file, its directory the medium's");
	medium_close(m);
	unlink(file);

	snprintf(path, sizeof(path), "%s/missing/extents", dir);
	TAP_OK(open_ssd(path, SIZE, false, &err) == NULL && err.code == MC_ERR_SYSTEM &&
		       strstr(err.msg, path) != NULL,
	       "open: a missing directory fails, naming the file (%s)", err.msg);
	snprintf(path, sizeof(path), "%s/huge", dir);
	/* a gibibyte more than is free: refused before any of it is taken */
	TAP_OK(statvfs(dir, &fs) == 0, "open: the test's file system is measured");
	huge = ((uint64_t)fs.f_bavail * fs.f_frsize + (1ull << 30)) & ~(uint64_t)(SIZE - 1);
	TAP_OK(open_ssd(path, huge, false, &err) == NULL && err.code == MC_ERR_SYSTEM &&
		       strstr(err.msg, "cannot allocate") != NULL &&
		       strstr(err.msg, "bytes free") != NULL && access(path, F_OK) != 0,
	       "open: a size the file system cannot hold fails before reserving any, and leaves "
	       "no file (%s)",
	       err.msg);
	TAP_OK(open_ssd(NULL, SIZE, false, &err) == NULL && err.code == MC_ERR_INVALID,
	       "open: no path is refused (%s)", err.msg);
	TAP_OK(open_ssd(file, 100, false, &err) == NULL && err.code == MC_ERR_INVALID,
	       "open: less than a page is refused");
	unlink(file);
}

static void
test_space(void)
{
	struct mc_err err;
	struct medium *m = fresh(file, false);
	uint64_t offs[1024], one = 0, off;
	size_t n = 0;
	bool within = true, aligned = true;

	TAP_OK(medium_alloc(m, 0, &off, &err) == -1 && err.code == MC_ERR_INVALID,
	       "alloc: an empty extent is refused");
	TAP_OK(medium_alloc(m, UINT64_MAX - 10, &off, &err) == -1 && err.code == MC_ERR_NO_SPACE &&
		       medium_used(m) == 0,
	       "alloc: nearly 2^64 bytes with its header is no space, not a wrapped extent");
	TAP_OK(medium_alloc(m, 1, &offs[n++], &err) == 0 &&
		       (one = medium_used(m)) == SSD_HDR_BYTES + SSD_UNIT,
	       "alloc: one byte uses a unit of data and its header's room (%llu bytes)",
	       (unsigned long long)one);
	medium_release(m, offs[0], 1);
	TAP_OK(medium_used(m) == 0, "release: header and data come back");
	n = 0;
	while (n < 1024 && medium_alloc(m, 3 * PAGES_SIZE + 1, &offs[n], &err) == 0) {
		within = within && medium_used(m) <= medium_capacity(m);
		aligned = aligned && offs[n] % SSD_UNIT == 0;
		n++;
	}
	TAP_OK(n > 0 && n < 1024 && err.code == MC_ERR_NO_SPACE,
	       "alloc: a full medium is no_space after %zu extents", n);
	TAP_OK(within && aligned && medium_used(m) == n * (hdr + (3 * PAGES_SIZE + SSD_UNIT)) &&
		       medium_used(m) == n * medium_footprint(m, 3 * PAGES_SIZE + 1),
	       "used: headers and data units, the footprint, never above capacity (%llu of %llu)",
	       (unsigned long long)medium_used(m), (unsigned long long)medium_capacity(m));
	TAP_OK(medium_alloc(m, SIZE - hdr + 1, &off, &err) == -1 && err.code == MC_ERR_NO_SPACE,
	       "alloc: what cannot fit with its header is no_space");
	for (size_t i = 0; i < n; i++)
		medium_release(m, offs[i], 3 * PAGES_SIZE + 1);
	TAP_OK(medium_used(m) == 0 && medium_alloc(m, SIZE - hdr, &off, &err) == 0,
	       "release: everything, and the whole medium less a header fits again");
	medium_close(m);
	unlink(file);
}

/*
 * Write, read back, both through the medium's own calls; with O_DIRECT
 * in use when direct is 1, not when 0, either way when -1 (a file system
 * that may or may not take it).
 */
static void
test_bytes(const char *path, int direct, const char *what)
{
	struct mc_err err;
	struct medium *m = fresh(path, direct != 0);
	size_t len = 5 * PAGES_SIZE + 17;
	unsigned char *want = malloc(len), *got = malloc(len + 1), *al = NULL;
	struct medium_io io;
	uint64_t off;

	fill(want, len, 3);
	if (direct >= 0)
		TAP_OK((direct_fds(path) > 0) == (direct == 1), "%s: O_DIRECT %s", what,
		       direct ? "in use" : "not used");
	medium_alloc(m, len, &off, &err);
	TAP_OK(medium_write(m, off, want, len, &err) == 0 &&
		       medium_read(m, off, len, got, &err) == got && memcmp(got, want, len) == 0,
	       "%s: write and read back %zu bytes", what, len);
	/* an unaligned buffer and an unaligned stretch inside the copy */
	memset(got, 0, len + 1);
	TAP_OK(medium_read(m, off, len, got + 1, &err) == got + 1 &&
		       memcmp(got + 1, want, len) == 0,
	       "%s: read into an unaligned buffer", what);
	TAP_OK(medium_write(m, off + 100, want + 7, 9000, &err) == 0 &&
		       medium_read(m, off + 100, 9000, got, &err) == got &&
		       memcmp(got, want + 7, 9000) == 0 && medium_read(m, off, 100, got, &err) &&
		       memcmp(got, want, 100) == 0,
	       "%s: an unaligned write lands where it is meant to, nothing around it moves", what);
	medium_write(m, off, want, len, &err);
	if (posix_memalign((void **)&al, PAGES_SIZE, len) == 0) {
		memcpy(al, want, len);
		memset(got, 0, len);
		TAP_OK(medium_write(m, off, al, len, &err) == 0 &&
			       medium_read(m, off, len, al, &err) == al &&
			       memcmp(al, want, len) == 0,
		       "%s: from and into page-aligned memory", what);
		free(al);
	}
	TAP_OK(medium_read(m, off, len, NULL, &err) == NULL && err.code == MC_ERR_UNAVAILABLE,
	       "%s: a file cannot lend its bytes (%s)", what, err.msg);
	memset(got, 0, len);
	TAP_OK(medium_read(m, off, 100, got, &err) == got && memcmp(got, want, 100) == 0,
	       "%s: a read of the first bytes only", what);
	medium_io(m, &io);
	TAP_OK(io.writes >= 3 && io.write_bytes >= 2 * len && io.reads >= 4 &&
		       io.read_bytes >= 2 * len && io.corrupt == 0,
	       "%s: reads and writes are counted (%llu, %llu)", what, (unsigned long long)io.reads,
	       (unsigned long long)io.writes);
	medium_release(m, off, len);
	medium_close(m);
	unlink(path);
	free(want);
	free(got);
}

/* A file system that refuses O_DIRECT: one line, then the page cache. */
static void
test_fallback(void)
{
	char log[192], line[512];
	int saved = dup(2), fd, lines = 0;
	struct medium *m;
	FILE *f;

	snprintf(log, sizeof(log), "%s/log", dir);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	setenv("MC_FAULT", "ssd.direct:always", 1);
	mc_fault_reset();
	fflush(stderr);
	dup2(fd, 2);
	m = fresh(file, true);
	fflush(stderr);
	dup2(saved, 2);
	close(fd);
	close(saved);
	if ((f = fopen(log, "r"))) {
		while (fgets(line, sizeof(line), f))
			lines += strstr(line, "no direct I/O") != NULL;
		fclose(f);
	}
	TAP_OK(lines == 1 && direct_fds(file) == 0,
	       "fallback: a refused O_DIRECT is said once, and not used (%d lines)", lines);
	medium_close(m);
	test_bytes(file, 0, "fallback");
	unsetenv("MC_FAULT");
	mc_fault_reset();
	unlink(log);
	unlink(file);
}

static void
test_sink_source(void)
{
	struct mc_err err;
	struct medium *m = fresh(file, false);
	size_t len = MC_BULK_CHUNK + 3 * PAGES_SIZE + 5, at = 0, n;
	unsigned char *want = malloc(len), *got = malloc(len), *w;
	struct mc_bulk_sink sink;
	struct mc_bulk_src src;
	struct mc_tconn tc;
	uint64_t off;
	ssize_t r;
	int sv[2];
	bool ok = true;

	fill(want, len, 11);
	medium_alloc(m, len, &off, &err);
	TAP_OK(medium_sink(m, off, len, &sink, &err) == 0 && sink.kind == MC_BULK_FD &&
		       sink.len == len && sink.off == off,
	       "sink: a range of the extents file");
	/* as a connection does: receive into each window, commit it */
	while (at < len && ok) {
		ok = (w = mc_bulk_sink_window(&sink, at, &n)) != NULL;
		if (ok) {
			memcpy(w, want + at, n);
			ok = mc_bulk_sink_commit(&sink, at, n) == 0;
			at += n;
		}
	}
	mc_bulk_sink_release(&sink);
	TAP_OK(ok && medium_read(m, off, len, got, &err) == got && memcmp(got, want, len) == 0,
	       "sink: what it committed is the stored copy");
	TAP_OK(medium_source(m, off, len, &src, &err) == 0 && src.kind == MC_BULK_FD &&
		       src.len == len && src.off == off,
	       "source: a range of the extents file, for sendfile");
	memset(got, 0, len);
	ok = socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0;
	/* as a connection does: through its transport */
	mc_tconn_wrap(&tc, NULL, ok ? sv[0] : -1);
	for (at = 0; ok && at < len; at += (size_t)r) {
		ok = (r = tc.t->write(&tc, &src, 1, at, 32768)) > 0 &&
		     read(sv[1], got + at, (size_t)r) == r;
	}
	TAP_OK(ok && memcmp(got, want, len) == 0, "source: sent as it is stored");
	tc.t->close(&tc);
	if (ok)
		close(sv[1]);
	medium_release(m, off, len);
	medium_close(m);
	unlink(file);
	free(want);
	free(got);
}

/* ---- recovery ---- */

struct found {
	int n;
	int drop; /* 1-based index of the copy to hand back, 0: none */
	uint64_t off[8];
	struct medium_meta meta[8];
	char names[8][4][MC_KEY_MAX];
	/* meta's receipt points into the header, gone after the call */
	bool has_receipt[8];
	unsigned char receipt[8][MC_RECEIPT_BYTES];
};

static int
collect(void *arg, uint64_t off, const struct medium_meta *meta)
{
	struct found *f = arg;
	const char *src[4] = { meta->tenant, meta->key, meta->type, meta->group };
	uint16_t lens[4] = { meta->tenant_len, meta->key_len, meta->type_len, meta->group_len };

	if (f->n >= 8)
		return -1;
	f->off[f->n] = off;
	f->meta[f->n] = *meta;
	for (int i = 0; i < 4; i++)
		memcpy(f->names[f->n][i], src[i], lens[i]);
	f->has_receipt[f->n] = meta->receipt != NULL;
	if (meta->receipt != NULL)
		memcpy(f->receipt[f->n], meta->receipt, MC_RECEIPT_BYTES);
	f->meta[f->n].receipt = NULL;
	f->n++;
	return f->n == f->drop ? -1 : 0;
}

/* Reopen the file at size and recover it into f (reading direct where the system lets it). */
static struct medium *
reopen_at(struct found *f, int drop, uint64_t size)
{
	struct mc_err err;
	struct medium *m = open_ssd(file, size, true, &err);

	memset(f, 0, sizeof(*f));
	f->drop = drop;
	if (!m || medium_recover(m, collect, f, &err) < 0)
		bail("cannot recover %s: %s", file, m ? err.msg : "no medium");
	return m;
}

static struct medium *
reopen(struct found *f, int drop)
{
	return reopen_at(f, drop, SIZE);
}

/* Write len bytes of seed as a sealed copy named key; its offset. */
static uint64_t
put(struct medium *m, const char *key, size_t len, unsigned seed)
{
	struct mc_err err;
	unsigned char *b = malloc(len);
	uint64_t off = 0;

	fill(b, len, seed);
	if (medium_alloc(m, len, &off, &err) < 0 || medium_write(m, off, b, len, &err) < 0 ||
	    medium_seal(m, off, len,
			&(struct medium_meta){ .tenant = "t",
					       .tenant_len = 1,
					       .key = key,
					       .key_len = (uint16_t)strlen(key),
					       .version = seed,
					       .size = len,
					       .checksum = mc_checksum(b, len) },
			&err) < 0)
		bail("cannot put %s: %s", key, err.msg);
	free(b);
	return off;
}

static void
flip(uint64_t at)
{
	int fd = open(file, O_RDWR);
	unsigned char b = 0;

	if (fd < 0 || pread(fd, &b, 1, (off_t)at) != 1)
		bail("cannot read %s", file);
	b ^= 0x40;
	if (pwrite(fd, &b, 1, (off_t)at) != 1)
		bail("cannot write %s", file);
	close(fd);
}

/* Copy len bytes of the file from one offset to another, behind the medium's back. */
static void
copy_bytes(uint64_t from, uint64_t to, size_t len)
{
	int fd = open(file, O_RDWR);
	char *b = malloc(len);

	if (fd < 0 || !b || pread(fd, b, len, (off_t)from) != (ssize_t)len ||
	    pwrite(fd, b, len, (off_t)to) != (ssize_t)len)
		bail("cannot copy bytes of %s", file);
	free(b);
	close(fd);
}

static void
test_recover_edges(void)
{
	struct mc_err err;
	static struct found f;
	struct medium *m = fresh(file, false);
	struct medium_io io;
	uint64_t big, a, z, fill_off;
	static char key[MC_KEY_MAX + 1];

	/* a copy checked in several reads, its last chunk damaged */
	big = put(m, "big", 3u << 20, 9);
	medium_close(m);
	flip(big + (3u << 20) - 2);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 0 && io.corrupt == 1 && medium_used(m) == 0,
	       "recover: a byte flipped in the last megabyte of a large copy is caught");
	medium_close(m);

	/* a whole extent copied elsewhere names another place: not a copy */
	m = fresh(file, false);
	a = put(m, "a", 100, 1);
	medium_close(m);
	copy_bytes(a - hdr, (2u << 20) - hdr, hdr + SSD_UNIT);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 1 && f.off[0] == a && io.corrupt == 1,
	       "recover: an extent copied to another offset is refused, the original kept");

	/* a copy past a smaller size is gone, the ones inside stay */
	medium_alloc(m, 5u << 19, &fill_off, &err);
	z = put(m, "z", 100, 2);
	medium_release(m, fill_off, 5u << 19);
	medium_close(m);
	m = reopen_at(&f, 0, 2u << 20);
	TAP_OK(z > (2u << 20) && f.n == 1 && f.off[0] == a && medium_capacity(m) == (2u << 20),
	       "recover: at a smaller size, the copies inside it are kept");
	medium_close(m);
	m = reopen(&f, 0);
	TAP_OK(f.n == 1 && f.off[0] == a, "recover: and the ones past it are gone for good");

	memset(key, 'k', sizeof(key));
	TAP_OK(medium_seal(
		       m, a, 100,
		       &(struct medium_meta){ .key = key, .key_len = MC_KEY_MAX + 1, .size = 100 },
		       &err) == -1 &&
		       err.code == MC_ERR_INVALID,
	       "seal: a key longer than MC_KEY_MAX is refused");
	medium_close(m);
	unlink(file);
}

static void
test_seal_recover(void)
{
	struct mc_err err;
	struct medium *m = fresh(file, false);
	static struct found f;
	static char key[MC_KEY_MAX], tenant[MC_NAME_MAX], type[MC_NAME_MAX];
	size_t len = 2 * PAGES_SIZE + 33;
	unsigned char *b = malloc(len), *got = malloc(len);
	struct medium_meta meta;
	uint64_t off, used, o2;
	bool apart = true;
	int n = 0;
	unsigned char receipt[MC_RECEIPT_BYTES];

	for (size_t i = 0; i < sizeof(receipt); i++)
		receipt[i] = (unsigned char)(0xa0 + i);
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (char)(i * 7); /* NUL bytes too */
	memset(tenant, 'a', sizeof(tenant));
	memset(type, 'k', sizeof(type));
	fill(b, len, 5);
	meta = (struct medium_meta){ .tenant = tenant,
				     .tenant_len = MC_NAME_MAX,
				     .key = key,
				     .key_len = MC_KEY_MAX,
				     .type = type,
				     .type_len = MC_NAME_MAX,
				     .group = "g1",
				     .group_len = 2,
				     .version = 42,
				     .size = len,
				     .checksum = mc_checksum(b, len),
				     .sp_deadline = 1767225600123ull,
				     .hard_pin = true,
				     .receipt = receipt };
	medium_alloc(m, len, &off, &err);
	medium_write(m, off, b, len, &err);
	TAP_OK(medium_seal(m, off, len, &meta, &err) == 0, "seal: the largest names fit");
	meta.size = len + 1;
	TAP_OK(medium_seal(m, off, len, &meta, &err) == -1 && err.code == MC_ERR_INVALID,
	       "seal: a size that is not the extent's is refused");
	meta.size = len;
	used = medium_used(m);
	medium_close(m);

	m = reopen(&f, 0);
	TAP_OK(f.n == 1 && f.off[0] == off, "recover: the sealed copy is offered at its offset");
	TAP_OK(f.n == 1 && f.meta[0].tenant_len == MC_NAME_MAX &&
		       memcmp(f.names[0][0], tenant, MC_NAME_MAX) == 0 &&
		       f.meta[0].key_len == MC_KEY_MAX &&
		       memcmp(f.names[0][1], key, MC_KEY_MAX) == 0 &&
		       f.meta[0].type_len == MC_NAME_MAX &&
		       memcmp(f.names[0][2], type, MC_NAME_MAX) == 0 && f.meta[0].group_len == 2 &&
		       memcmp(f.names[0][3], "g1", 2) == 0,
	       "recover: tenant, key of MC_KEY_MAX bytes, type and group come back");
	TAP_OK(f.n == 1 && f.meta[0].version == 42 && f.meta[0].size == len &&
		       f.meta[0].checksum == meta.checksum &&
		       f.meta[0].sp_deadline == 1767225600123ull && f.meta[0].hard_pin,
	       "recover: version, size, checksum, soft-pin deadline and hard pin come back");
	TAP_OK(f.n == 1 && f.has_receipt[0] && memcmp(f.receipt[0], receipt, sizeof(receipt)) == 0,
	       "recover: the commit receipt comes back as it was sealed");
	TAP_OK(medium_used(m) == used && medium_read(m, off, len, got, &err) == got &&
		       memcmp(got, b, len) == 0,
	       "recover: the copy is allocated again, its bytes intact");
	while (medium_alloc(m, PAGES_SIZE, &o2, &err) == 0) {
		apart = apart && (o2 + PAGES_SIZE <= off - hdr || o2 - hdr >= off + len);
		medium_write(m, o2, b, PAGES_SIZE, &err);
		n++;
	}
	TAP_OK(n > 0 && apart && medium_read(m, off, len, got, &err) == got &&
		       memcmp(got, b, len) == 0,
	       "recover: new extents never take a recovered one's space (%d of them)", n);
	medium_close(m);

	/* the pins come later: sealing again rewrites what is kept */
	m = reopen(&f, 0);
	meta.hard_pin = false;
	meta.sp_deadline = 0;
	meta.group_len = 0;
	meta.receipt = NULL;
	TAP_OK(medium_seal(m, off, len, &meta, &err) == 0, "seal: again, with other metadata");
	medium_close(m);
	m = reopen(&f, 0);
	TAP_OK(f.n == 1 && !f.meta[0].hard_pin && f.meta[0].sp_deadline == 0 &&
		       f.meta[0].group_len == 0 && !f.has_receipt[0],
	       "recover: the last seal is what comes back (no receipt: none)");
	medium_close(m);
	m = reopen(&f, 0);
	TAP_OK(!f.meta[0].dynamic, "recover: a copy sealed as no dynamic replica comes back so");
	meta.dynamic = true;
	TAP_OK(medium_seal(m, off, len, &meta, &err) == 0, "seal: again, as a dynamic replica");
	medium_close(m);
	m = reopen(&f, 0);
	TAP_OK(f.n == 1 && f.meta[0].dynamic && !f.meta[0].hard_pin,
	       "recover: a dynamic replica comes back as one, and not hard-pinned");
	meta.dynamic = false;
	TAP_OK(medium_seal(m, off, len, &meta, &err) == 0, "seal: again, not dynamic");
	medium_close(m);

	m = reopen(&f, 1);
	TAP_OK(f.n == 1 && medium_used(m) == 0, "recover: a copy handed back is released");
	medium_close(m);
	m = reopen(&f, 0);
	TAP_OK(f.n == 0, "recover: and never offered again");
	medium_close(m);
	unlink(file);
	free(b);
	free(got);
}

static void
test_bad_extents(void)
{
	struct mc_err err;
	static struct found f;
	struct medium *m = fresh(file, false);
	struct medium_io io;
	uint64_t a, b, c, d;

	a = put(m, "a", 3 * PAGES_SIZE, 1);
	b = put(m, "b", 2 * PAGES_SIZE + 9, 2);
	c = put(m, "c", 100, 3);
	d = put(m, "d", 5000, 4);
	medium_release(m, d, 5000);
	medium_close(m);
	flip(b + PAGES_SIZE + 3);	 /* a byte of b's data */
	flip(c - hdr + SSD_H_NAMES + 1); /* a byte of c's key: a torn header */
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 1 && f.off[0] == a && f.names[0][1][0] == 'a',
	       "recover: only the intact copy is offered");
	TAP_OK(io.corrupt == 2, "recover: a flipped data byte and a torn header are counted (%llu)",
	       (unsigned long long)io.corrupt);
	TAP_OK(medium_used(m) == hdr + 3 * PAGES_SIZE,
	       "recover: the torn, corrupt and released extents' space is free");
	medium_close(m);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 1 && io.corrupt == 0, "recover: a dropped extent is not found again");
	(void)err;
	medium_close(m);
	unlink(file);
}

/* The mover's copies between tiers, both ways, and between two files. */
static void
test_copy(void)
{
	struct mc_err err;
	struct medium *dram =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = SIZE }, &err);
	struct medium *ssd = fresh(file, true), *ssd2;
	size_t len = 2 * MC_BULK_CHUNK + 5000;
	unsigned char *b = malloc(len), *got = malloc(len);
	char file2[160];
	uint64_t d1, d2, s1, s2;
	struct medium_io before, after;

	snprintf(file2, sizeof(file2), "%s/ssd2", dir);
	ssd2 = fresh(file2, false);
	fill(b, len, 21);
	medium_alloc(dram, len, &d1, &err);
	medium_alloc(dram, len, &d2, &err);
	medium_alloc(ssd, len, &s1, &err);
	medium_alloc(ssd2, len, &s2, &err);
	medium_write(dram, d1, b, len, &err);
	TAP_OK(medium_copy(dram, d1, ssd, s1, len, &err) == 0 &&
		       medium_read(ssd, s1, len, got, &err) == got && memcmp(got, b, len) == 0,
	       "copy: dram to ssd, a demotion");
	medium_io(ssd, &before);
	TAP_OK(medium_copy(ssd, s1, dram, d2, len, &err) == 0 &&
		       memcmp(medium_read(dram, d2, len, NULL, &err), b, len) == 0,
	       "copy: ssd to dram, a promotion");
	medium_io(ssd, &after);
	TAP_OK(after.reads == before.reads + 1, "copy: read straight into dram, in one read");
	memset(got, 0, len);
	TAP_OK(medium_copy(ssd, s1, ssd2, s2, len, &err) == 0 &&
		       medium_read(ssd2, s2, len, got, &err) == got && memcmp(got, b, len) == 0,
	       "copy: between two files");
	medium_io(ssd, &before);
	TAP_OK(before.reads == after.reads + 3,
	       "copy: through the sink's staging buffer, a chunk at a time (%llu reads)",
	       (unsigned long long)(before.reads - after.reads));
	setenv("MC_FAULT", "ssd.read:always", 1);
	mc_fault_reset();
	TAP_OK(medium_copy(ssd, s1, dram, d2, len, &err) == -1 && err.code == MC_ERR_SYSTEM,
	       "copy: a read that fails fails the copy (%s)", err.msg);
	setenv("MC_FAULT", "ssd.write:always", 1);
	mc_fault_reset();
	TAP_OK(medium_copy(dram, d1, ssd, s1, len, &err) == -1 && err.code == MC_ERR_SYSTEM,
	       "copy: so does a write (%s)", err.msg);
	unsetenv("MC_FAULT");
	mc_fault_reset();
	medium_close(dram);
	medium_close(ssd);
	medium_close(ssd2);
	unlink(file);
	unlink(file2);
	free(b);
	free(got);
}

/* One of the threads of test_threads: its own copies, in and out, over and over. */
static void *
churn(void *arg)
{
	struct medium *m = arg;
	unsigned char *b = malloc(64 << 10), *got = malloc(64 << 10);
	struct mc_err err;
	uintptr_t bad = 0;
	uint64_t off;

	for (unsigned i = 0; i < 200; i++) {
		size_t len = 1 + (i * 7919u) % (64u << 10);

		fill(b, len, i + (unsigned)(uintptr_t)pthread_self());
		if (medium_alloc(m, len, &off, &err) < 0)
			continue;
		if (medium_write(m, off, b, len, &err) < 0 ||
		    medium_read(m, off, len, got, &err) != got || memcmp(got, b, len) != 0)
			bad++;
		medium_release(m, off, len);
	}
	free(b);
	free(got);
	return (void *)bad;
}

/* The mover's workers share the medium: nothing of one copy leaks into another. */
static void
test_threads(void)
{
	struct medium *m = fresh(file, true);
	pthread_t th[4];
	uintptr_t bad = 0;
	void *r;

	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, churn, m) != 0)
			bail("cannot start a thread");
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &r);
		bad += (uintptr_t)r;
	}
	TAP_OK(bad == 0 && medium_used(m) == 0,
	       "threads: four writing and reading their own copies at once see only their own "
	       "bytes (%lu bad)",
	       (unsigned long)bad);
	medium_close(m);
	unlink(file);
}

static void
test_faults(void)
{
	struct mc_err err;
	struct medium *m = fresh(file, false);
	unsigned char buf[64] = { 0 };
	struct mc_bulk_sink sink;
	struct mc_bulk_src src;
	uint64_t off;

	medium_alloc(m, sizeof(buf), &off, &err);
	setenv("MC_FAULT", "ssd.write:always;ssd.read:always", 1);
	mc_fault_reset();
	TAP_OK(medium_write(m, off, buf, sizeof(buf), &err) == -1 && err.code == MC_ERR_SYSTEM,
	       "fault ssd.write: a write fails (%s)", err.msg);
	TAP_OK(medium_sink(m, off, sizeof(buf), &sink, &err) == -1 && err.code == MC_ERR_SYSTEM,
	       "fault ssd.write: a sink cannot be had");
	TAP_OK(medium_read(m, off, sizeof(buf), buf, &err) == NULL && err.code == MC_ERR_SYSTEM,
	       "fault ssd.read: a read fails (%s)", err.msg);
	TAP_OK(medium_source(m, off, sizeof(buf), &src, &err) == -1 && err.code == MC_ERR_SYSTEM,
	       "fault ssd.read: a source cannot be had");
	unsetenv("MC_FAULT");
	mc_fault_reset();
	TAP_OK(medium_write(m, off, buf, sizeof(buf), &err) == 0 &&
		       medium_read(m, off, sizeof(buf), buf, &err) == buf,
	       "fault: without MC_FAULT, both work again");
	medium_release(m, off, sizeof(buf));
	medium_close(m);
	unlink(file);
}

/* ---- the superblock, and what lies in free space ---- */

static void
file_key(unsigned char key[SSD_KEY_BYTES])
{
	int fd = open(file, O_RDONLY);

	if (fd < 0 || pread(fd, key, SSD_KEY_BYTES, SSD_SB_KEY) != SSD_KEY_BYTES)
		bail("cannot read the key of %s", file);
	close(fd);
}

static void
write_at(uint64_t at, const void *b, size_t len)
{
	int fd = open(file, O_RDWR);

	if (fd < 0 || pwrite(fd, b, len, (off_t)at) != (ssize_t)len)
		bail("cannot write %s", file);
	close(fd);
}

static void
read_at(uint64_t at, void *b, size_t len)
{
	int fd = open(file, O_RDONLY);

	if (fd < 0 || pread(fd, b, len, (off_t)at) != (ssize_t)len)
		bail("cannot read %s", file);
	close(fd);
}

static void
le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Recover file into f with stderr in a log: in *lines, how many of its lines hold what. */
static struct medium *
reopen_logged(struct found *f, const char *what, int *lines)
{
	char log[192], line[512];
	int saved = dup(2), fd;
	struct medium *m;
	FILE *lf;

	snprintf(log, sizeof(log), "%s/log", dir);
	if ((fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
		bail("cannot create %s", log);
	fflush(stderr);
	dup2(fd, 2);
	m = reopen(f, 0);
	fflush(stderr);
	dup2(saved, 2);
	close(fd);
	close(saved);
	*lines = 0;
	if ((lf = fopen(log, "r"))) {
		while (fgets(line, sizeof(line), lf))
			*lines += strstr(line, what) != NULL;
		fclose(lf);
	}
	unlink(log);
	return m;
}

enum spoil {
	S_NONE,
	S_MAGIC_ONLY, /* the magic, then garbage */
	S_SUM,	      /* the header's checksum */
	S_UNKEYED,    /* summed as an outsider can: XXH3, no key */
	S_FORMAT1,    /* summed and numbered as format 1 was */
	S_LEN_LONG,   /* a header length past the longest header */
	S_LEN_SHORT,  /* one shorter than its fields */
	S_NAMES,      /* name lengths that overrun the header's length */
	S_TENANT_LONG,
	S_TENANT_NONE,
	S_KEY_LONG, /* with a continuation, well made */
	S_KEY_NONE,
	S_OFFSET,  /* a data offset not right after the header */
	S_EMPTY,   /* a size of zero */
	S_PAST,	   /* a size past the file's end */
	S_WRAPS,   /* a size that wraps any offset it is added to */
	S_DATA,	   /* the data's checksum */
	S_CONT,	   /* a continuation whose unit lacks its magic */
	S_CONT_AT, /* a continuation past the file's end */
	S_COUNT
};

/* Where plant puts a header's continuation, from the header: inside the 32 KiB it is given. */
#define PLANT_CONT (16u << 10)

/*
 * Plant at file offset at, behind the medium's back, an extent of 100
 * bytes for tenant "n", key "nnnnnn", signed with key and spoilt how.
 */
static void
plant(const unsigned char key[SSD_KEY_BYTES], uint64_t at, enum spoil how)
{
	static unsigned char h[SSD_HDR_MAX + SSD_UNIT], c[2 * SSD_HDR_MAX];
	unsigned char data[100];
	uint16_t lens[4] = { 1, 6, 0, 0 };
	uint64_t end = SIZE + SSD_SB_BYTES, len, size = sizeof(data), cat = 0, clen = 0;

	fill(data, sizeof(data), (unsigned)(at >> 12));
	if (how == S_MAGIC_ONLY) {
		for (size_t i = 0; i < PAGES_SIZE; i++)
			h[i] = (unsigned char)tap_rng();
		memcpy(h, SSD_MAGIC, SSD_MAGIC_LEN);
		write_at(at, h, PAGES_SIZE);
		return;
	}
	memset(h, 0, sizeof(h));
	lens[0] = how == S_TENANT_LONG ? MC_NAME_MAX + 1 : how == S_TENANT_NONE ? 0 : 1;
	lens[1] = how == S_KEY_LONG ? MC_KEY_MAX + 1 : how == S_KEY_NONE ? 0 : 6;
	if (how == S_CONT || how == S_CONT_AT)
		lens[1] = 1000;
	len = SSD_H_NAMES + lens[0] + lens[1];
	memcpy(h, SSD_MAGIC, SSD_MAGIC_LEN);
	le(h + SSD_H_FORMAT, how == S_FORMAT1 ? 1 : SSD_FORMAT, 2);
	le(h + SSD_H_LEN, how == S_LEN_LONG ? SSD_HDR_MAX + 1 : how == S_LEN_SHORT ? 40 : len, 4);
	le(h + SSD_H_OFF, at + SSD_HDR_BYTES + (how == S_OFFSET ? SSD_UNIT : 0), 8);
	if (how == S_EMPTY)
		size = 0;
	else if (how == S_PAST)
		size = end - (at + SSD_HDR_BYTES) + 1;
	else if (how == S_WRAPS)
		size = UINT64_MAX - PAGES_SIZE + 1;
	le(h + SSD_H_SIZE, size, 8);
	le(h + SSD_H_VERSION, 9, 8);
	le(h + SSD_H_CHECKSUM, mc_checksum(data, sizeof(data)) ^ (how == S_DATA), 8);
	le(h + SSD_H_KEY_LEN, lens[1] + (how == S_NAMES ? 64 : 0), 2);
	h[SSD_H_TENANT_LEN] = (unsigned char)lens[0];
	memset(h + SSD_H_NAMES, 'n', len - SSD_H_NAMES);
	if (len > SSD_HDR_BYTES) {
		/* the rest of the header in units of its own, each behind its magic */
		clen = (len - SSD_HDR_BYTES + SSD_CONT_PAYLOAD - 1) / SSD_CONT_PAYLOAD * SSD_UNIT;
		cat = how == S_CONT_AT ? end - SSD_UNIT : at + PLANT_CONT;
		le(h + SSD_H_CONT, cat, 8);
	}
	if (how == S_UNKEYED || how == S_FORMAT1)
		le(h + SSD_H_SUM, mc_checksum(h, len), 8);
	else
		le(h + SSD_H_SUM, ssd_header_sum(key, h, len), 8);
	h[SSD_H_SUM] ^= how == S_SUM;
	write_at(at, h, SSD_HDR_BYTES);
	if (clen > 0 && how != S_CONT_AT) {
		memset(c, 0, clen);
		for (uint64_t i = 0; i * SSD_UNIT < clen; i++) {
			memcpy(c + i * SSD_UNIT, SSD_CONT_MAGIC, SSD_MAGIC_LEN);
			memcpy(c + i * SSD_UNIT + SSD_MAGIC_LEN,
			       h + SSD_HDR_BYTES + i * SSD_CONT_PAYLOAD, SSD_CONT_PAYLOAD);
		}
		c[SSD_UNIT] ^= how == S_CONT;
		write_at(cat, c, clen);
	}
	if (at + SSD_HDR_BYTES + sizeof(data) <= end)
		write_at(at + SSD_HDR_BYTES, data, sizeof(data));
}

static void
test_superblock(void)
{
	static const unsigned char zero[SSD_KEY_BYTES];
	static const struct {
		const char *why;
		uint64_t at;
		const char *bytes;
		size_t len;
	} bad[] = {
		{ "is of format 1, without a superblock", 0, "mcextent\1\0\0\0", 12 },
		{ "is of format 1, without a superblock", 0, "\0\0\0\0\0\0\0\0", 8 },
		{ "has no superblock", 0, "mcGARBAGE", 9 },
		{ "has a damaged superblock", SSD_SB_KEY + 5, "\xa5", 1 },
		{ "has a damaged superblock", SSD_SB_LEN, "\xff\xff", 2 },
	};
	struct mc_err err;
	static struct found f;
	struct medium *m = fresh(file, false);
	unsigned char k1[SSD_KEY_BYTES], k2[SSD_KEY_BYTES], sb[SSD_SB_BYTES];
	char why[512];
	uint64_t a, off, low = UINT64_MAX, n = 0;
	int lines;

	a = put(m, "a", 100, 1);
	TAP_OK(a - hdr == SSD_SB_BYTES && medium_capacity(m) == SIZE &&
		       medium_used(m) == hdr + SSD_UNIT,
	       "superblock: the first extent follows it; the size is the copies' alone");
	medium_close(m);
	file_key(k1);
	read_at(0, sb, sizeof(sb));
	TAP_OK(memcmp(sb, SSD_SB_MAGIC, SSD_MAGIC_LEN) == 0 && sb[SSD_SB_FORMAT] == SSD_FORMAT &&
		       memcmp(k1, zero, sizeof(zero)) != 0,
	       "superblock: its magic, format 3 and a key");
	m = reopen_logged(&f, "afresh", &lines);
	file_key(k2);
	TAP_OK(f.n == 1 && f.off[0] == a && lines == 0 && memcmp(k1, k2, sizeof(k1)) == 0,
	       "superblock: kept across opens, its key with it");
	medium_close(m);
	medium_close(fresh(file, false));
	file_key(k2);
	TAP_OK(memcmp(k1, k2, sizeof(k1)) != 0, "superblock: a new file draws a new key");

	m = reopen(&f, 0);
	while (medium_alloc(m, PAGES_SIZE, &off, &err) == 0) {
		low = off - hdr < low ? off - hdr : low;
		n++;
	}
	TAP_OK(low == SSD_SB_BYTES && medium_used(m) == n * (hdr + PAGES_SIZE) &&
		       medium_used(m) <= SIZE && SIZE - medium_used(m) < hdr + PAGES_SIZE,
	       "superblock: a full medium is used up to the size, never on the superblock's page");
	medium_close(m);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = fresh(file, false);
		put(m, "a", 100, 1);
		medium_close(m);
		write_at(bad[i].at, bad[i].bytes, bad[i].len);
		snprintf(why, sizeof(why), "ssd file '%s' %s: starting it afresh", file,
			 bad[i].why);
		m = reopen_logged(&f, why, &lines);
		file_key(k2);
		TAP_OK(lines == 1 && f.n == 0 && medium_used(m) == 0,
		       "superblock: a file that %s is started afresh, saying so once", bad[i].why);
		medium_close(m);
		m = reopen_logged(&f, "afresh", &lines);
		TAP_OK(lines == 0 && f.n == 0, "superblock: and has a good one after");
		medium_close(m);
	}

	/* one laid out with other headers, its checksum right */
	m = fresh(file, false);
	medium_close(m);
	read_at(0, sb, sizeof(sb));
	le(sb + SSD_SB_HDR, PAGES_SIZE, 4);
	le(sb + SSD_SB_SUM, 0, 8);
	le(sb + SSD_SB_SUM, mc_checksum(sb, SSD_SB_USED), 8);
	write_at(0, sb, sizeof(sb));
	m = reopen_logged(&f, "was laid out in units of 512 bytes and headers of 4096", &lines);
	TAP_OK(lines == 1, "superblock: one laid out for other headers is started afresh");
	medium_close(m);

	/* one laid out in larger units, as a larger tier is: they are kept */
	m = fresh(file, false);
	medium_close(m);
	read_at(0, sb, sizeof(sb));
	le(sb + SSD_SB_PAGE, 2 * SSD_UNIT, 4);
	le(sb + SSD_SB_HDR, 2 * SSD_UNIT, 4);
	le(sb + SSD_SB_SUM, 0, 8);
	le(sb + SSD_SB_SUM, mc_checksum(sb, SSD_SB_USED), 8);
	write_at(0, sb, sizeof(sb));
	m = reopen_logged(&f, "afresh", &lines);
	a = put(m, "a", 100, 1);
	TAP_OK(lines == 0 && medium_used(m) == 4 * SSD_UNIT && a == SSD_SB_BYTES + 2 * SSD_UNIT &&
		       m->page == 2 * SSD_UNIT && m->per_copy == 2 * SSD_UNIT,
	       "superblock: one laid out in units of %u keeps them, its room with them",
	       2 * SSD_UNIT);
	medium_close(m);
	m = reopen(&f, 0);
	TAP_OK(f.n == 1 && f.off[0] == a && medium_used(m) == 4 * SSD_UNIT,
	       "superblock: and its copies come back");
	medium_close(m);

	/* too short to hold one: a file cut by hand, or made and never written */
	if (truncate(file, 100) < 0)
		bail("cannot truncate %s", file);
	m = reopen_logged(&f, "is too short for a superblock: starting it afresh", &lines);
	TAP_OK(lines == 1 && medium_capacity(m) == SIZE,
	       "superblock: a file too short for one too");
	medium_close(m);
	unlink(file);
}

static void
test_free_space(void)
{
	static struct found f;
	struct medium *m = fresh(file, false);
	unsigned char key[SSD_KEY_BYTES], *g = malloc(256u << 10), *got = malloc(4 * PAGES_SIZE);
	unsigned char want[3 * PAGES_SIZE + 5];
	uint64_t live, used, at = 2u << 20, end = SIZE + SSD_SB_BYTES;
	struct medium_io io;
	struct mc_err err;
	unsigned n = 0;

	live = put(m, "live", sizeof(want), 7);
	used = medium_used(m);
	medium_close(m);
	file_key(key);
	/* random bytes over 256 KiB never allocated, no page of them starting with the magic */
	for (size_t i = 0; i < (256u << 10); i++)
		g[i] = (unsigned char)tap_rng();
	for (size_t i = 0; i < (256u << 10); i += SSD_UNIT)
		g[i] = 0;
	write_at(1u << 20, g, 256u << 10);
	for (int how = S_MAGIC_ONLY; how < S_COUNT; how++) {
		if (how == S_WRAPS)
			continue;
		plant(key, at, how);
		at += 32u << 10;
		n++;
	}
	/* the last header that has room for a page of data, and one after it that has none */
	plant(key, end - SSD_HDR_BYTES - PAGES_SIZE, S_WRAPS);
	n++;
	plant(key, end - SSD_HDR_BYTES, S_NONE);
	/* and one made right: the others are refused for what is wrong with them */
	plant(key, at, S_NONE);

	m = reopen(&f, 0);
	medium_io(m, &io);
	fill(want, sizeof(want), 7);
	TAP_OK(io.corrupt == n, "free space: every spoilt header is counted (%llu of %u)",
	       (unsigned long long)io.corrupt, n);
	TAP_OK(f.n == 2 && f.off[0] == live && f.off[1] == at + hdr && f.meta[1].key_len == 6,
	       "free space: the live copy and the well-made one are offered, nothing else");
	TAP_OK(medium_used(m) == used + hdr + SSD_UNIT &&
		       medium_read(m, live, sizeof(want), got, &err) == got &&
		       memcmp(got, want, sizeof(want)) == 0,
	       "free space: the live copy is intact, and only the two are allocated");
	medium_close(m);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(io.corrupt == 0 && f.n == 2, "free space: what was refused was cleared");
	medium_close(m);
	unlink(file);
	free(g);
	free(got);
}

/* An extent another file signed, planted where it would be in this one. */
static void
test_other_file(void)
{
	static struct found f;
	struct medium *m = fresh(file, false), *m2;
	char file2[160];
	struct medium_io io;
	unsigned char *b = malloc(hdr + SSD_UNIT);
	uint64_t a, a2;
	int fd;

	snprintf(file2, sizeof(file2), "%s/other", dir);
	m2 = fresh(file2, false);
	a = put(m, "bait", 100, 1);
	medium_release(m, a, 100);
	a2 = put(m2, "victim", 100, 2);
	medium_close(m);
	medium_close(m2);
	fd = open(file2, O_RDONLY);
	if (a != a2 || fd < 0 || pread(fd, b, hdr + SSD_UNIT, (off_t)(a2 - hdr)) < 0)
		bail("cannot read %s", file2);
	close(fd);
	write_at(a - hdr, b, hdr + SSD_UNIT);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 0 && io.corrupt == 1 && medium_used(m) == 0,
	       "free space: an extent signed with another file's key is refused");
	medium_close(m);
	unlink(file);
	unlink(file2);
	free(b);
}

/* Open the ssd medium at file under a pool, and recover it. */
static struct medium *
pool_open(struct medium *media[MC_TIER_COUNT], struct pindex *ix, struct pool *pl, uint64_t *found)
{
	struct mc_err err;

	memset(media, 0, MC_TIER_COUNT * sizeof(*media));
	media[MC_TIER_SSD] = open_ssd(file, SIZE, false, &err);
	if (!media[MC_TIER_SSD] || pindex_init(ix, media, &err) < 0)
		bail("cannot open a pool over %s: %s", file, err.msg);
	pool_init(pl, ix);
	if (pool_recover(pl, MC_TIER_SSD, found, &err) < 0)
		bail("cannot recover %s: %s", file, err.msg);
	return media[MC_TIER_SSD];
}

static void
pool_close(struct medium *media[MC_TIER_COUNT], struct pindex *ix)
{
	pindex_destroy(ix);
	medium_close(media[MC_TIER_SSD]);
}

static void
test_pool(void)
{
	static struct found f;
	struct medium *media[MC_TIER_COUNT], *m = fresh(file, false);
	unsigned char *old = malloc(hdr + SSD_UNIT), magic[SSD_MAGIC_LEN];
	struct pool_key k = { "t", 1, "k", 1, false, 0 };
	struct pool_result res;
	struct pindex ix;
	struct pool pl;
	uint64_t o1, o2, found, version = 0;
	struct pobj *o;
	int tier = MC_TIER_NONE;

	/* an upsert: version 2 lands while 1 is still held, then 1 goes */
	o1 = put(m, "k", 100, 1);
	read_at(o1 - hdr, old, hdr + SSD_UNIT);
	o2 = put(m, "k", 100, 2);
	medium_release(m, o1, 100);
	medium_close(m);
	/* the old extent put back where it was */
	write_at(o1 - hdr, old, hdr + SSD_UNIT);
	m = pool_open(media, &ix, &pl, &found);
	TAP_OK(found == 1 && pindex_version(&ix, "t", 1, "k", 1, &version, &tier) == 1 &&
		       version == 2 && medium_used(m) == hdr + SSD_UNIT,
	       "pool: of a stale version and the current one, recovery keeps the current");
	/* a clean stop: the index goes, its copies stay sealed */
	pool_close(media, &ix);
	m = reopen(&f, 0);
	TAP_OK(f.n == 1 && f.off[0] == o2 && f.meta[0].version == 2,
	       "pool: the stale one is gone for good, the current one kept through a clean stop");
	medium_close(m);

	/* a delete while a reader holds the copy: unsealed at once, room kept */
	m = pool_open(media, &ix, &pl, &found);
	o = pindex_acquire(&ix, "t", 1, "k", 1);
	pool_evict(&pl, &k, MC_TIER_NONE, POOL_DELETE, &res);
	read_at(o2 - hdr, magic, sizeof(magic));
	TAP_OK(o && res.outcome == POOL_FREED && res.held &&
		       memcmp(magic, SSD_MAGIC, SSD_MAGIC_LEN) != 0 &&
		       medium_used(m) == hdr + SSD_UNIT,
	       "pool: a copy deleted while a reader holds it is unsealed at once, its room kept");
	if (o)
		pindex_release(&ix, o);
	TAP_OK(medium_used(m) == 0, "pool: and its room comes back when the reader lets go");
	pool_close(media, &ix);
	m = reopen(&f, 0);
	TAP_OK(f.n == 0, "pool: a deleted copy never comes back");
	medium_close(m);
	unlink(file);
	free(old);
}

/* ---- what the tier takes per byte stored ---- */

/* Keep every copy offered, counting them. */
static int
count(void *arg, uint64_t off, const struct medium_meta *meta)
{
	(void)off;
	(void)meta;
	++*(uint64_t *)arg;
	return 0;
}

/*
 * Fill a fresh medium with copies of len bytes named with names bytes of
 * tenant, key and type, sealed; bytes used per byte stored, in TAP's
 * comments, and whether a restart finds the same.
 */
static double
fill_ratio(size_t len, size_t names, const char *what)
{
	static char tenant[32], key[MC_KEY_MAX], type[8];
	struct mc_err err;
	struct medium *m = fresh(file, false);
	unsigned char *b = malloc(len);
	uint64_t off, used, n = 0, found = 0;
	struct medium_meta meta = {
		.tenant = tenant,
		.tenant_len = sizeof(tenant),
		.key = key,
		.key_len = (uint16_t)(names - sizeof(tenant) - sizeof(type)),
		.type = type,
		.type_len = sizeof(type),
		.size = len,
	};
	double ratio;

	memset(tenant, 't', sizeof(tenant));
	memset(key, 'k', sizeof(key));
	memset(type, 'y', sizeof(type));
	fill(b, len, 1);
	meta.checksum = mc_checksum(b, len);
	while (medium_alloc(m, len, &off, &err) == 0) {
		/* a long key's continuation may not fit where its copy did */
		if (medium_write(m, off, b, len, &err) < 0 ||
		    medium_seal(m, off, len, &meta, &err) < 0) {
			medium_release(m, off, len);
			break;
		}
		n++;
	}
	used = medium_used(m);
	ratio = n ? (double)used / (double)(n * len) : 0;
	printf("# ssd: %s: %llu copies of %zu bytes, %zu bytes of names: %llu bytes used, "
	       "%.4f per byte stored, %.1f%% of the tier holds copies' bytes\n",
	       what, (unsigned long long)n, len, names, (unsigned long long)used, ratio,
	       100.0 * (double)(n * len) / (double)medium_capacity(m));
	medium_close(m);
	if (!(m = open_ssd(file, SIZE, false, &err)) || medium_recover(m, count, &found, &err) < 0)
		bail("cannot recover %s: %s", file, err.msg);
	TAP_OK(n > 0 && medium_used(m) == used && found == n,
	       "overhead: %s: a restart takes back the same bytes (%llu)", what,
	       (unsigned long long)medium_used(m));
	medium_close(m);
	unlink(file);
	free(b);
	return ratio;
}

/* The unit grows only when the allocator could not count a tier in sectors. */
static void
test_unit_for(void)
{
	TAP_OK(ssd_unit_for(SIZE) == SSD_UNIT && ssd_unit_for(1ull << 40) == SSD_UNIT &&
		       ssd_unit_for((uint64_t)PAGES_MAX * SSD_UNIT) == SSD_UNIT,
	       "unit: a tier of up to %llu bytes is laid out in sectors",
	       (unsigned long long)PAGES_MAX * SSD_UNIT);
	TAP_OK(ssd_unit_for(1ull << 41) == 2 * SSD_UNIT &&
		       ssd_unit_for((uint64_t)PAGES_MAX * PAGES_SIZE) == PAGES_SIZE &&
		       ssd_unit_for(1ull << 50) == PAGES_SIZE,
	       "unit: a larger one in the smallest power of two that counts it, a page at most");
}

static void
test_overhead(void)
{
	uint64_t long_hdr = SSD_H_NAMES + 32 + (MC_KEY_MAX - 40) + 8;
	double r;

	r = fill_ratio(4096, 200, "4 KiB copies");
	TAP_OK(r > 1 && r <= 1.125, "overhead: 4 KiB copies take at most 1.125 bytes a byte (%.4f)",
	       r);
	r = fill_ratio(64 << 10, 200, "64 KiB copies");
	TAP_OK(r > 1 && r <= 1.02, "overhead: 64 KiB copies take at most 1.02 bytes a byte (%.4f)",
	       r);
	r = fill_ratio(4096, 32 + (MC_KEY_MAX - 40) + 8, "4 KiB copies, keys near MC_KEY_MAX");
	TAP_OK(r == (double)(SSD_HDR_BYTES + 4096 +
			     (long_hdr - SSD_HDR_BYTES + SSD_CONT_PAYLOAD - 1) / SSD_CONT_PAYLOAD *
				     SSD_UNIT) /
			       4096,
	       "overhead: a long key's header is longer by its continuation, no more (%.4f)", r);
}

/* A key whose every eight bytes look like a header's magic. */
static void
magic_key(char *key, size_t len)
{
	for (size_t i = 0; i < len; i++)
		key[i] = SSD_MAGIC[i % SSD_MAGIC_LEN];
}

static void
test_long_names(void)
{
	static char key[MC_KEY_MAX];
	static struct found f;
	struct mc_err err;
	struct medium *m = fresh(file, false);
	unsigned char b[3000];
	struct medium_io io;
	uint64_t off, fp, cont, used, inline_max = SSD_HDR_BYTES - SSD_H_NAMES - 1;
	struct medium_meta meta = { .tenant = "t", .tenant_len = 1, .key = key };

	magic_key(key, sizeof(key));
	fill(b, sizeof(b), 4);
	meta.size = sizeof(b);
	meta.checksum = mc_checksum(b, sizeof(b));
	fp = medium_footprint(m, sizeof(b));
	/* the longest key that fits the room, then one byte more */
	meta.key_len = (uint16_t)inline_max;
	medium_alloc(m, sizeof(b), &off, &err);
	medium_write(m, off, b, sizeof(b), &err);
	TAP_OK(medium_seal(m, off, sizeof(b), &meta, &err) == 0 && medium_used(m) == fp,
	       "long names: %llu bytes of tenant and key fit the header's room",
	       (unsigned long long)inline_max + 1);
	meta.key_len++;
	TAP_OK(medium_seal(m, off, sizeof(b), &meta, &err) == 0 && medium_used(m) == fp + SSD_UNIT,
	       "long names: one more byte takes a continuation of one unit, counted in used");
	meta.key_len = 1000;
	cont = (SSD_H_NAMES + 1 + 1000 - SSD_HDR_BYTES + SSD_CONT_PAYLOAD - 1) / SSD_CONT_PAYLOAD *
	       SSD_UNIT;
	TAP_OK(medium_seal(m, off, sizeof(b), &meta, &err) == 0 && medium_used(m) == fp + cont,
	       "long names: sealed again with a longer key, the old continuation is given back");
	used = medium_used(m);
	medium_close(m);

	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 1 && f.off[0] == off && f.meta[0].key_len == 1000 &&
		       memcmp(f.names[0][1], key, 1000) == 0 && io.corrupt == 0 &&
		       medium_used(m) == used,
	       "long names: a key full of the header's magic comes back whole, its "
	       "continuation allocated again");
	meta.hard_pin = true;
	TAP_OK(medium_seal(m, off, sizeof(b), &meta, &err) == 0 && medium_used(m) == used,
	       "long names: sealed again with the same names, the continuation is kept");
	medium_close(m);
	m = reopen(&f, 0);
	TAP_OK(f.n == 1 && f.meta[0].hard_pin && medium_used(m) == used,
	       "long names: and the last seal is what comes back");
	medium_release(m, off, sizeof(b));
	TAP_OK(medium_used(m) == 0, "long names: release gives back the continuation too");
	medium_close(m);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 0 && io.corrupt == 0 && medium_used(m) == 0,
	       "long names: released, nothing comes back and nothing passes for a header");
	medium_close(m);

	/* a byte of the continuation flipped: the header is torn */
	m = fresh(file, false);
	medium_alloc(m, sizeof(b), &off, &err);
	medium_write(m, off, b, sizeof(b), &err);
	medium_seal(m, off, sizeof(b), &meta, &err);
	medium_close(m);
	read_at(off - hdr + SSD_H_CONT, &cont, sizeof(cont));
	flip(cont + SSD_UNIT + 100);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 0 && io.corrupt == 1 && medium_used(m) == 0,
	       "long names: a flipped byte in a continuation is a torn header, counted, its space "
	       "free");
	medium_close(m);
	unlink(file);
}

/* Seal len bytes of b at off for key (key_len bytes), tenant "t". */
static void
seal_as(struct medium *m, uint64_t off, const unsigned char *b, size_t len, const char *key,
	size_t key_len)
{
	struct mc_err err;

	if (medium_write(m, off, b, len, &err) < 0 ||
	    medium_seal(m, off, len,
			&(struct medium_meta){ .tenant = "t",
					       .tenant_len = 1,
					       .key = key,
					       .key_len = (uint16_t)key_len,
					       .version = 1,
					       .size = len,
					       .checksum = mc_checksum(b, len) },
			&err) < 0)
		bail("cannot seal at %llu: %s", (unsigned long long)off, err.msg);
}

/*
 * Where continuations lie: in a hole before their copy, and, put back by
 * hand, over another copy's bytes.
 */
static void
test_cont_places(void)
{
	static char key[1000];
	static struct found f;
	struct mc_err err;
	struct medium *m = fresh(file, false);
	unsigned char b[100], cont_bytes[2 * SSD_UNIT], stub[SSD_UNIT], mb[3 * SSD_UNIT];
	uint64_t f0, f1, l, cat, mo;
	struct medium_io io;

	magic_key(key, sizeof(key));
	fill(b, sizeof(b), 8);
	/* a filler, a hole, the long-named copy after it: its continuation goes in the hole */
	medium_alloc(m, sizeof(b), &f0, &err);
	medium_alloc(m, sizeof(b), &f1, &err);
	medium_alloc(m, sizeof(b), &l, &err);
	medium_release(m, f1, sizeof(b));
	seal_as(m, l, b, sizeof(b), key, sizeof(key));
	medium_close(m);
	read_at(l - hdr + SSD_H_CONT, &cat, sizeof(cat));
	TAP_OK(cat == f1 - hdr, "continuation: a hole before its copy takes it");
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 1 && f.off[0] == l && f.meta[0].key_len == sizeof(key) && io.corrupt == 0 &&
		       medium_used(m) == 2 * SSD_UNIT + 2 * SSD_UNIT,
	       "continuation: before its copy, it is taken back with it (used %llu)",
	       (unsigned long long)medium_used(m));

	/* the copy goes, then one whose bytes are the old continuation's, where it lay */
	read_at(cat, cont_bytes, sizeof(cont_bytes));
	read_at(l - hdr, stub, sizeof(stub));
	medium_release(m, l, sizeof(b));
	TAP_OK(medium_used(m) == 0, "continuation: given back with its copy (the filler, never "
				    "sealed, did not come back)");
	memset(mb, 'm', sizeof(mb));
	memcpy(mb + SSD_UNIT, cont_bytes, sizeof(cont_bytes));
	medium_alloc(m, sizeof(mb), &mo, &err);
	seal_as(m, mo, mb, sizeof(mb), "m", 1);
	medium_close(m);
	/* and the long-named copy's header put back: signed, whole, its continuation intact */
	if (mo + SSD_UNIT != cat || mo + sizeof(mb) > l - hdr)
		bail("the copy over the continuation is not where it was meant to be");
	write_at(l - hdr, stub, sizeof(stub));
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 1 && f.off[0] == mo && io.corrupt == 1 && medium_used(m) == hdr + sizeof(mb),
	       "continuation: one over another copy's bytes is no copy's; that copy is kept");
	medium_close(m);
	m = reopen(&f, 0);
	medium_io(m, &io);
	TAP_OK(f.n == 1 && io.corrupt == 0, "continuation: and the header refused was cleared");
	medium_close(m);
	unlink(file);
}

/* ---- a file of another format ---- */

/* A superblock as format fmt laid it out, with its checksum right, over a file of SIZE. */
static void
old_file(uint64_t fmt, uint32_t page, uint32_t hdr_bytes)
{
	unsigned char sb[SSD_SB_BYTES] = { 0 }, g[4096];
	int fd;

	unlink(file);
	if ((fd = open(file, O_RDWR | O_CREAT, 0600)) < 0 || ftruncate(fd, SIZE + SSD_SB_BYTES) < 0)
		bail("cannot make %s", file);
	close(fd);
	memcpy(sb, SSD_SB_MAGIC, SSD_MAGIC_LEN);
	le(sb + SSD_SB_FORMAT, fmt, 4);
	le(sb + SSD_SB_LEN, SSD_SB_USED, 4);
	le(sb + SSD_SB_PAGE, page, 4);
	le(sb + SSD_SB_HDR, hdr_bytes, 4);
	for (int i = 0; i < SSD_KEY_BYTES; i++)
		sb[SSD_SB_KEY + i] = (unsigned char)tap_rng();
	le(sb + SSD_SB_SUM, mc_checksum(sb, SSD_SB_USED), 8);
	write_at(0, sb, sizeof(sb));
	/* where its first extent was: a header, then its bytes */
	for (size_t i = 0; i < sizeof(g); i++)
		g[i] = (unsigned char)tap_rng();
	memcpy(g, SSD_MAGIC, SSD_MAGIC_LEN);
	write_at(SSD_SB_BYTES, g, sizeof(g));
	write_at(SSD_SB_BYTES + 8192, g, sizeof(g));
}

/* The file's bytes, hashed, and its size. */
static uint64_t
file_sum(off_t *size)
{
	unsigned char *b = malloc(SIZE + SSD_SB_BYTES);
	struct stat st;
	uint64_t sum;

	if (!b || stat(file, &st) < 0 || st.st_size > SIZE + SSD_SB_BYTES)
		bail("cannot stat %s", file);
	read_at(0, b, (size_t)st.st_size);
	sum = mc_checksum(b, (size_t)st.st_size);
	*size = st.st_size;
	free(b);
	return sum;
}

static void
test_old_format(void)
{
	struct mc_err err;
	struct medium *m;
	char want[512], moved[192];
	uint64_t before, after;
	off_t sb_size, sa_size;

	old_file(2, PAGES_SIZE, 8192);
	before = file_sum(&sb_size);
	m = open_ssd(file, SIZE, false, &err);
	snprintf(want, sizeof(want),
		 "ssd file '%s' is in format 2; this peer writes format 3: move it away", file);
	after = file_sum(&sa_size);
	TAP_OK(m == NULL && err.code == MC_ERR_VERSION && strstr(err.msg, want) != NULL,
	       "old format: a file of format 2 is refused, saying what to do (%s)", err.msg);
	TAP_OK(before == after && sb_size == sa_size,
	       "old format: and not a byte of it is changed");
	m = open_ssd(file, 2 * SIZE, false, &err);
	after = file_sum(&sa_size);
	TAP_OK(m == NULL && before == after && sb_size == sa_size,
	       "old format: not even opened at another size, which would cut or grow it");
	old_file(4, SSD_UNIT, SSD_HDR_BYTES);
	m = open_ssd(file, SIZE, false, &err);
	TAP_OK(m == NULL && err.code == MC_ERR_VERSION && strstr(err.msg, "is in format 4;"),
	       "old format: a newer format is refused too (%s)", err.msg);
	snprintf(moved, sizeof(moved), "%s.old", file);
	rename(file, moved);
	m = open_ssd(file, SIZE, false, &err);
	TAP_OK(m != NULL && medium_recover(m, keep, NULL, &err) == 0 && medium_used(m) == 0,
	       "old format: moved away, the tier starts afresh");
	medium_close(m);
	unlink(moved);
	unlink(file);
}

/* Whether a file in d can be read with O_DIRECT. */
static bool
direct_ok(const char *d)
{
	char path[192];
	void *page = NULL;
	bool ok = false;
	int fd;

	snprintf(path, sizeof(path), "%s/probe", d);
	if ((fd = open(path, O_RDWR | O_CREAT, 0600)) < 0 || ftruncate(fd, PAGES_SIZE) < 0)
		return false;
	close(fd);
	if (posix_memalign(&page, PAGES_SIZE, PAGES_SIZE) == 0 &&
	    (fd = open(path, O_RDONLY | O_DIRECT)) >= 0) {
		ok = pread(fd, page, PAGES_SIZE, 0) == PAGES_SIZE;
		close(fd);
	}
	free(page);
	unlink(path);
	return ok;
}

int
main(void)
{
	char shm[128];
	struct stat st;

	if (!mkdtemp(dir))
		bail("cannot make a temporary directory");
	snprintf(file, sizeof(file), "%s/ssd", dir);
	test_open();
	{
		struct medium *m = fresh(file, false);
		struct mc_err err;
		uint64_t off;

		medium_alloc(m, 1, &off, &err);
		hdr = medium_used(m) - SSD_UNIT;
		medium_close(m);
	}
	test_space();
	test_bytes(file, 0, "buffered");
	/* the temporary directory's file system may refuse O_DIRECT too */
	test_bytes(file, direct_ok(dir) ? 1 : 0, "direct");
	test_fallback();
	/* tmpfs refuses O_DIRECT before Linux 6.6, takes it after */
	snprintf(shm, sizeof(shm), "/dev/shm/test_peer_ssd.%d", (int)getpid());
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode))
		test_bytes(shm, -1, "tmpfs");
	else
		TAP_OK(true, "tmpfs # SKIP no /dev/shm");
	test_sink_source();
	test_seal_recover();
	test_bad_extents();
	test_recover_edges();
	test_copy();
	test_threads();
	test_faults();
	test_superblock();
	test_free_space();
	test_other_file();
	test_pool();
	test_long_names();
	test_cont_places();
	test_old_format();
	test_unit_for();
	test_overhead();
	rmdir(dir);
	return tap_done();
}
