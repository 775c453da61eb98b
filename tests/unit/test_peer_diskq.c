/*
 * Unit tests for the peer's disk queue (cmd/mc-peer/diskq.c) over a real
 * SSD medium in a temporary directory: a store writes, hashes and seals
 * on a worker while the loop goes on (a paused write does not hold the
 * caller), a load reads the bytes back, the staging budget refuses past
 * its size and takes back what is given back, a failed write reaches its
 * completion with the error, reseals reach the disk in call order with
 * their names copied, and freeing the queue runs every completion once.
 */
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/checksum.h"
#include "mc/fault.h"

#include "diskq.h"
#include "tap.h"

#define SIZE (8u << 20)
#define LEN (256u << 10)

static char dir[64] = "/tmp/test_peer_diskq.XXXXXX";
static char path[128];
static struct event_base *base;

struct result {
	int calls;
	bool failed;
	char msg[256];
};

static void
done(void *arg, const struct mc_err *err)
{
	struct result *r = arg;

	r->calls++;
	r->failed = err != NULL;
	snprintf(r->msg, sizeof(r->msg), "%s", err ? err->msg : "");
}

/* Run the loop until r's completion ran (or about 10 s passed). */
static void
wait_for(const struct result *r)
{
	for (int i = 0; i < 10000 && r->calls == 0; i++) {
		struct timeval tv = { 0, 1000 };

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

static int
keep(void *arg, uint64_t off, const struct medium_meta *meta)
{
	struct medium_meta *seen = arg;
	static char key[64], type[64];

	(void)off;
	*seen = *meta;
	snprintf(key, sizeof(key), "%.*s", (int)meta->key_len, meta->key);
	seen->key = key;
	snprintf(type, sizeof(type), "%.*s", (int)meta->type_len, meta->type);
	seen->type = type;
	return 0;
}

static struct medium *
open_ssd(bool fresh, struct medium_meta *seen)
{
	struct mc_err err;
	struct medium *m;

	if (fresh)
		unlink(path);
	m = medium_open(MC_TIER_SSD,
			&(struct medium_conf){ .size = SIZE, .path = path, .direct = true }, &err);
	if (!m || medium_recover(m, keep, seen, &err) < 0) {
		printf("Bail out! cannot open an ssd medium at %s: %s\n", path, err.msg);
		exit(1);
	}
	return m;
}

static struct medium_meta
meta_of(const char *key, uint64_t size, bool hard_pin)
{
	return (struct medium_meta){ .tenant = "t",
				     .tenant_len = 1,
				     .key = key,
				     .key_len = (uint16_t)strlen(key),
				     .version = 1,
				     .size = size,
				     .hard_pin = hard_pin };
}

static void
test_store_and_load(void)
{
	struct medium_meta seen = { 0 }, meta = meta_of("k", LEN, false);
	struct medium *m = open_ssd(true, &seen);
	struct mc_err err;
	struct diskq *q = diskq_new(base, 4 * LEN, &err);
	struct result w = { 0 }, rd = { 0 };
	uint64_t off, sum = 0;
	unsigned char *buf, *back;

	if (!q || medium_alloc(m, LEN, &off, &err) < 0) {
		printf("Bail out! %s\n", err.msg);
		exit(1);
	}
	buf = diskq_stage(q, LEN);
	for (size_t i = 0; buf && i < LEN; i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	TAP_OK(buf != NULL && ((uintptr_t)buf & 4095) == 0,
	       "stage: a page-aligned buffer from the budget");
	diskq_store(q, m, off, buf, LEN, &meta, &sum, done, &w);
	TAP_OK(w.calls == 0, "store: queued, its completion not run in the call");
	wait_for(&w);
	TAP_OK(w.calls == 1 && !w.failed, "store: the completion ran once, on the loop (%s)",
	       w.msg);
	TAP_OK(sum == mc_checksum(buf, LEN), "store: the worker hashed the bytes it wrote");
	back = diskq_stage(q, LEN);
	diskq_load(q, m, off, LEN, back, done, &rd);
	wait_for(&rd);
	TAP_OK(rd.calls == 1 && !rd.failed && back && memcmp(back, buf, LEN) == 0,
	       "load: a worker read the same bytes back (%s)", rd.msg);
	diskq_unstage(q, back, LEN);
	diskq_unstage(q, buf, LEN);
	diskq_free(q);
	medium_close(m);
	memset(&seen, 0, sizeof(seen));
	m = open_ssd(false, &seen);
	TAP_OK(seen.size == LEN && seen.checksum == sum && strcmp(seen.key, "k") == 0,
	       "store: sealed with the worker's checksum, recovered after a reopen");
	medium_close(m);
}

static void
test_budget(void)
{
	struct mc_err err;
	struct diskq *q = diskq_new(base, 64u << 10, &err);
	struct diskq_stats st;
	void *a, *b, *c;

	a = diskq_stage(q, 30u << 10);
	b = diskq_stage(q, 40u << 10);
	diskq_stats(q, &st);
	TAP_OK(a != NULL && b == NULL && st.staged_bytes == (32u << 10),
	       "budget: 30 KiB staged as 32 of 64, 40 more (as 64) refused (%llu held)",
	       (unsigned long long)st.staged_bytes);
	TAP_OK(diskq_stage(q, 0) == NULL, "budget: nothing to stage is refused");
	diskq_unstage(q, a, 30u << 10);
	b = diskq_stage(q, 32u << 10);
	TAP_OK(b == a, "budget: a buffer given back is kept for the next copy of its size");
	diskq_unstage(q, b, 32u << 10);
	c = diskq_stage(q, 64u << 10);
	diskq_stats(q, &st);
	TAP_OK(c != NULL && st.staged_bytes == (64u << 10),
	       "budget: what was given back can be staged again, all of it");
	diskq_unstage(q, c, 64u << 10);
	diskq_count_loop(q, true);
	diskq_count_loop(q, false);
	diskq_count_loop(q, false);
	diskq_stats(q, &st);
	TAP_OK(st.staged_bytes == 0 && st.loop_writes == 1 && st.loop_reads == 2,
	       "budget: streams on the loop are counted by direction");
	diskq_free(q);
}

static void
test_failure_and_pause(void)
{
	struct medium_meta seen, meta = meta_of("f", LEN, false);
	struct medium *m = open_ssd(true, &seen);
	struct mc_err err;
	struct diskq *q = diskq_new(base, 4 * LEN, &err);
	struct result w = { 0 }, p = { 0 };
	struct diskq_stats st;
	char flag[192];
	uint64_t off;
	void *buf = diskq_stage(q, LEN);

	medium_alloc(m, LEN, &off, &err);
	memset(buf, 1, LEN);
	setenv("MC_FAULT", "ssd.write:nth=1", 1);
	mc_fault_reset();
	diskq_store(q, m, off, buf, LEN, &meta, NULL, done, &w);
	wait_for(&w);
	diskq_stats(q, &st);
	TAP_OK(w.calls == 1 && w.failed && strstr(w.msg, "ssd.write") != NULL && st.failed == 1,
	       "failure: a write that fails reaches its completion with the error (%s)", w.msg);

	/* A write stuck on the device holds a worker, never the caller. */
	setenv("MC_FAULT", "ssd.write:pause", 1);
	setenv("MC_FAULT_DIR", dir, 1);
	mc_fault_reset();
	snprintf(flag, sizeof(flag), "%s/ssd.write.paused", dir);
	diskq_store(q, m, off, buf, LEN, &meta, NULL, done, &p);
	for (int i = 0; i < 10000 && access(flag, F_OK) != 0; i++)
		usleep(1000);
	TAP_OK(access(flag, F_OK) == 0 && p.calls == 0,
	       "pause: the write waits on a worker while the caller goes on");
	snprintf(flag, sizeof(flag), "%s/ssd.write", dir);
	close(open(flag, O_CREAT | O_WRONLY, 0600));
	wait_for(&p);
	TAP_OK(p.calls == 1 && !p.failed, "pause: released, the write completes (%s)", p.msg);
	unsetenv("MC_FAULT");
	mc_fault_reset();
	diskq_unstage(q, buf, LEN);
	diskq_free(q);
	medium_close(m);
}

static void
test_reseal_order_and_free(void)
{
	struct medium_meta seen = { 0 }, meta;
	struct medium *m = open_ssd(true, &seen);
	struct mc_err err;
	struct diskq *q = diskq_new(base, 4 * LEN, &err);
	struct result w = { 0 }, r1 = { 0 }, r2 = { 0 }, late = { 0 }, last = { 0 };
	char key[8] = "pinned";
	uint64_t off, sum = 0;
	void *buf = diskq_stage(q, LEN);

	medium_alloc(m, LEN, &off, &err);
	memset(buf, 2, LEN);
	meta = meta_of(key, LEN, false);
	diskq_store(q, m, off, buf, LEN, &meta, &sum, done, &w);
	wait_for(&w);
	meta.checksum = sum; /* what recovery checks the bytes against */
	diskq_reseal(q, m, off, LEN, &meta, done, &r1);
	meta.hard_pin = true;
	diskq_reseal(q, m, off, LEN, &meta, done, &r2);
	memcpy(key, "xxxxxx", 6); /* the queue copied the names */
	wait_for(&r2);
	wait_for(&r1);
	TAP_OK(r1.calls == 1 && r2.calls == 1 && !r1.failed && !r2.failed,
	       "reseal: both completions ran");
	diskq_load(q, m, off, LEN, buf, done, &late);
	/* queued just before the stop: the stop writes it, as it accepted it */
	memcpy(key, "pinned", 6);
	meta.type = "kv";
	meta.type_len = 2;
	diskq_reseal(q, m, off, LEN, &meta, done, &last);
	diskq_free(q);
	TAP_OK(late.calls == 1 && !late.failed,
	       "free: a job still queued runs to its end, its completion once (%s)", late.msg);
	TAP_OK(last.calls == 1 && !last.failed, "free: a header queued last is written too (%s)",
	       last.msg);
	free(buf); /* its budget went with the queue */
	medium_close(m);
	memset(&seen, 0, sizeof(seen));
	m = open_ssd(false, &seen);
	TAP_OK(seen.hard_pin && strcmp(seen.key, "pinned") == 0 && seen.type_len == 2 &&
		       memcmp(seen.type, "kv", 2) == 0,
	       "reseal: the last header is the one kept, with the names as they were called");
	medium_close(m);
}

int
main(void)
{
	if (!mkdtemp(dir)) {
		printf("Bail out! cannot make %s\n", dir);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/extents", dir);
	base = event_base_new();
	test_store_and_load();
	test_budget();
	test_failure_and_pause();
	test_reseal_order_and_free();
	event_base_free(base);
	unlink(path);
	char flag[192];
	snprintf(flag, sizeof(flag), "%s/ssd.write", dir);
	unlink(flag);
	snprintf(flag, sizeof(flag), "%s/ssd.write.paused", dir);
	unlink(flag);
	rmdir(dir);
	return tap_done();
}
