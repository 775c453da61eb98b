/*
 * mc-ssdforge: an SSD extent made from outside the peer, as mc-peer(8)
 * documents the extents file, for the suites that plant headers where
 * a restarted peer's recovery looks (tests/cli/ssd-crash.bats).
 *
 *   mc-ssdforge [OPTIONS] DATA
 *   mc-ssdforge --superblock [--format N]
 *
 * Writes to stdout the extent a peer would seal for a copy of DATA's
 * bytes whose header is at file offset --at: the header's room (one
 * sector in format 3, two pages in format 2, one page in format 1),
 * then DATA's bytes. The header names --tenant and --key at --version,
 * with DATA's own checksum, and its checksum is what an outsider can
 * compute: XXH3-64 of the header (the only sum of format 1; for the
 * later formats a guess without the file's key). --key-from FILE signs
 * it as the peer does, with the key in the superblock of extents file
 * FILE: what someone who can read the file could do, no client. A key
 * too long for a format 3 header's room is refused: its continuation
 * would lie elsewhere. --bad spoils one thing, the rest kept
 * well-formed and signed:
 *
 *   sum     the header's checksum       data    the data's checksum
 *   len     a header length past the longest header
 *   names   name lengths that overrun the header's length
 *   tenant  a tenant longer than a name may be
 *   nokey   an empty key
 *   offset  a data offset that is not right after the header
 *   size    a size that runs past --file-end (default: none)
 *   huge    a size that wraps any offset it is added to
 *   empty   a size of zero
 *
 * --superblock writes instead the superblock of a file of --format N
 * (2 or 3) laid out as that format was, with a random key: a file of an
 * older peer, for the suites that check what a peer makes of one.
 *
 * Exit status: 0 written, 1 a file could not be read or written, 64 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "mc/checksum.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/opt.h"
#include "mc/proto.h"

#define PAGE 4096u
#define SECTOR 512u
/* Fields of format 1 and 2 extent headers, little-endian. */
#define H2_FORMAT 8
#define H2_LEN 12
#define H2_OFF 24
#define H2_SIZE 32
#define H2_VERSION 40
#define H2_CHECKSUM 48
#define H2_LENS 68
#define H2_NAMES 80
#define HDR2_BYTES ((H2_NAMES + 3 * MC_NAME_MAX + MC_KEY_MAX + PAGE - 1) / PAGE * PAGE)
/* Fields of format 3 extent headers (mc-peer(8), FILES). */
#define H3_FORMAT 8
#define H3_LEN 12
#define H3_OFF 24
#define H3_SIZE 32
#define H3_VERSION 40
#define H3_CHECKSUM 48
#define H3_KEY_LEN 72
#define H3_TENANT_LEN 74
#define H3_NAMES 112
#define HDR3_BYTES SECTOR
#define HDR3_MAX (H3_NAMES + 3 * MC_NAME_MAX + MC_KEY_MAX)
/* Both: where the checksum is. */
#define H_SUM 16
/* The superblock: where the file's key is, how long it is, the rest of it. */
#define SB_FORMAT 8
#define SB_LEN 12
#define SB_SUM 16
#define SB_PAGE 24
#define SB_HDR 28
#define SB_KEY 32
#define KEY_BYTES 16
#define SB_USED (SB_KEY + KEY_BYTES)

static struct {
	uint64_t at, version, format, file_end;
	const char *tenant, *key, *key_from, *bad;
	bool superblock;
} fo = {
	.version = 1,
	.format = 3,
	.tenant = "default",
};

static const struct mc_opt opts[] = {
	{ "at", 0, "N", NULL, "file offset of the header (a sector boundary)", mc_set_u64, &fo.at },
	{ "format", 0, "N", NULL, "the header's format: 1, 2 or 3 (default 3)", mc_set_u64,
	  &fo.format },
	{ "tenant", 0, "STR", NULL, "tenant it names (default \"default\")", mc_set_str,
	  &fo.tenant },
	{ "key", 0, "STR", NULL, "key it names (required)", mc_set_str, &fo.key },
	{ "version", 0, "N", NULL, "version it names (default 1)", mc_set_u64, &fo.version },
	{ "key-from", 0, "FILE", NULL, "sign with the key of this extents file's superblock",
	  mc_set_str, &fo.key_from },
	{ "bad", 0, "STR", NULL, "spoil one thing: sum, data, len, names, tenant, nokey, ...",
	  mc_set_str, &fo.bad },
	{ "file-end", 0, "N", NULL, "the file's end, for --bad size", mc_set_u64, &fo.file_end },
	{ "superblock", 0, NULL, NULL, "write a superblock of --format instead", mc_set_flag,
	  &fo.superblock },
	{ 0 },
};

