/*
 * Unit tests for young copies (libmc/young.c): when a copy is young,
 * what a pass's tally keeps (the first to age), when young copies may
 * join a pass, and the one line a pass that took some logs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/log.h"
#include "mc/young.h"
#include "tap.h"

static void
test_is(void)
{
	TAP_OK(mc_young_is(10000, 5000, 5000) && mc_young_is(10000, 5000, 14999),
	       "is: young from its commit to --young later");
	TAP_OK(!mc_young_is(10000, 5000, 15000) && !mc_young_is(10000, 5000, 99999),
	       "is: no longer young once --young has passed");
	TAP_OK(!mc_young_is(0, 5000, 5000), "is: --young 0 makes nothing young");
	TAP_OK(!mc_young_is(10000, 0, 1), "is: a copy with no known commit time is old");
	TAP_OK(mc_young_is(UINT64_MAX, UINT64_MAX - 5, UINT64_MAX - 1),
	       "is: a --young that would pass the end of time saturates");
}

static void
test_tally(void)
{
	struct mc_young_tally t;

	mc_young_tally_init(&t);
	TAP_OK(t.kept == 0 && t.taken == 0 && t.until == UINT64_MAX, "tally: starts empty");
	mc_young_keep(&t, 1000, 7000, 10);
	mc_young_keep(&t, 1000, 5000, 20);
	mc_young_keep(&t, 1000, 6000, 30);
	TAP_OK(t.kept == 3 && t.kept_bytes == 60 && t.until == 6000,
	       "tally: the kept copies, their bytes, and when the first of them ages");
	mc_young_take(&t, 4096);
	mc_young_take(&t, 4096);
	TAP_OK(t.taken == 2 && t.taken_bytes == 8192, "tally: the copies taken and their bytes");
}

static void
test_needed(void)
{
	TAP_OK(!mc_young_needed(0, 0), "needed: not when no write waits");
	TAP_OK(mc_young_needed(100, 0) && mc_young_needed(100, 99),
	       "needed: when a write waits for more than the old copies can give");
	TAP_OK(!mc_young_needed(100, 100), "needed: not when the old copies make the room");
}

static void
log_taken(const struct mc_young_tally *t, char *out, size_t cap)
{
	char path[] = "/tmp/mc-test-young-XXXXXX";
	int fd = mkstemp(path), saved;
	ssize_t n;

	out[0] = '\0';
	if (fd < 0)
		return;
	unlink(path);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	mc_young_log(t, "dram", MC_YOUNG_FOR_WRITE);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, out, cap - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
}

static void
test_log(void)
{
	struct mc_young_tally t;
	char out[512];

	mc_log_init("mc-test", 0);
	mc_young_tally_init(&t);
	mc_young_keep(&t, 1000, 5000, 20);
	log_taken(&t, out, sizeof(out));
	TAP_OK(out[0] == '\0', "log: nothing when no young copy was taken");
	mc_young_take(&t, 60ull << 20);
	log_taken(&t, out, sizeof(out));
	TAP_OK(strstr(out, "eviction of dram took 1 young copy, 60MiB (62914560 bytes): a write "
			   "needed the room") != NULL &&
		       strchr(out, '\n') == out + strlen(out) - 1,
	       "log: one line, with the count and the bytes (%s)", out);
	mc_young_take(&t, 1);
	log_taken(&t, out, sizeof(out));
	TAP_OK(strstr(out, "took 2 young copies") != NULL, "log: copies, for more than one");
}

int
main(void)
{
	test_is();
	test_tally();
	test_needed();
	test_log();
	return tap_done();
}
