/*
 * mc-ssdforge: an SSD extent made from outside the peer, as mc-peer(8)
 * documents the extents file, for the suites that plant headers where
 * a restarted peer's recovery looks (tests/cli/ssd-crash.bats).
 *
 *   mc-ssdforge [OPTIONS] DATA
 *
 * Writes to stdout the extent a peer would seal for a copy of DATA's
 * bytes whose header is at file offset --at: the header's pages, then
 * DATA's bytes. The header names --tenant and --key at --version, with
 * DATA's own checksum, and its checksum is what an outsider can compute:
 * XXH3-64 of the header (the only sum of format 1; for format 2 a guess
 * without the file's key). --key-from FILE signs it as the peer does,
 * with the key in the superblock of extents file FILE: what someone who
 * can read the file could do, no client. --bad spoils one thing, the
 * rest kept well-formed and signed:
 *
 *   sum     the header's checksum       data    the data's checksum
 *   len     a header length past the header's pages
 *   names   name lengths that overrun the header's length
 *   tenant  a tenant longer than a name may be
 *   nokey   an empty key
 *   offset  a data offset that is not right after the header
 *   size    a size that runs past --file-end (default: none)
 *   huge    a size that wraps any offset it is added to
 *   empty   a size of zero
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
/* Fields of the extent header (mc-peer(8), FILES), little-endian. */
#define H_FORMAT 8
#define H_LEN 12
#define H_SUM 16
#define H_OFF 24
#define H_SIZE 32
#define H_VERSION 40
#define H_CHECKSUM 48
#define H_DEADLINE 56
#define H_FLAGS 64
#define H_LENS 68
#define H_NAMES 80
#define HDR_BYTES ((H_NAMES + 3 * MC_NAME_MAX + MC_KEY_MAX + PAGE - 1) / PAGE * PAGE)
/* Where the superblock keeps the file's key, and how long it is. */
#define SB_KEY 32
#define KEY_BYTES 16

static struct {
	uint64_t at, version, format, file_end;
	const char *tenant, *key, *key_from, *bad;
} fo = {
	.version = 1,
	.format = 2,
	.tenant = "default",
};

static const struct mc_opt opts[] = {
	{ "at", 0, "N", NULL, "file offset of the header (a page boundary)", mc_set_u64, &fo.at },
	{ "format", 0, "N", NULL, "the header's format: 1 or 2 (default 2)", mc_set_u64,
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
	{ 0 },
};

static const struct mc_opt_spec spec = {
	.usage = "mc-ssdforge [OPTIONS] DATA",
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

int
main(int argc, char **argv)
{
	static const char *const bads[] = { "sum",   "data",   "len",  "names", "tenant",
					    "nokey", "offset", "size", "huge",	"empty" };
	static unsigned char h[HDR_BYTES], tenant[2 * MC_NAME_MAX];
	unsigned char key[KEY_BYTES], sum[crypto_shorthash_BYTES];
	const unsigned char *tp;
	unsigned char *data;
	size_t len, tlen, klen, at = H_NAMES;
	uint64_t size;
	bool known = fo.bad == NULL;
	int i;

	mc_log_init("mc-ssdforge", 0);
	i = mc_opt_parse(&spec, argc, argv);
	if (argc - i != 1)
		mc_die(MC_EXIT_USAGE, "want one DATA file; try 'mc-ssdforge --help'");
	for (size_t b = 0; !known && b < sizeof(bads) / sizeof(bads[0]); b++)
		known = bad(bads[b]);
	if (!fo.key || !*fo.key || strlen(fo.key) > MC_KEY_MAX || strlen(fo.tenant) > MC_NAME_MAX)
		mc_die(MC_EXIT_USAGE, "invalid --key or --tenant: 1..%d and 0..%d bytes",
		       MC_KEY_MAX, MC_NAME_MAX);
	if (!known || fo.at % PAGE || (fo.format != 1 && fo.format != 2) ||
	    (bad("size") && fo.file_end == 0))
		mc_die(MC_EXIT_USAGE, "invalid --bad, --at, --format or --file-end; try --help");
	if (sodium_init() < 0)
		mc_die(MC_EXIT_SOFTWARE, "cannot initialize libsodium");
	data = slurp(argv[i], &len);
	tp = (const unsigned char *)fo.tenant;
	tlen = strlen(fo.tenant);
	if (bad("tenant")) {
		memset(tenant, 't', sizeof(tenant));
		tp = tenant;
		tlen = sizeof(tenant);
	}
	klen = bad("nokey") ? 0 : strlen(fo.key);
	size = bad("empty") ? 0 : len;
	if (bad("size"))
		size = fo.file_end - fo.at - HDR_BYTES + PAGE;
	if (bad("huge"))
		size = UINT64_MAX - PAGE;

	memcpy(h, "mcextent", 8);
	put_le(h + H_FORMAT, fo.format, 4);
	put_le(h + H_OFF, fo.at + HDR_BYTES + (bad("offset") ? PAGE : 0), 8);
	put_le(h + H_SIZE, size, 8);
	put_le(h + H_VERSION, fo.version, 8);
	put_le(h + H_CHECKSUM, mc_checksum(data, len) ^ (bad("data") ? 1 : 0), 8);
	put_le(h + H_LENS, tlen, 2);
	put_le(h + H_LENS + 2, klen, 2);
	memcpy(h + at, tp, tlen);
	at += tlen;
	memcpy(h + at, fo.key, klen);
	at += klen;
	if (bad("names"))
		put_le(h + H_LENS + 2, klen + 64, 2);
	put_le(h + H_LEN, bad("len") ? HDR_BYTES + PAGE : at, 4);
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
	if (fwrite(h, 1, sizeof(h), stdout) != sizeof(h) ||
	    (len > 0 && fwrite(data, 1, len, stdout) != len) || fflush(stdout) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write the extent: %s", strerror(errno));
	free(data);
	return MC_EXIT_OK;
}
