/*
 * The SSD medium: a tier kept in one file of extents on a local disk.
 *
 * PATH is the file, or a directory the file (PATH/extents) is kept in;
 * medium_dir names the directory, for the peer's other state. The file
 * is fallocated at open to the configured size plus one page for its
 * superblock, so a disk that cannot hold the tier refuses it at start
 * instead of failing writes later (and cut to it: copies past a smaller
 * size than before are lost), and it is locked, so two peers never share
 * it. The size is what copies may take, headers included: used never
 * exceeds it, and the superblock is not part of it. The page allocator
 * (pages.h) hands out the space after the superblock in units of a
 * sector (SSD_UNIT), with no memory behind it.
 *
 * The layout is in medium_ssd.h. The superblock holds the file's key,
 * drawn at random when the file is made and written (and synced) before
 * any header is signed with it. A file whose superblock is missing (the
 * format 1 had none), of another layout, or damaged, is started afresh,
 * with one line saying why: without its key nothing in it can be told
 * from bytes a client wrote. One of another format (an older peer's,
 * or a newer one's) is refused, the file left as it is: its copies may
 * matter to someone, and the message says how to go on.
 *
 * An extent is a header's room of one unit followed by the copy's
 * bytes in whole units: alloc hands out the data's offset and keeps the
 * room in front of it, so used counts both, and a copy of n bytes takes
 * medium_footprint(n). seal writes the header after the bytes have
 * landed: the copy's metadata, its checksum and the header's checksum,
 * SipHash under the file's key. Names too long for the room (400 bytes
 * of tenant, key, type and group together) put the rest of the header
 * in a continuation that seal allocates: used counts it, the footprint
 * does not, and release gives it back. A copy's bytes are whatever its
 * client sent, so they may hold, at a unit boundary, what looks like a
 * header naming any tenant and key with a right data checksum; only the
 * key tells it from one this peer sealed, and no client has the key. A
 * continuation's units each start with a magic of their own, so its
 * names never pass for a header. unseal clears the header's magic when
 * a copy is dropped for good (a reader may still hold its bytes),
 * release again before the space is reused, so a dropped copy never
 * comes back.
 *
 * Recovery scans the extents for headers, skipping holes (SEEK_DATA)
 * and the extents it found, and believes a header only when it is
 * signed with the file's key, its names have the lengths a seal takes,
 * and it names its own place and an extent inside the file (bounds
 * checked so that no field wraps an offset), with its continuation
 * joined to it when it has one. It then verifies every copy's bytes
 * against the checksum in its header, before it is offered: a torn or
 * corrupt copy, or a header not believed (or one whose space overlaps
 * a copy taken already), is cleared and counted, never served. The scan
 * takes extents back in ascending order, which the allocator does
 * quickly; continuations, which may lie anywhere, are taken after it in
 * one sorted pass (pages_take_sorted), and their copies offered then. A
 * header inside a copy that verifies is that copy's data: one this peer
 * signed could only be there had it been written over the copy without
 * changing a byte of it. A released extent's bytes put back in place by
 * someone who can write the file are indistinguishable from the copy;
 * the pool keeps the newest version of a key, and the master drops
 * versions it does not have. Verifying at start reads every sealed byte
 * once per restart; in exchange every copy the peer reports is known
 * good, and no read ever waits on a first check. A clean stop leaves the
 * copies sealed, as a crash does.
 *
 * I/O: the loop hands a client's write (with its seal) and a cold read
 * to the disk queue (diskq.h), whose workers call write and read; only
 * when the queue's staging budget is spent does a write land through a
 * bulk sink (pwrite from the connection's staging buffer) or a read's
 * reply go out with sendfile, both on a buffered descriptor. The mover's
 * copies in (write), reads into a buffer and the checks at recovery use
 * a second, O_DIRECT descriptor when conf->direct asks and the
 * filesystem allows it (tmpfs does not: one log line, then buffered
 * I/O): the whole 4 KiB pages inside a range go direct, from the
 * caller's buffer when it is page-aligned, else through a bounded
 * aligned one; the partial pages at its ends go buffered, as headers
 * do, since extents laid out in sectors share pages with their
 * neighbours and a direct write must never cover a neighbour's bytes
 * that the page cache may hold newer. Nothing
 * else is fsynced: copies survive the peer being killed, not the
 * machine losing power.
 *
 * Fault points: ssd.write fails write and sink, ssd.read fails read and
 * source, with MC_ERR_SYSTEM; ssd.direct refuses O_DIRECT at open.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <sodium.h>

#include "mc/checked.h"
#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/proto.h"

#include "medium.h"
#include "medium_ssd.h"
#include "pages.h"

#define SSD_FILE "extents"

_Static_assert(crypto_shorthash_KEYBYTES == SSD_KEY_BYTES, "the file's key is a SipHash key");
_Static_assert(crypto_shorthash_BYTES == 8, "a header's checksum is 64 bits");
_Static_assert(SSD_RECEIPT_BYTES == MC_RECEIPT_BYTES, "a header keeps a whole receipt");

#define ROUND_UP(n, a) (((n) + (a)-1) / (a) * (a))
/* The most one direct transfer or recovery read holds in memory. */
#define IO_CHUNK (1u << 20)

struct ssd {
	struct medium m; /* first: the medium is the ssd */
	/* The extents' space, at offsets from the end of the superblock. */
	struct pages *pages;
	int fd;	 /* buffered: sinks, sendfile, headers */
	int dfd; /* O_DIRECT, or -1 */
	char *file, *dir;
	unsigned char key[SSD_KEY_BYTES]; /* the superblock's: what signs headers */
	uint64_t end;			  /* the file's size: the superblock and the extents */
	uint32_t unit;			  /* what extents are laid out in, and a header's room */
	bool fresh;	       /* the file is new or started afresh: nothing to recover */
	atomic_bool recovered; /* recover ran: alloc may hand out space */
	struct medium_lru lru;
	/* The continuations of headers longer than their room, by data offset. */
	pthread_mutex_t cmu;
	struct cont **conts;
	size_t nconts, cbuckets;
};

/* A header's continuation: units of their own at at, len bytes. */
struct cont {
	uint64_t data, at, len;
	struct cont *next;
};

static struct ssd *
ssd_of(struct medium *m)
{
	return (struct ssd *)m;
}

/* ---- continuations ---- */

static struct cont **
cont_slot(struct ssd *s, uint64_t data)
{
	struct cont **c = &s->conts[(data / s->unit * 0x9e3779b97f4a7c15ull >> 20) % s->cbuckets];

	while (*c && (*c)->data != data)
		c = &(*c)->next;
	return c;
}

