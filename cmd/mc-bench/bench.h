/*
 * mc-bench's commands and the measurement helpers they share.
 */
#ifndef MC_BENCH_H
#define MC_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_opts {
	const char *prefix;
	const char *tier; /* get: where the objects are put (NULL: the master's choice) */
	bool reuse;	  /* get: the objects are there already */
	uint64_t size, keys, clients, requests, duration_ms, batch, count, key_len;
	uint64_t block_bytes, limit;
	bool trace_clock;	  /* --clock trace */
	double max_put_failures;  /* replay: a fraction of the puts */
	const char *policy;	  /* sim: a policy file, NULL for the built-in default */
	const char *capacity;	  /* sim: a size or a fraction of the unique blocks */
	double sim_high, sim_low; /* sim: watermarks; both 0: the headroom band */
	bool sim_whole_view;	  /* sim: plan over every copy, not a window */
	uint64_t sim_peers;	  /* sim: peer tiers the capacity is split over */
	bool sim_local;		  /* sim: --eviction-mode local (each peer evicts itself) */
	uint64_t seed;		  /* gen: the same seed, the same trace */
	bool json;
};

int bench_get(const struct bench_opts *o);
int bench_lookup(const struct bench_opts *o);
int bench_fill(const struct bench_opts *o);
int bench_replay(const struct bench_opts *o, const char *trace);
/* sim: the watermarks --high or --low alone pair with */
#define SIM_HIGH 0.9
#define SIM_LOW 0.7
int bench_sim(const struct bench_opts *o, const char *trace);
/* gen: a synthetic trace of one family on standard output; an exit code. */
int bench_gen(const struct bench_opts *o, const char *family);

/*
 * The result record (result.c): out_begin, the fields, out_end. Text is
 * "MODE k=v k=v", JSON {"mode":"MODE","k":v,...}; a list (of items of
 * fields) appears in the JSON only, the text form shows it as a table.
 */
struct bench_out {
	bool json, first;
	int list_depth;
};

void out_begin(struct bench_out *r, bool json, const char *mode);
void out_u64(struct bench_out *r, const char *name, uint64_t v);
void out_double(struct bench_out *r, const char *name, int decimals, double v);
void out_str(struct bench_out *r, const char *name, const char *s);
void out_list_begin(struct bench_out *r, const char *name);
void out_item_begin(struct bench_out *r);
void out_item_end(struct bench_out *r);
void out_list_end(struct bench_out *r);
void out_end(struct bench_out *r);

/* Latency samples of one run, in nanoseconds. */
struct lat {
	uint64_t *ns;
	size_t n, cap;
};

int lat_add(struct lat *l, uint64_t ns);
/* Append all of src to dst (src is left as is). */
int lat_merge(struct lat *dst, const struct lat *src);
/* Sort and return the p-th percentile (0..100) in microseconds. */
double lat_pct_us(struct lat *l, double p);
void lat_free(struct lat *l);

/* User+system CPU seconds this process has used so far. */
double cpu_seconds(void);
/* The fixed-width key for index i: PREFIX-000...i padded to key_len. */
void bench_key(char *buf, size_t cap, const char *prefix, uint64_t i, uint64_t key_len);

#endif
