/*
 * Unit tests for fault injection (libmc/fault.c): the modes, asking
 * whether a point is set to always, and a pause released by a file.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mc/fault.h"
#include "mc/log.h"
#include "tap.h"

static void
set(const char *spec)
{
	if (spec != NULL)
		setenv("MC_FAULT", spec, 1);
	else
		unsetenv("MC_FAULT");
	mc_fault_reset();
}

static void
test_modes(void)
{
	int fired = 0, runs[2] = { 0, 0 };

	set(NULL);
	TAP_OK(!mc_fault("write") && !mc_fault2("reply", "put_end"), "unset: nothing fires");
	set("write:always");
	TAP_OK(mc_fault("write") && mc_fault("write") && !mc_fault("read"),
	       "always: fires every time, at its point only");
	set("read:nth=3");
	for (int i = 1; i <= 5; i++)
		fired |= mc_fault("read") << i;
	TAP_OK(fired == 1 << 3 && mc_fault_fired("read") == 1, "nth=3: the third time only");
	set("reply.put_end:always;drop:nth=1");
	TAP_OK(mc_fault2("reply", "put_end") && !mc_fault2("reply", "get_replica_list") &&
		       mc_fault("drop") && !mc_fault("drop"),
	       "two points, one per ';'; reply.METHOD by its parts");
	for (int r = 0; r < 2; r++) {
		set("write:prob=0.25,seed=7");
		for (int i = 0; i < 1000; i++)
			runs[r] += mc_fault("write");
	}
	TAP_OK(runs[0] == runs[1] && runs[0] > 150 && runs[0] < 350,
	       "prob=0.25,seed=7: about a quarter, the same ones every run (%d, %d)", runs[0],
	       runs[1]);
	set("write:sometimes;read:nth=0;:always;drop:always");
	TAP_OK(!mc_fault("write") && !mc_fault("read") && mc_fault("drop"),
	       "malformed entries are ignored, the good one kept");
}

/* Asking whether a point is set to always reaches nothing: no count, no pause. */
static void
test_always(void)
{
	bool asked;

	set(NULL);
	TAP_OK(!mc_fault_always("method.echo") && !mc_fault2_always("method", "echo"),
	       "always?: unset, nothing is");
	set("method.echo:always;method.put:nth=1;method.get:pause;method.rm:prob=1");
	TAP_OK(mc_fault_always("method.echo") && mc_fault2_always("method", "echo") &&
		       !mc_fault2_always("method", "ping"),
	       "always?: the point set to always, by name or by its parts");
	asked = mc_fault2_always("method", "put") || mc_fault2_always("method", "get") ||
		mc_fault2_always("method", "rm");
	TAP_OK(!asked, "always?: nth, pause and prob are not always");
	TAP_OK(mc_fault_fired("method.echo") == 0 && mc_fault2("method", "put") &&
		       !mc_fault2("method", "put"),
	       "always?: asking counts no reach: nth=1 still fires at the first one");
	set(NULL);
}

static void *
reach_pause(void *arg)
{
	*(int *)arg = mc_fault("snapshot.write") ? 1 : 2;
	return NULL;
}

static int
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void
test_pause(void)
{
	char dir[] = "/tmp/mc-fault-XXXXXX", mark[256], go[256];
	struct timespec ms = { 0, 1000000 };
	pthread_t t;
	int result = 0, waited = 0;
	FILE *f;

	TAP_OK(mkdtemp(dir) != NULL, "a fault dir");
	setenv("MC_FAULT_DIR", dir, 1);
	set("snapshot.write:pause");
	snprintf(mark, sizeof(mark), "%s/snapshot.write.paused", dir);
	snprintf(go, sizeof(go), "%s/snapshot.write", dir);
	pthread_create(&t, NULL, reach_pause, &result);
	while (!exists(mark) && waited++ < 10000)
		nanosleep(&ms, NULL);
	TAP_OK(exists(mark) && result == 0, "pause: the point says it is reached, and waits");
	f = fopen(go, "w");
	if (f != NULL)
		fclose(f);
	pthread_join(t, NULL);
	TAP_OK(result == 2, "pause: the file releases it, and it does not fire");
	unlink(mark);
	unlink(go);
	rmdir(dir);
	unsetenv("MC_FAULT_DIR");
	set(NULL);
}

int
main(void)
{
	mc_log_set_level(MC_LOG_ERROR); /* a fired point's line, hundreds of times */
	test_modes();
	test_always();
	test_pause();
	return tap_done();
}