/* Grow the table so that one more fits without a long chain; -1 when memory ran out. */
static int
cont_room(struct ssd *s)
{
	size_t nb = s->cbuckets ? 2 * s->cbuckets : 64;
	struct cont **old = s->conts, **b, *c, *next;
	size_t ob = s->cbuckets;

	if (s->nconts < s->cbuckets)
		return 0;
	if (!(b = calloc(nb, sizeof(*b))))
		return -1;
	s->conts = b;
	s->cbuckets = nb;
	for (size_t i = 0; i < ob; i++)
		for (c = old[i]; c; c = next) {
			next = c->next;
			c->next = NULL;
			*cont_slot(s, c->data) = c;
		}
	free(old);
	return 0;
}

/* The continuation of the copy at data, if it has one: its place in *at and *len. */
static bool
cont_get(struct ssd *s, uint64_t data, uint64_t *at, uint64_t *len)
{
	struct cont *c = NULL;

	pthread_mutex_lock(&s->cmu);
	if (s->cbuckets > 0 && (c = *cont_slot(s, data)) != NULL) {
		*at = c->at;
		*len = c->len;
	}
	pthread_mutex_unlock(&s->cmu);
	return c != NULL;
}

/* Remember (or replace) the continuation of the copy at data; -1 when memory ran out. */
static int
cont_put(struct ssd *s, uint64_t data, uint64_t at, uint64_t len)
{
	struct cont **slot, *c;
	int r = -1;

	pthread_mutex_lock(&s->cmu);
	if (cont_room(s) == 0) {
		slot = cont_slot(s, data);
		if ((c = *slot) == NULL && (c = calloc(1, sizeof(*c))) != NULL) {
			*slot = c;
			s->nconts++;
		}
		if (c) {
			*c = (struct cont){ .data = data, .at = at, .len = len, .next = c->next };
			r = 0;
		}
	}
	pthread_mutex_unlock(&s->cmu);
	return r;
}

/* Forget the continuation of the copy at data, handing its place back in *at and *len. */
static bool
cont_take(struct ssd *s, uint64_t data, uint64_t *at, uint64_t *len)
{
	struct cont **slot, *c = NULL;

	pthread_mutex_lock(&s->cmu);
	if (s->cbuckets > 0 && (c = *(slot = cont_slot(s, data))) != NULL) {
		*slot = c->next;
		s->nconts--;
		*at = c->at;
		*len = c->len;
		free(c);
	}
	pthread_mutex_unlock(&s->cmu);
	return c != NULL;
}

/* ---- plain I/O ---- */

static void
put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/*
 * All len bytes at off through fd, written from buf or read into it
 * (then buf is the caller's writable memory); -1 with errno (EIO past
 * the end).
 */
