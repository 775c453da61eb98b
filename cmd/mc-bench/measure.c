/*
 * Latency samples, CPU time and key naming shared by the commands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"

int
lat_add(struct lat *l, uint64_t ns)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		uint64_t *p = realloc(l->ns, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		l->ns = p;
		l->cap = cap;
	}
	l->ns[l->n++] = ns;
	return 0;
}

int
lat_merge(struct lat *dst, const struct lat *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (lat_add(dst, src->ns[i]) < 0)
			return -1;
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

double
lat_pct_us(struct lat *l, double p)
{
	size_t i;

	if (l->n == 0)
		return 0;
	qsort(l->ns, l->n, sizeof(*l->ns), cmp_u64);
	i = (size_t)(p / 100.0 * (double)(l->n - 1) + 0.5);
	if (i >= l->n)
		i = l->n - 1;
	return (double)l->ns[i] / 1000.0;
}

void
lat_free(struct lat *l)
{
	free(l->ns);
	memset(l, 0, sizeof(*l));
}

double
cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

void
bench_key(char *buf, size_t cap, const char *prefix, uint64_t i, uint64_t key_len)
{
	int n = snprintf(buf, cap, "%s-%llu", prefix, (unsigned long long)i);
	size_t want = key_len < cap ? (size_t)key_len : cap - 1;

	/* Pad with '.' so every key has the requested length. */
	if (n > 0 && (size_t)n < want) {
		memset(buf + n, '.', want - (size_t)n);
		buf[want] = '\0';
	}
}