static const struct mc_opt_spec spec = {
	.usage = "mc-ssdforge [OPTIONS] DATA | --superblock [--format N]",
	.summary = "write an ssd extent as an outsider can make one",
	.opts = opts,
	.version = "mc-ssdforge " MC_VERSION,
};

static void
put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* All of path, in *len bytes; dies when it cannot. */
static unsigned char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL, *grown;
	size_t cap = 0, n;

	if (!f)
		mc_die(MC_EXIT_FAIL, "cannot open '%s': %s", path, strerror(errno));
	*len = 0;
	do {
		if (*len == cap) {
			cap = cap ? 2 * cap : 1 << 16;
			if (!(grown = realloc(buf, cap)))
				mc_die(MC_EXIT_SOFTWARE, "out of memory");
			buf = grown;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0);
	if (ferror(f))
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", path, strerror(errno));
	fclose(f);
	return buf;
}

static void
read_key(const char *path, unsigned char key[KEY_BYTES])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || pread(fd, key, KEY_BYTES, SB_KEY) != KEY_BYTES)
		mc_die(MC_EXIT_FAIL, "cannot read the key of '%s': %s", path, strerror(errno));
	close(fd);
}

static bool
bad(const char *what)
{
	return fo.bad && strcmp(fo.bad, what) == 0;
}