static int
io_all(int fd, bool wr, const void *buf, uint64_t len, uint64_t off)
{
	unsigned char *p = (unsigned char *)buf;

	while (len > 0) {
		/* A transfer of more than SSIZE_MAX is the system's to define: stay far below. */
		size_t n = len > (1u << 30) ? (size_t)1 << 30 : (size_t)len;
		ssize_t r = wr ? pwrite(fd, p, n, (off_t)off) : pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

static void *
aligned_buf(size_t n)
{
	void *p = NULL;

	return posix_memalign(&p, PAGES_SIZE, n) == 0 ? p : NULL;
}

/*
 * The whole pages of len bytes at off (page-aligned) through the direct
 * descriptor: straight from or into buf when it is aligned, else through
 * a bounce buffer of at most IO_CHUNK.
 */
static int
direct_pages(struct ssd *s, bool wr, const void *data, uint64_t len, uint64_t off)
{
	unsigned char *buf = (unsigned char *)data, *bounce;

	if ((uintptr_t)buf % PAGES_SIZE == 0)
		return io_all(s->dfd, wr, buf, len, off);
	if (!(bounce = aligned_buf(len < IO_CHUNK ? (size_t)len : IO_CHUNK)))
		return -1;
	while (len > 0) {
		size_t n = len < IO_CHUNK ? (size_t)len : IO_CHUNK;

		if (wr)
			memcpy(bounce, buf, n);
		if (io_all(s->dfd, wr, bounce, n, off) < 0) {
			free(bounce);
			return -1;
		}
		if (!wr)
			memcpy(buf, bounce, n);
		buf += n;
		off += n;
		len -= n;
	}
	free(bounce);
	return 0;
}

/*
 * Move len bytes at off from or into buf, direct where it can: only the
 * whole 4 KiB pages inside the range go direct, so that no page the
 * page cache may hold for a neighbour (extents share pages: they are
 * laid out in sectors) is written past it. The partial pages at either
 * end go through the buffered descriptor, as headers do.
 */
static int
range_io(struct ssd *s, bool wr, uint64_t off, const void *data, uint64_t len)
{
	const unsigned char *buf = data;
	uint64_t head = (PAGES_SIZE - off % PAGES_SIZE) % PAGES_SIZE, body, tail;

	if (s->dfd < 0)
		return io_all(s->fd, wr, buf, len, off);
	if (head > len)
		head = len;
	body = (len - head) / PAGES_SIZE * PAGES_SIZE;
	tail = len - head - body;
	if (head > 0 && io_all(s->fd, wr, buf, head, off) < 0)
		return -1;
	if (body > 0 && direct_pages(s, wr, buf + head, body, off + head) < 0)
		return -1;
	if (tail > 0 && io_all(s->fd, wr, buf + head + body, tail, off + head + body) < 0)
		return -1;
	return 0;
}

static int
read_range(struct ssd *s, uint64_t off, void *buf, uint64_t len)
{
	return range_io(s, false, off, buf, len);
}

static int
write_range(struct ssd *s, uint64_t off, const void *buf, uint64_t len)
{
	return range_io(s, true, off, buf, len);
}

/* ---- open and close ---- */

uint32_t
ssd_unit_for(uint64_t size)
{
	uint32_t unit = SSD_UNIT;

	while (unit < PAGES_SIZE && size / unit > PAGES_MAX)
		unit *= 2;
	return unit;
}

static void
ssd_close(struct medium *m)
{
	struct ssd *s = ssd_of(m);

	if (s->dfd >= 0)
		close(s->dfd);
	if (s->fd >= 0)
		close(s->fd);
	pages_free(s->pages);
	for (size_t i = 0; i < s->cbuckets; i++)
		for (struct cont *c = s->conts[i], *next; c; c = next) {
			next = c->next;
			free(c);
		}
	free(s->conts);
	pthread_mutex_destroy(&s->cmu);
	free(s->file);
	free(s->dir);
	sodium_memzero(s->key, sizeof(s->key));
	free(s);
}

/* Where the extents are (s->file) and the directory that holds them (s->dir). */
static int
ssd_paths(struct ssd *s, const char *path, struct mc_err *err)
{
	struct stat st;
	char *copy;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (asprintf(&s->file, "%s/%s", path, SSD_FILE) < 0) {
			s->file = NULL;
			return mc_err_errno(err, "cannot allocate the ssd path");
		}
		s->dir = strdup(path);
	} else {
		s->file = strdup(path);
		if ((copy = strdup(path)) != NULL)
			s->dir = strdup(dirname(copy));
		free(copy);
	}
	if (!s->file || !s->dir)
		return mc_err_errno(err, "cannot allocate the ssd path");
	return 0;
}

/*
 * The direct descriptor, when asked for and the filesystem takes it: a
 * read of the first page proves it, as some refuse only at the first
 * transfer. Otherwise -1 and one line saying so. The fault point
 * ssd.direct plays a file system that refuses.
 */
static int
open_direct(const struct ssd *s)
{
	void *page = aligned_buf(PAGES_SIZE);
	int fd = page ? open(s->file, O_RDWR | O_DIRECT | O_CLOEXEC) : -1;

	if (fd >= 0 && mc_fault("ssd.direct")) {
		close(fd);
		fd = -1;
		errno = EINVAL;
	}
	if (fd >= 0 && io_all(fd, false, page, PAGES_SIZE, 0) < 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		mc_info("ssd file '%s': no direct I/O (%s), using the page cache", s->file,
			strerror(errno));
	free(page);
	return fd;
}

/* ---- the superblock ---- */

/* The superblock's checksum, with its own field read as zero. */
static uint64_t
sb_sum(unsigned char *sb, size_t len)
{
	unsigned char saved[8];
	uint64_t sum;

	memcpy(saved, sb + SSD_SB_SUM, 8);
	memset(sb + SSD_SB_SUM, 0, 8);
	sum = mc_checksum(sb, len);
	memcpy(sb + SSD_SB_SUM, saved, 8);
	return sum;
}

/*
 * Take the file's key from its superblock: 1, or 0 with why saying what
 * is wrong with it (then nothing in the file is believed), or -1 when it
 * cannot be read.
 */
static int
sb_read(struct ssd *s, char *why, size_t cap, struct mc_err *err)
{
	unsigned char sb[SSD_SB_BYTES] = { 0 };
	uint64_t len, fmt, page, hdr;
	struct stat st;

	if (fstat(s->fd, &st) < 0)
		return mc_err_errno(err, "cannot stat ssd file '%s'", s->file);
	if (st.st_size < (off_t)sizeof(sb)) {
		snprintf(why, cap, "is too short for a superblock");
		return 0;
	}
	if (io_all(s->fd, false, sb, sizeof(sb), 0) < 0)
		return mc_err_errno(err, "cannot read the superblock of ssd file '%s'", s->file);
	if (memcmp(sb, SSD_SB_MAGIC, SSD_MAGIC_LEN) != 0) {
		/* Format 1 had no superblock: its first extent, if any, began the file. */
		snprintf(why, cap, "%s",
			 memcmp(sb, SSD_MAGIC, SSD_MAGIC_LEN) == 0 || get_le(sb, SSD_MAGIC_LEN) == 0
				 ? "is of format 1, without a superblock"
				 : "has no superblock");
		return 0;
	}
	fmt = get_le(sb + SSD_SB_FORMAT, 4);
	len = get_le(sb + SSD_SB_LEN, 4);
	if (fmt != SSD_FORMAT) {
		/*
		 * Another format's file (an older peer's, or a newer one's) may
		 * hold copies someone wants: it is not this peer's to empty.
		 */
		return mc_err_set(err, MC_ERR_VERSION,
				  "ssd file '%s' is in format %llu; this peer writes format %u: "
				  "move it away (or remove it) to start the tier afresh without "
				  "its copies, or run the mc-peer that wrote it",
				  s->file, (unsigned long long)fmt, SSD_FORMAT);
	}
	if (len < SSD_SB_USED || len > sizeof(sb) ||
	    get_le(sb + SSD_SB_SUM, 8) != sb_sum(sb, len)) {
		snprintf(why, cap, "has a damaged superblock");
		return 0;
	}
	page = get_le(sb + SSD_SB_PAGE, 4);
	hdr = get_le(sb + SSD_SB_HDR, 4);
	/*
	 * A unit larger than this size needs, from when the tier was larger,
	 * is kept: it still counts the space, and the copies stay where they are.
	 */
	if (page < s->unit || page > PAGES_SIZE || (page & (page - 1)) || hdr != page) {
		snprintf(why, cap,
			 "was laid out in units of %llu bytes and headers of %llu, not %u and %u",
			 (unsigned long long)page, (unsigned long long)hdr, s->unit,
			 (unsigned)s->unit);
		return 0;
	}
	s->unit = (uint32_t)page;
	memcpy(s->key, sb + SSD_SB_KEY, SSD_KEY_BYTES);
	return 1;
}

/*
 * A new key in a new superblock, on disk before any header is signed
 * with it: the one write of the file that is synced.
 */
static int
sb_write(struct ssd *s, struct mc_err *err)
{
	unsigned char sb[SSD_SB_BYTES] = { 0 };

	randombytes_buf(s->key, sizeof(s->key));
	memcpy(sb, SSD_SB_MAGIC, SSD_MAGIC_LEN);
	put_le(sb + SSD_SB_FORMAT, SSD_FORMAT, 4);
	put_le(sb + SSD_SB_LEN, SSD_SB_USED, 4);
	put_le(sb + SSD_SB_PAGE, s->unit, 4);
	put_le(sb + SSD_SB_HDR, s->unit, 4);
	memcpy(sb + SSD_SB_KEY, s->key, SSD_KEY_BYTES);
	put_le(sb + SSD_SB_SUM, sb_sum(sb, SSD_SB_USED), 8);
	if (io_all(s->fd, true, sb, sizeof(sb), 0) < 0 || fdatasync(s->fd) < 0)
		return mc_err_errno(err, "cannot write the superblock of ssd file '%s'", s->file);
	return 0;
}

/*
 * Refuse a size the file system cannot hold before reserving any of it:
 * fallocate takes free blocks until it fails, so a size that does not fit
 * would fill the disk for everyone else on it until the file went. What
 * the file already holds (a restart) needs no new room.
 */
static int
fits_on_disk(const struct ssd *s, struct mc_err *err)
{
	struct statvfs fs;
	struct stat st;
	uint64_t held, avail;

	if (fstat(s->fd, &st) < 0 || fstatvfs(s->fd, &fs) < 0)
		return mc_err_errno(err, "cannot measure the room for ssd file '%s'", s->file);
	held = (uint64_t)st.st_blocks * 512;
	avail = (uint64_t)fs.f_bavail * fs.f_frsize;
	if (s->end > held && s->end - held > avail)
		return mc_err_set(err, MC_ERR_SYSTEM,
				  "cannot allocate %llu bytes for ssd file '%s': the file system "
				  "has %llu bytes free",
				  (unsigned long long)(s->end - held), s->file,
				  (unsigned long long)avail);
	return 0;
}

static struct medium *
ssd_open(const struct medium_conf *conf, struct mc_err *err)
{
	struct ssd *s;
	char why[160];
	bool created = false;
	int ok = 0;

	if (!conf->path || !*conf->path) {
		mc_err_set(err, MC_ERR_INVALID, "the %s tier needs a path",
			   mc_tier_name(MC_TIER_SSD));
		return NULL;
	}
	if (sodium_init() < 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot initialize libsodium");
		return NULL;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		mc_err_errno(err, "cannot allocate the %s medium", mc_tier_name(MC_TIER_SSD));
		return NULL;
	}
	s->fd = s->dfd = -1;
	medium_lru_init(&s->lru);
	pthread_mutex_init(&s->cmu, NULL);
	s->unit = ssd_unit_for(conf->size);
	if (ssd_paths(s, conf->path, err) < 0 ||
	    !(s->pages = pages_new_unit(conf->size, s->unit, err)))
		goto fail;
	/* The size is what copies may take: the superblock comes on top. */
	s->end = SSD_SB_BYTES + pages_capacity(s->pages);
	if ((s->fd = open(s->file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0)
		created = true;
	else if (errno != EEXIST || (s->fd = open(s->file, O_RDWR | O_CLOEXEC)) < 0) {
		mc_err_errno(err, "cannot open ssd file '%s'", s->file);
		goto fail;
	}
	if (flock(s->fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			mc_err_set(err, MC_ERR_BUSY, "ssd file '%s' is in use by another peer",
				   s->file);
		else
			mc_err_errno(err, "cannot lock ssd file '%s'", s->file);
		/* Whoever holds it may have made it: it is theirs. */
		created = false;
		goto fail;
	}
	s->fresh = created;
	if (!created && (ok = sb_read(s, why, sizeof(why), err)) < 0)
		goto fail;
	if (!created && ok == 0) {
		/* Without its key nothing in it can be told from what a client wrote. */
		mc_warn("ssd file '%s' %s: starting it afresh, without the copies it held", s->file,
			why);
		if (ftruncate(s->fd, 0) < 0) {
			mc_err_errno(err, "cannot empty ssd file '%s'", s->file);
			goto fail;
		}
		s->fresh = true;
	}
	if (ok == 1 && s->unit != ssd_unit_for(conf->size)) {
		pages_free(s->pages);
		if (!(s->pages = pages_new_unit(conf->size, s->unit, err)))
			goto fail;
	}
	/* Space beyond the size could hold no extent the allocator knows of. */
	if (fits_on_disk(s, err) < 0)
		goto fail;
	if (ftruncate(s->fd, (off_t)s->end) < 0 || fallocate(s->fd, 0, 0, (off_t)s->end) < 0) {
		mc_err_errno(err, "cannot allocate %llu bytes for ssd file '%s'",
			     (unsigned long long)s->end, s->file);
		goto fail;
	}
	if (s->fresh && sb_write(s, err) < 0)
		goto fail;
	if (conf->direct)
		s->dfd = open_direct(s);
	/* A long key's continuation is on top: used counts it, the footprint does not. */
	s->m.page = s->unit;
	s->m.per_copy = s->unit;
	return &s->m;
fail:
	/* A file made here holds nothing: it goes, not to fill the disk it did not fit. */
	if (created)
		unlink(s->file);
	ssd_close(&s->m);
	return NULL;
}

static const char *
ssd_dir(struct medium *m)
{
	return ssd_of(m)->dir;
}

/* ---- space ---- */

static int
ssd_alloc(struct medium *m, uint64_t len, uint64_t *off, struct mc_err *err)
{
	struct ssd *s = ssd_of(m);
	uint64_t with_header;

	if (!atomic_load(&s->recovered))
		MC_BUG("ssd space handed out before recovery");
	if (len == 0)
		return mc_err_set(err, MC_ERR_INVALID, "an ssd extent needs at least one byte");
	if (mc_add_over(s->unit, len, &with_header))
		return mc_err_set(err, MC_ERR_NO_SPACE, "no extent of %llu bytes",
				  (unsigned long long)len);
	if (pages_alloc(s->pages, with_header, off, err) < 0)
		return -1;
	*off += SSD_SB_BYTES + s->unit;
	return 0;
}

/* Make the extent whose header is at hdr unrecoverable. */
static int
clear_header(struct ssd *s, uint64_t hdr)
{
	static const char zero[SSD_MAGIC_LEN];

	return io_all(s->fd, true, zero, sizeof(zero), hdr);
}

static void
ssd_unseal(struct medium *m, uint64_t off, uint64_t len)
{
	struct ssd *s = ssd_of(m);

	/* Nothing was allocated for an empty copy (as in pages_release). */
	if (len == 0)
		return;
	if (clear_header(s, off - s->unit) < 0)
		mc_warn("ssd file '%s': cannot clear the header at %llu: %s", s->file,
			(unsigned long long)(off - s->unit), strerror(errno));
}

static void
ssd_release(struct medium *m, uint64_t off, uint64_t len)
{
	struct ssd *s = ssd_of(m);

	uint64_t at, clen;

	if (len == 0)
		return;
	ssd_unseal(m, off, len);
	/* The header that named the continuation is cleared: its units may go too. */
	if (cont_take(s, off, &at, &clen))
		pages_release(s->pages, at - SSD_SB_BYTES, clen);
	pages_release(s->pages, off - s->unit - SSD_SB_BYTES, s->unit + len);
}

static uint64_t
ssd_capacity(struct medium *m)
{
	return pages_capacity(ssd_of(m)->pages);
}

static uint64_t
ssd_used(struct medium *m)
{
	return pages_used(ssd_of(m)->pages);
}

/* ---- bytes ---- */

static const void *
ssd_read(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err)
{
	struct ssd *s = ssd_of(m);
	uint64_t t0;

	if (!buf) {
		mc_err_set(err, MC_ERR_UNAVAILABLE, "the %s tier cannot lend its bytes",
			   mc_tier_name(MC_TIER_SSD));
		return NULL;
	}
	if (mc_fault("ssd.read")) {
		mc_err_set(err, MC_ERR_SYSTEM, "fault injected: ssd.read");
		return NULL;
	}
	t0 = mc_mono_ns();
	if (read_range(s, off, buf, len) < 0) {
		mc_err_errno(err, "cannot read %llu bytes at %llu of ssd file '%s'",
			     (unsigned long long)len, (unsigned long long)off, s->file);
		return NULL;
	}
	medium_io_read(m, len, mc_mono_ns() - t0);
	return buf;
}

static int
ssd_source(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_src *src,
	   struct mc_err *err)
{
	if (mc_fault("ssd.read"))
		return mc_err_set(err, MC_ERR_SYSTEM, "fault injected: ssd.read");
	/*
	 * The reply's sendfile reads page by page behind the kernel's small
	 * readahead window; asking for the whole range up front lets a cold
	 * copy stream from the device instead.
	 */
	(void)posix_fadvise(ssd_of(m)->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
	*src = mc_bulk_src_fd(ssd_of(m)->fd, off, len);
	medium_io_read(m, len, 0);
	return 0;
}

static int
ssd_sink(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_sink *sink,
	 struct mc_err *err)
{
	if (mc_fault("ssd.write"))
		return mc_err_set(err, MC_ERR_SYSTEM, "fault injected: ssd.write");
	mc_bulk_sink_fd(sink, ssd_of(m)->fd, off, len);
	medium_io_write(m, len, 0);
	return 0;
}

static int
ssd_write(struct medium *m, uint64_t off, const void *buf, uint64_t len, struct mc_err *err)
{
	struct ssd *s = ssd_of(m);
	uint64_t t0;

	if (mc_fault("ssd.write"))
		return mc_err_set(err, MC_ERR_SYSTEM, "fault injected: ssd.write");
	t0 = mc_mono_ns();
	if (write_range(s, off, buf, len) < 0)
		return mc_err_errno(err, "cannot write %llu bytes at %llu of ssd file '%s'",
				    (unsigned long long)len, (unsigned long long)off, s->file);
	medium_io_write(m, len, mc_mono_ns() - t0);
	return 0;
}

/* A client's copy in or out through the buffered descriptor, as a sink's and a source's. */
static int
ssd_client_io(struct medium *m, bool wr, uint64_t off, const void *buf, uint64_t len,
	      struct mc_err *err)
{
	struct ssd *s = ssd_of(m);
	uint64_t t0;

	if (mc_fault(wr ? "ssd.write" : "ssd.read"))
		return mc_err_set(err, MC_ERR_SYSTEM, "fault injected: %s",
				  wr ? "ssd.write" : "ssd.read");
	t0 = mc_mono_ns();
	if (io_all(s->fd, wr, buf, len, off) < 0)
		return mc_err_errno(err, "cannot %s %llu bytes at %llu of ssd file '%s'",
				    wr ? "write" : "read", (unsigned long long)len,
				    (unsigned long long)off, s->file);
	if (wr)
		medium_io_write(m, len, mc_mono_ns() - t0);
	else
		medium_io_read(m, len, mc_mono_ns() - t0);
	return 0;
}

static int
ssd_store(struct medium *m, uint64_t off, const void *buf, uint64_t len, struct mc_err *err)
{
	return ssd_client_io(m, true, off, buf, len, err);
}

static int
ssd_load(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err)
{
	return ssd_client_io(m, false, off, buf, len, err);
}

/* ---- headers ---- */

uint64_t
ssd_header_sum(const unsigned char key[SSD_KEY_BYTES], unsigned char *h, size_t len)
{
	unsigned char saved[8], sum[crypto_shorthash_BYTES];

	memcpy(saved, h + SSD_H_SUM, 8);
	memset(h + SSD_H_SUM, 0, 8);
	crypto_shorthash(sum, h, len, key);
	memcpy(h + SSD_H_SUM, saved, 8);
	return get_le(sum, 8);
}

/* The bytes of the continuation of a header of len bytes: 0 when it fits its room. */
static uint64_t
cont_bytes(const struct ssd *s, uint64_t len)
{
	if (len <= s->unit)
		return 0;
	return (len - s->unit + (s->unit - SSD_MAGIC_LEN) - 1) / (s->unit - SSD_MAGIC_LEN) *
	       s->unit;
}

/* Lay the part of header h (len bytes) past its room out in units, into c. */
static void
cont_image(const struct ssd *s, const unsigned char *h, uint64_t len, unsigned char *c)
{
	uint64_t n = cont_bytes(s, len) / s->unit;

	memset(c, 0, n * s->unit);
	for (uint64_t i = 0, from = s->unit; i < n; i++, from += (s->unit - SSD_MAGIC_LEN)) {
		uint64_t k = len - from < (s->unit - SSD_MAGIC_LEN) ? len - from
								    : (s->unit - SSD_MAGIC_LEN);

		memcpy(c + i * s->unit, SSD_CONT_MAGIC, SSD_MAGIC_LEN);
		memcpy(c + i * s->unit + SSD_MAGIC_LEN, h + from, k);
	}
}

/* Put the continuation units c read back into header h of len bytes; false if one is not one. */
static bool
cont_join(const struct ssd *s, unsigned char *h, uint64_t len, const unsigned char *c)
{
	uint64_t n = cont_bytes(s, len) / s->unit;

	for (uint64_t i = 0, from = s->unit; i < n; i++, from += (s->unit - SSD_MAGIC_LEN)) {
		uint64_t k = len - from < (s->unit - SSD_MAGIC_LEN) ? len - from
								    : (s->unit - SSD_MAGIC_LEN);

		if (memcmp(c + i * s->unit, SSD_CONT_MAGIC, SSD_MAGIC_LEN) != 0)
			return false;
		memcpy(h + from, c + i * s->unit + SSD_MAGIC_LEN, k);
	}
	return true;
}

/*
 * The header of the copy at off, in h (SSD_HDR_MAX bytes, zeroed), but
 * for its continuation's place and its checksum: its length.
 */
static size_t
header_build(unsigned char *h, uint64_t off, uint64_t len, const struct medium_meta *meta)
{
	const uint16_t lens[4] = { meta->tenant_len, meta->key_len, meta->type_len,
				   meta->group_len };
	const char *names[4] = { meta->tenant, meta->key, meta->type, meta->group };
	size_t at = SSD_H_NAMES;

	memcpy(h, SSD_MAGIC, SSD_MAGIC_LEN);
	put_le(h + SSD_H_FORMAT, SSD_FORMAT, 2);
	put_le(h + SSD_H_FLAGS,
	       (meta->hard_pin ? SSD_H_HARD_PIN : 0) | (meta->dynamic ? SSD_H_DYNAMIC : 0), 2);
	put_le(h + SSD_H_OFF, off, 8);
	put_le(h + SSD_H_SIZE, len, 8);
	put_le(h + SSD_H_VERSION, meta->version, 8);
	put_le(h + SSD_H_CHECKSUM, meta->checksum, 8);
	put_le(h + SSD_H_DEADLINE, meta->sp_deadline, 8);
	put_le(h + SSD_H_KEY_LEN, lens[1], 2);
	h[SSD_H_TENANT_LEN] = (unsigned char)lens[0];
	h[SSD_H_TYPE_LEN] = (unsigned char)lens[2];
	h[SSD_H_GROUP_LEN] = (unsigned char)lens[3];
	/* A copy not committed yet (or without a receipt) has a receipt of zeros. */
	if (meta->receipt != NULL)
		memcpy(h + SSD_H_RECEIPT, meta->receipt, SSD_RECEIPT_BYTES);
	for (int i = 0; i < 4; i++) {
		if (lens[i] > 0)
			memcpy(h + at, names[i], lens[i]);
		at += lens[i];
	}
	put_le(h + SSD_H_LEN, at, 4);
	return at;
}

static int
ssd_seal(struct medium *m, uint64_t off, uint64_t len, const struct medium_meta *meta,
	 struct mc_err *err)
{
	struct ssd *s = ssd_of(m);
	unsigned char *h, *c = NULL;
	uint64_t clen, cat = 0, old_at = 0, old_len = 0, rel;
	bool had, fresh = false;
	size_t at;
	int r = -1;

	/* What recovery would not take back is not sealed. */
	if (meta->tenant_len == 0 || meta->tenant_len > MC_NAME_MAX || meta->key_len == 0 ||
	    meta->key_len > MC_KEY_MAX || meta->type_len > MC_NAME_MAX ||
	    meta->group_len > MC_NAME_MAX || meta->size != len || len == 0)
		return mc_err_set(err, MC_ERR_INVALID, "cannot seal a copy of %llu bytes as %llu",
				  (unsigned long long)len, (unsigned long long)meta->size);
	if (!(h = calloc(1, SSD_HDR_MAX)))
		return mc_err_errno(err, "cannot allocate an ssd header");
	at = header_build(h, off, len, meta);
	clen = cont_bytes(s, at);
	had = cont_get(s, off, &old_at, &old_len);
	if (clen > 0) {
		/* Sealed again (pins that came later): the same names, the same units. */
		if (had && old_len == clen) {
			cat = old_at;
		} else if (pages_alloc(s->pages, clen, &rel, err) < 0) {
			goto out;
		} else {
			cat = rel + SSD_SB_BYTES;
			fresh = true;
		}
		put_le(h + SSD_H_CONT, cat, 8);
	}
	put_le(h + SSD_H_SUM, ssd_header_sum(s->key, h, at), 8);
	if (clen > 0) {
		if (!(c = malloc(clen))) {
			mc_err_errno(err, "cannot allocate an ssd header");
			goto undo;
		}
		cont_image(s, h, at, c);
		if (io_all(s->fd, true, c, clen, cat) < 0) {
			mc_err_errno(err, "cannot write the header at %llu of ssd file '%s'",
				     (unsigned long long)cat, s->file);
			goto undo;
		}
	}
	if (fresh && cont_put(s, off, cat, clen) < 0) {
		mc_err_errno(err, "cannot allocate an ssd header");
		goto undo;
	}
	/* One write of the header's room: a torn one fails its checksum. */
	if (io_all(s->fd, true, h, s->unit, off - s->unit) < 0) {
		mc_err_errno(err, "cannot write the header at %llu of ssd file '%s'",
			     (unsigned long long)(off - s->unit), s->file);
		if (fresh && had)
			(void)cont_put(s, off, old_at, old_len);
		else if (fresh)
			(void)cont_take(s, off, &old_at, &old_len);
		goto undo;
	}
	/* The header that names the old continuation is gone from disk: its units too. */
	if (had && (clen == 0 || fresh)) {
		if (clen == 0)
			(void)cont_take(s, off, &old_at, &old_len);
		pages_release(s->pages, old_at - SSD_SB_BYTES, old_len);
	}
	r = 0;
	goto out;
undo:
	if (fresh)
		pages_release(s->pages, cat - SSD_SB_BYTES, clen);
out:
	free(c);
	free(h);
	return r;
}

/*
 * Decode the header h read at hdr into meta (names pointing into h):
 * signed with the file's key, its names of lengths a seal takes, its
 * extent right after it and whole in the file, and its continuation
 * (if any) whole in the file and clear of it. Every bound is checked by
 * subtraction from the file's end, so that no field, however large,
 * makes an offset wrap.
 */
static bool
header_ok(struct ssd *s, unsigned char *h, uint64_t hdr, struct medium_meta *meta)
{
	static const uint16_t most[4] = { MC_NAME_MAX, MC_KEY_MAX, MC_NAME_MAX, MC_NAME_MAX };
	uint64_t len = get_le(h + SSD_H_LEN, 4), size = get_le(h + SSD_H_SIZE, 8), at = SSD_H_NAMES;
	uint64_t data = hdr + s->unit, cat = get_le(h + SSD_H_CONT, 8), clen = cont_bytes(s, len);
	uint16_t lens[4];
	const char *names[4];
	const unsigned char *receipt = NULL;

	if (memcmp(h, SSD_MAGIC, SSD_MAGIC_LEN) != 0 || get_le(h + SSD_H_FORMAT, 2) != SSD_FORMAT ||
	    len < SSD_H_NAMES || len > SSD_HDR_MAX ||
	    get_le(h + SSD_H_SUM, 8) != ssd_header_sum(s->key, h, len))
		return false;
	lens[0] = h[SSD_H_TENANT_LEN];
	lens[1] = (uint16_t)get_le(h + SSD_H_KEY_LEN, 2);
	lens[2] = h[SSD_H_TYPE_LEN];
	lens[3] = h[SSD_H_GROUP_LEN];
	for (int i = 0; i < 4; i++) {
		if (lens[i] > most[i])
			return false;
		names[i] = (const char *)h + at;
		at += lens[i];
	}
	if (at != len || lens[0] == 0 || lens[1] == 0)
		return false;
	if (hdr < SSD_SB_BYTES || hdr > s->end || s->end - hdr <= s->unit ||
	    get_le(h + SSD_H_OFF, 8) != data || size == 0 || size > s->end - data)
		return false;
	if ((clen == 0) != (cat == 0))
		return false;
	if (clen > 0 && (cat < SSD_SB_BYTES || cat % s->unit || cat > s->end ||
			 s->end - cat < clen || (cat < data + size && hdr < cat + clen)))
		return false;
	/* zeros: none (a copy sealed before its commit notice, or by a master without receipts) */
	for (int i = 0; i < SSD_RECEIPT_BYTES && receipt == NULL; i++)
		if (h[SSD_H_RECEIPT + i] != 0)
			receipt = h + SSD_H_RECEIPT;
	*meta = (struct medium_meta){
		.tenant = names[0],
		.key = names[1],
		.type = names[2],
		.group = names[3],
		.tenant_len = lens[0],
		.key_len = lens[1],
		.type_len = lens[2],
		.group_len = lens[3],
		.version = get_le(h + SSD_H_VERSION, 8),
		.size = size,
		.checksum = get_le(h + SSD_H_CHECKSUM, 8),
		.sp_deadline = get_le(h + SSD_H_DEADLINE, 8),
		.hard_pin = (get_le(h + SSD_H_FLAGS, 2) & SSD_H_HARD_PIN) != 0,
		.dynamic = (get_le(h + SSD_H_FLAGS, 2) & SSD_H_DYNAMIC) != 0,
		.receipt = receipt,
	};
	return true;
}

/* Whether the size bytes at off hash to sum, read IO_CHUNK at a time into buf. */
static int
data_ok(struct ssd *s, uint64_t off, uint64_t size, uint64_t sum, unsigned char *buf,
	struct mc_checksum_stream *cs, struct mc_err *err)
{
	uint64_t done = 0;

	mc_checksum_stream_reset(cs);
	while (done < size) {
		uint64_t n = size - done < IO_CHUNK ? size - done : IO_CHUNK;

		if (read_range(s, off + done, buf, n) < 0)
			return mc_err_errno(err, "cannot read %llu bytes at %llu of ssd file '%s'",
					    (unsigned long long)n, (unsigned long long)(off + done),
					    s->file);
		mc_checksum_stream_update(cs, buf, n);
		done += n;
	}
	return mc_checksum_stream_digest(cs) == sum;
}

/* A found extent that is not a copy: never offered again. */
static int
drop_found(struct ssd *s, uint64_t hdr, struct mc_err *err)
{
	atomic_fetch_add(&s->m.io.corrupt, 1);
	if (clear_header(s, hdr) < 0)
		return mc_err_errno(err, "cannot clear the header at %llu of ssd file '%s'",
				    (unsigned long long)hdr, s->file);
	return 0;
}

/* What recovery has read of the file: len bytes from pos, in buf. */
struct scan {
	unsigned char *buf;
	uint64_t pos, len;
};

/*
 * Point *page at the page at *pos, reading on from there when it is not
 * in sc; 0 at the end of what holds data, -1 on an error.
 */
static int
scan_page(struct ssd *s, struct scan *sc, uint64_t *pos, const unsigned char **page,
	  struct mc_err *err)
{
	uint64_t end = s->end;
	off_t d;

	if (*pos < sc->pos || *pos >= sc->pos + sc->len) {
		/* Holes hold no header: never-written space is skipped where the system knows it. */
		d = lseek(s->fd, (off_t)*pos, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			return 0;
		if (d > (off_t)*pos)
			*pos = (uint64_t)d / s->unit * s->unit;
		if (*pos >= end || end - *pos <= s->unit)
			return 0;
		sc->pos = *pos;
		sc->len = end - *pos < IO_CHUNK ? end - *pos : IO_CHUNK;
		if (read_range(s, sc->pos, sc->buf, sc->len) < 0) {
			sc->len = 0;
			return mc_err_errno(err, "cannot read ssd file '%s' at %llu", s->file,
					    (unsigned long long)sc->pos);
		}
	}
	*page = sc->buf + (*pos - sc->pos);
	return 1;
}

/*
 * The header at pos into h (SSD_HDR_MAX bytes), its continuation joined
 * to its room when it has one, read through c: 1 when there is a header
 * to judge, 0 when its continuation is not one (out of the file, or
 * units without their magic), -1 on an error.
 */
static int
header_read(struct ssd *s, uint64_t pos, unsigned char *h, unsigned char *c, struct mc_err *err)
{
	uint64_t len, cat, clen;

	if (read_range(s, pos, h, s->unit) < 0)
		return mc_err_errno(err, "cannot read ssd file '%s' at %llu", s->file,
				    (unsigned long long)pos);
	len = get_le(h + SSD_H_LEN, 4);
	if (len <= s->unit || len > SSD_HDR_MAX)
		return 1;
	/* Unsigned yet: bounds first, then what the units hold; header_ok judges the rest. */
	cat = get_le(h + SSD_H_CONT, 8);
	clen = cont_bytes(s, len);
	if (cat < SSD_SB_BYTES || cat % s->unit || cat > s->end || s->end - cat < clen)
		return 0;
	if (read_range(s, cat, c, clen) < 0)
		return mc_err_errno(err, "cannot read ssd file '%s' at %llu", s->file,
				    (unsigned long long)cat);
	return cont_join(s, h, len, c);
}

/*
 * A copy found whose header has a continuation: its data's space taken
 * back in the scan, its continuation's (which may lie anywhere) after
 * it, all of them in one pass.
 */
struct later {
	uint64_t pos, cat, clen, size;
};

struct laters {
	struct later *v;
	size_t n, cap;
};

static int
later_add(struct laters *l, struct later x)
{
	struct later *v;

	if (l->n == l->cap) {
		if (!(v = realloc(l->v, (l->cap ? 2 * l->cap : 64) * sizeof(*v))))
			return -1;
		l->v = v;
		l->cap = l->cap ? 2 * l->cap : 64;
	}
	l->v[l->n++] = x;
	return 0;
}

static int
later_cmp(const void *x, const void *y)
{
	const struct later *a = x, *b = y;

	return (a->cat > b->cat) - (a->cat < b->cat);
}

/*
 * Take back the continuations of the copies in l, then offer those whose
 * continuation was free to fn, their headers read again into h through
 * c; a continuation over space taken already (a copy's, or another
 * continuation's) makes its copy not one.
 */
static int
recover_laters(struct medium *m, struct laters *l, medium_found_fn fn, void *arg, unsigned char *h,
	       unsigned char *c, struct mc_err *err)
{
	struct ssd *s = ssd_of(m);
	struct pages_range *r;
	struct medium_meta meta;
	bool good;
	int ok;

	if (l->n == 0)
		return 0;
	qsort(l->v, l->n, sizeof(*l->v), later_cmp);
	if (!(r = calloc(l->n, sizeof(*r))))
		return mc_err_errno(err, "cannot allocate for the ssd scan");
	for (size_t i = 0; i < l->n; i++)
		r[i] = (struct pages_range){ l->v[i].cat - SSD_SB_BYTES, l->v[i].clen, false };
	if (pages_take_sorted(s->pages, r, l->n, err) < 0)
		goto fail;
	for (size_t i = 0; i < l->n; i++) {
		const struct later *x = &l->v[i];

		if (r[i].taken && cont_put(s, x->pos + s->unit, x->cat, x->clen) < 0) {
			mc_err_errno(err, "cannot allocate for the ssd scan");
			goto fail;
		}
		ok = r[i].taken ? header_read(s, x->pos, h, c, err) : 0;
		if (ok < 0)
			goto fail;
		good = ok && header_ok(s, h, x->pos, &meta);
		if (good && fn(arg, x->pos + s->unit, &meta) == 0)
			continue;
		/* Not a copy, or handed back: its space goes, its header first. */
		if (!good)
			atomic_fetch_add(&s->m.io.corrupt, 1);
		if (clear_header(s, x->pos) < 0) {
			mc_err_errno(err, "cannot clear the header at %llu of ssd file '%s'",
				     (unsigned long long)x->pos, s->file);
			goto fail;
		}
		ssd_release(m, x->pos + s->unit, x->size);
	}
	free(r);
	return 0;
fail:
	/* What is left taken stays: a recovery that fails stops the medium's use. */
	free(r);
	return -1;
}

static int
ssd_recover(struct medium *m, medium_found_fn fn, void *arg, struct mc_err *err)
{
	struct ssd *s = ssd_of(m);
	struct scan sc = { .buf = aligned_buf(IO_CHUNK) };
	unsigned char *h = aligned_buf(ROUND_UP(SSD_HDR_MAX, s->unit));
	unsigned char *c = aligned_buf(ROUND_UP(cont_bytes(s, SSD_HDR_MAX), PAGES_SIZE));
	struct mc_checksum_stream *cs = mc_checksum_stream_new();
	struct laters l = { 0 };
	uint64_t pos = SSD_SB_BYTES, ext, clen;
	const unsigned char *page = NULL;
	struct medium_meta meta;
	int r = -1, ok;

	if (!sc.buf || !h || !c || !cs) {
		mc_err_errno(err, "cannot allocate for the ssd scan");
		goto out;
	}
	/* A file made (or emptied) at open holds nothing but its superblock. */
	while (!s->fresh && s->end - pos > s->unit) {
		if ((ok = scan_page(s, &sc, &pos, &page, err)) <= 0) {
			if (ok < 0)
				goto out;
			break;
		}
		/* A continuation's units start with their own magic, never a header's. */
		if (memcmp(page, SSD_MAGIC, SSD_MAGIC_LEN) != 0) {
			pos += s->unit;
			continue;
		}
		/* A header: what is in sc.buf is about to be overwritten. */
		sc.len = 0;
		if ((ok = header_read(s, pos, h, c, err)) < 0)
			goto out;
		ok = ok && header_ok(s, h, pos, &meta);
		if (ok &&
		    (ok = data_ok(s, pos + s->unit, meta.size, meta.checksum, sc.buf, cs, err)) < 0)
			goto out;
		ext = s->unit + ROUND_UP(meta.size, s->unit);
		/* Over space taken already: a header this peer signed over a copy since freed. */
		if (ok && pages_take(s->pages, pos - SSD_SB_BYTES, ext, err) < 0) {
			if (err->code != MC_ERR_INVALID)
				goto out;
			ok = 0;
		}
		/*
		 * Not a copy: torn, corrupt, stale, or bytes a client wrote that
		 * look like a header. It may lie over newer extents: look on from
		 * the next unit.
		 */
		if (!ok) {
			if (drop_found(s, pos, err) < 0)
				goto out;
			pos += s->unit;
			continue;
		}
		/*
		 * A copy. What lies inside it is its data, not looked at for
		 * headers: only this peer signs a header, and one it signed
		 * inside a copy that still verifies would have had to be
		 * written over that copy without changing a byte of it.
		 */
		clen = cont_bytes(s, get_le(h + SSD_H_LEN, 4));
		if (clen > 0) {
			if (later_add(&l, (struct later){ pos, get_le(h + SSD_H_CONT, 8), clen,
							  meta.size }) < 0) {
				mc_err_errno(err, "cannot allocate for the ssd scan");
				goto out;
			}
		} else if (fn(arg, pos + s->unit, &meta) != 0) {
			if (clear_header(s, pos) < 0) {
				mc_err_errno(err,
					     "cannot clear the header at %llu of ssd file '%s'",
					     (unsigned long long)pos, s->file);
				goto out;
			}
			ssd_release(m, pos + s->unit, meta.size);
		}
		pos += ext;
	}
	if (recover_laters(m, &l, fn, arg, h, c, err) < 0)
		goto out;
	r = 0;
out:
	atomic_store(&s->recovered, true);
	mc_checksum_stream_free(cs);
	free(l.v);
	free(sc.buf);
	free(h);
	free(c);
	return r;
}

/* ---- order ---- */

static void
ssd_track(struct medium *m, struct medium_order *o, uint64_t len)
{
	struct ssd *s = ssd_of(m);

	/* Freeing gives back the header's room and whole units of data (and a continuation). */
	medium_lru_track(&s->lru, o, s->unit + ROUND_UP(len, s->unit));
}

static void
ssd_untrack(struct medium *m, struct medium_order *o)
{
	medium_lru_untrack(&ssd_of(m)->lru, o);
}

static size_t
ssd_offer(struct medium *m, struct medium_offer *out, size_t max)
{
	return medium_lru_offer(&ssd_of(m)->lru, out, max);
}

const struct medium_ops medium_ssd = {
	.blocking = true,
	.open = ssd_open,
	.close = ssd_close,
	.alloc = ssd_alloc,
	.release = ssd_release,
	.unseal = ssd_unseal,
	.read = ssd_read,
	.source = ssd_source,
	.sink = ssd_sink,
	.store = ssd_store,
	.load = ssd_load,
	.write = ssd_write,
	.seal = ssd_seal,
	.recover = ssd_recover,
	.dir = ssd_dir,
	.capacity = ssd_capacity,
	.used = ssd_used,
	.track = ssd_track,
	.untrack = ssd_untrack,
	.offer = ssd_offer,
};
