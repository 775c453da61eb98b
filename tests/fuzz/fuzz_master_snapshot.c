/*
 * libFuzzer target for the snapshot reader and the master's loader. The
 * first byte says what the rest is:
 *   even  a snapshot file as it is, framing, compression and checksums
 *         included (what a disk or snapshot_restore hands the master);
 *   odd   a plain header map of counts then records, bare msgpack (as
 *         mc-snapgen --plain writes them), which the target seals into
 *         a file with the libmc writer first, so the mutations reach the
 *         contents behind valid checksums: hostile contents.
 * A master, started as mc-master starts, restores the file as --restore
 * does: it loads it or refuses it, and then still serves what it held.
 * Build and run: make fuzz (needs clang).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mc/io.h"
#include "mc/log.h"
#include "mc/snapshot.h"
#include "mc/wire.h"
#include "master.h"
#include "msnap.h"
#include "start.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct master m;
static int file = -1;
static char path[64];

static void
start(void)
{
	mc_log_init("fuzz_master_snapshot", 0);
	mc_log_set_level(MC_LOG_ERROR);
	master_defaults(&m.cfg);
	snprintf(m.master_id, sizeof(m.master_id), "fuzz");
	if ((m.base = event_base_new()) == NULL || master_start(&m, TENANTS_MAX, 64) != 0)
		abort();
	if ((file = memfd_create("fuzz-snapshot", MFD_CLOEXEC)) < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", file);
	m.cfg.restore = path;
}

static uint64_t
count(const msgpack_object *header, const char *key)
{
	uint64_t v = 0;
	struct mc_err err;

	return mc_map_u64(header, key, &v, &err) == 0 ? v : 0;
}

/*
 * Seal the plain input into file: its first object gives the header's
 * counts, every other one is a record. Bytes that are not a whole
 * msgpack object end the records; 0 when something was written.
 */
static int
seal(const uint8_t *data, size_t size)
{
	struct mc_snap_header h = { .version = MC_SNAP_VERSION };
	struct mc_snap_writer *w;
	msgpack_unpacked z;
	struct mc_err err;
	const char *why;
	size_t len, off;
	int rc = -1;

	msgpack_unpacked_init(&z);
	off = 0;
	if (mc_wire_check(data, size, MC_SNAP_MAX_RECORD, &len, &why) != MC_WIRE_WHOLE ||
	    msgpack_unpack_next(&z, (const char *)data, len, &off) != MSGPACK_UNPACK_SUCCESS)
		goto out;
	snprintf(h.master_id, sizeof(h.master_id), "fuzz");
	h.created = count(&z.data, "created");
	h.objects = count(&z.data, "objects");
	h.peers = count(&z.data, "peers");
	h.tenants = count(&z.data, "tenants");
	h.bytes = count(&z.data, "bytes");
	if ((w = mc_snap_writer_open(file, &h, 1, &err)) == NULL)
		goto out;
	while (off < size && mc_wire_check(data + off, size - off, MC_SNAP_MAX_RECORD, &len,
					   &why) == MC_WIRE_WHOLE) {
		size_t at = 0;

		if (msgpack_unpack_next(&z, (const char *)data + off, len, &at) !=
		    MSGPACK_UNPACK_SUCCESS)
			break;
		msgpack_pack_object(mc_snap_writer_record(w), z.data);
		if (mc_snap_writer_end_record(w, &err) != 0) {
			mc_snap_writer_abort(w);
			goto out;
		}
		off += len;
	}
	rc = mc_snap_writer_finish(w, &err);
out:
	msgpack_unpacked_destroy(&z);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (m.base == NULL)
		start();
	if (ftruncate(file, 0) != 0 || lseek(file, 0, SEEK_SET) != 0)
		abort();
	if ((data[0] & 1) == 0) {
		if (mc_write_all(file, data + 1, size - 1) != 0)
			abort();
	} else if (seal(data + 1, size - 1) != 0) {
		return 0;
	}
	/* a refused file is an answer too: the master goes on with what it held */
	(void)msnap_restore_startup(&m);
	return 0;
}