/* A superblock of format fmt, as that format laid one out, with a random key. */
static void
superblock(void)
{
	static unsigned char sb[PAGE];

	if (fo.format != 2 && fo.format != 3)
		mc_die(MC_EXIT_USAGE, "a superblock is of format 2 or 3; try --help");
	memcpy(sb, "mcextsup", 8);
	put_le(sb + SB_FORMAT, fo.format, 4);
	put_le(sb + SB_LEN, SB_USED, 4);
	put_le(sb + SB_PAGE, fo.format == 2 ? PAGE : SECTOR, 4);
	put_le(sb + SB_HDR, fo.format == 2 ? HDR2_BYTES : HDR3_BYTES, 4);
	randombytes_buf(sb + SB_KEY, KEY_BYTES);
	put_le(sb + SB_SUM, mc_checksum(sb, SB_USED), 8);
	if (fwrite(sb, 1, sizeof(sb), stdout) != sizeof(sb) || fflush(stdout) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write the superblock: %s", strerror(errno));
}

/*
 * The header for the size bytes of data (len of them, checksum sum) in
 * h, of the room's bytes; the length its checksum covers in *at.
 */
static size_t
header(unsigned char *h, const unsigned char *tp, size_t tlen, size_t klen, uint64_t size,
       uint64_t sum, size_t *at)
{
	bool v3 = fo.format == 3;
	size_t room = v3 ? HDR3_BYTES : HDR2_BYTES, most = v3 ? HDR3_MAX : HDR2_BYTES;

	*at = v3 ? H3_NAMES : H2_NAMES;
	memcpy(h, "mcextent", 8);
	put_le(h + (v3 ? H3_FORMAT : H2_FORMAT), fo.format, v3 ? 2 : 4);
	put_le(h + (v3 ? H3_OFF : H2_OFF), fo.at + room + (bad("offset") ? PAGE : 0), 8);
	put_le(h + (v3 ? H3_SIZE : H2_SIZE), size, 8);
	put_le(h + (v3 ? H3_VERSION : H2_VERSION), fo.version, 8);
	put_le(h + (v3 ? H3_CHECKSUM : H2_CHECKSUM), sum, 8);
	if (v3) {
		h[H3_TENANT_LEN] = (unsigned char)tlen;
		put_le(h + H3_KEY_LEN, klen + (bad("names") ? 64 : 0), 2);
	} else {
		put_le(h + H2_LENS, tlen, 2);
		put_le(h + H2_LENS + 2, klen + (bad("names") ? 64 : 0), 2);
	}
	memcpy(h + *at, tp, tlen);
	*at += tlen;
	memcpy(h + *at, fo.key, klen);
	*at += klen;
	put_le(h + (v3 ? H3_LEN : H2_LEN), bad("len") ? most + PAGE : *at, 4);
	return room;
}

int
main(int argc, char **argv)
{
	static const char *const bads[] = { "sum",   "data",   "len",  "names", "tenant",
					    "nokey", "offset", "size", "huge",	"empty" };
	static unsigned char h[HDR2_BYTES], tenant[2 * MC_NAME_MAX];
	unsigned char key[KEY_BYTES], sum[crypto_shorthash_BYTES];
	const unsigned char *tp;
	unsigned char *data;
	size_t len, tlen, klen, at, room;
	uint64_t size;
	bool known = fo.bad == NULL;
	int i;

	mc_log_init("mc-ssdforge", 0);
	i = mc_opt_parse(&spec, argc, argv);
	if (sodium_init() < 0)
		mc_die(MC_EXIT_SOFTWARE, "cannot initialize libsodium");
	if (fo.superblock) {
		if (argc - i != 0)
			mc_die(MC_EXIT_USAGE,
			       "--superblock takes no DATA; try 'mc-ssdforge --help'");
		superblock();
		return MC_EXIT_OK;
	}
	if (argc - i != 1)
		mc_die(MC_EXIT_USAGE, "want one DATA file; try 'mc-ssdforge --help'");
	for (size_t b = 0; !known && b < sizeof(bads) / sizeof(bads[0]); b++)
		known = bad(bads[b]);
	if (!fo.key || !*fo.key || strlen(fo.key) > MC_KEY_MAX || strlen(fo.tenant) > MC_NAME_MAX)
		mc_die(MC_EXIT_USAGE, "invalid --key or --tenant: 1..%d and 0..%d bytes",
		       MC_KEY_MAX, MC_NAME_MAX);
	if (fo.format == 3 && H3_NAMES + 2 * MC_NAME_MAX + strlen(fo.key) > HDR3_BYTES)
		mc_die(MC_EXIT_USAGE, "a --key this long needs a continuation; keep it shorter");
	if (!known || fo.at % SECTOR || fo.format < 1 || fo.format > 3 ||
	    (bad("size") && fo.file_end == 0))
		mc_die(MC_EXIT_USAGE, "invalid --bad, --at, --format or --file-end; try --help");
	data = slurp(argv[i], &len);
	tp = (const unsigned char *)fo.tenant;
	tlen = strlen(fo.tenant);
	if (bad("tenant")) {
		/* one byte past a name's longest: what the length field can still say */
		memset(tenant, 't', sizeof(tenant));
		tp = tenant;
		tlen = fo.format == 3 ? MC_NAME_MAX + 1 : sizeof(tenant);
	}
	klen = bad("nokey") ? 0 : strlen(fo.key);
	room = fo.format == 3 ? HDR3_BYTES : HDR2_BYTES;
	size = bad("empty") ? 0 : len;
	if (bad("size"))
		size = fo.file_end - fo.at - room + PAGE;
	if (bad("huge"))
		size = UINT64_MAX - PAGE;

	room = header(h, tp, tlen, klen, size, mc_checksum(data, len) ^ (bad("data") ? 1 : 0), &at);
	/* The sum covers the header's length; a spoilt length is signed as it is cut. */
	if (fo.key_from) {
		read_key(fo.key_from, key);
		crypto_shorthash(sum, h, at, key);
		memcpy(h + H_SUM, sum, 8);
	} else {
		put_le(h + H_SUM, mc_checksum(h, at), 8);
	}
	if (bad("sum"))
		h[H_SUM] ^= 1;
	if (fwrite(h, 1, room, stdout) != room ||
	    (len > 0 && fwrite(data, 1, len, stdout) != len) || fflush(stdout) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write the extent: %s", strerror(errno));
	free(data);
	return MC_EXIT_OK;
}
