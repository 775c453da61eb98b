/*
 * Fault injection (mc/fault.h). MC_FAULT is parsed once, on the first
 * point reached; a malformed entry is reported on stderr and ignored, so
 * a typo never turns into a fault nobody asked for. Points are few and
 * the table is small: a linear search under a mutex, taken only when
 * MC_FAULT is set.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mc/fault.h"
#include "mc/log.h"
#include "mc/parse.h"

#define FAULTS_MAX 32
#define NAME_MAX_LEN 64
#define PAUSE_POLL_MS 5

enum mode { M_ALWAYS, M_NTH, M_PROB, M_PAUSE };

struct fault {
	char name[NAME_MAX_LEN];
	int mode;
	uint64_t nth;	/* M_NTH */
	double prob;	/* M_PROB */
	uint64_t rng;	/* M_PROB's generator state */
	uint64_t calls; /* times the point was reached */
	uint64_t fired;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int state; /* 0 unparsed, 1 nothing set, 2 faults set */
static struct fault faults[FAULTS_MAX];
static int nfaults;

static int
parse_mode(struct fault *f, const char *m)
{
	uint64_t v;

	if (strcmp(m, "always") == 0) {
		f->mode = M_ALWAYS;
	} else if (strcmp(m, "pause") == 0) {
		f->mode = M_PAUSE;
	} else if (strncmp(m, "nth=", 4) == 0) {
		if (mc_parse_u64(m + 4, &v, NULL) < 0 || v == 0)
			return -1;
		f->mode = M_NTH;
		f->nth = v;
	} else if (strncmp(m, "prob=", 5) == 0) {
		char *end;
		const char *seed = strstr(m, ",seed=");

		errno = 0;
		f->prob = strtod(m + 5, &end);
		if (errno != 0 || end == m + 5 || f->prob < 0 || f->prob > 1 ||
		    (*end != '\0' && end != seed))
			return -1;
		v = 1;
		if (seed != NULL && mc_parse_u64(seed + 6, &v, NULL) < 0)
			return -1;
		f->mode = M_PROB;
		f->rng = v != 0 ? v : 1;
	} else {
		return -1;
	}
	return 0;
}

/* Parse MC_FAULT into faults[]; called with lock held. */
static void
parse(void)
{
	const char *env = getenv("MC_FAULT");
	char buf[1024], *save = NULL, *item;

	nfaults = 0;
	if (env == NULL || *env == '\0') {
		atomic_store(&state, 1);
		return;
	}
	snprintf(buf, sizeof(buf), "%s", env);
	for (item = strtok_r(buf, ";", &save); item != NULL; item = strtok_r(NULL, ";", &save)) {
		char *colon = strchr(item, ':');
		struct fault *f = &faults[nfaults];

		if (nfaults == FAULTS_MAX || colon == NULL || colon == item ||
		    (size_t)(colon - item) >= NAME_MAX_LEN) {
			fprintf(stderr, "MC_FAULT: ignoring '%s': want NAME:MODE\n", item);
			continue;
		}
		memset(f, 0, sizeof(*f));
		memcpy(f->name, item, (size_t)(colon - item));
		if (parse_mode(f, colon + 1) < 0) {
			fprintf(stderr,
				"MC_FAULT: ignoring '%s': MODE is always, nth=N, prob=P[,seed=S] "
				"or "
				"pause\n",
				item);
			continue;
		}
		nfaults++;
	}
	atomic_store(&state, nfaults > 0 ? 2 : 1);
}

static struct fault *
find(const char *name)
{
	for (int i = 0; i < nfaults; i++)
		if (strcmp(faults[i].name, name) == 0)
			return &faults[i];
	return NULL;
}

/* xorshift64*: the same faults for the same seed, run after run. */
static double
draw(struct fault *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return (double)((f->rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* Wait until $MC_FAULT_DIR/name exists, saying so with name.paused first. */
static void
pause_at(const char *name)
{
	const char *dir = getenv("MC_FAULT_DIR");
	char go[4096], mark[4096];
	struct timespec ts = { 0, PAUSE_POLL_MS * 1000000L };
	struct stat st;
	FILE *f;

	if (dir == NULL || *dir == '\0') {
		fprintf(stderr, "MC_FAULT: %s: pause needs MC_FAULT_DIR; not pausing\n", name);
		return;
	}
	snprintf(go, sizeof(go), "%s/%s", dir, name);
	snprintf(mark, sizeof(mark), "%s/%s.paused", dir, name);
	if ((f = fopen(mark, "w")) != NULL)
		fclose(f);
	while (stat(go, &st) != 0)
		nanosleep(&ts, NULL);
}

bool
mc_fault(const char *name)
{
	struct fault *f;
	bool fire = false, wait = false;

	if (atomic_load(&state) == 1)
		return false;
	pthread_mutex_lock(&lock);
	if (atomic_load(&state) == 0)
		parse();
	if ((f = find(name)) != NULL) {
		f->calls++;
		switch (f->mode) {
		case M_ALWAYS:
			fire = true;
			break;
		case M_NTH:
			fire = f->calls == f->nth;
			break;
		case M_PROB:
			fire = draw(f) < f->prob;
			break;
		case M_PAUSE:
			wait = true;
			break;
		}
		f->fired += fire;
	}
	pthread_mutex_unlock(&lock);
	if (fire)
		mc_warn("fault %s fired", name);
	if (wait)
		pause_at(name);
	return fire;
}

bool
mc_fault2(const char *prefix, const char *suffix)
{
	char name[NAME_MAX_LEN];

	if (atomic_load(&state) == 1)
		return false;
	snprintf(name, sizeof(name), "%s.%s", prefix, suffix);
	return mc_fault(name);
}

bool
mc_fault_always(const char *name)
{
	struct fault *f;
	bool always;

	if (atomic_load(&state) == 1)
		return false;
	pthread_mutex_lock(&lock);
	if (atomic_load(&state) == 0)
		parse();
	always = (f = find(name)) != NULL && f->mode == M_ALWAYS;
	pthread_mutex_unlock(&lock);
	return always;
}

bool
mc_fault2_always(const char *prefix, const char *suffix)
{
	char name[NAME_MAX_LEN];

	if (atomic_load(&state) == 1)
		return false;
	snprintf(name, sizeof(name), "%s.%s", prefix, suffix);
	return mc_fault_always(name);
}

unsigned long
mc_fault_fired(const char *name)
{
	struct fault *f;
	unsigned long n = 0;

	pthread_mutex_lock(&lock);
	if ((f = find(name)) != NULL)
		n = (unsigned long)f->fired;
	pthread_mutex_unlock(&lock);
	return n;
}

void
mc_fault_reset(void)
{
	pthread_mutex_lock(&lock);
	nfaults = 0;
	atomic_store(&state, 0);
	pthread_mutex_unlock(&lock);
}
