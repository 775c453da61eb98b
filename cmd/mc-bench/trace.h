/*
 * Request traces, as Mooncake publishes them: JSON lines, one request a
 * line, {"timestamp": ms, "input_length": N, "output_length": N,
 * "hash_ids": [block ids]} where each id names one prefix block (512
 * tokens in the published traces). Optional fields, read where present:
 * "tenant" and "type" (strings: who asks, what kind of data), "chat_id"
 * and "parent_chat_id" (numbers or strings: a conversation and the one
 * it continues). Unknown fields are skipped, nested or not.
 */
#ifndef MC_BENCH_TRACE_H
#define MC_BENCH_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mc/err.h"
#include "mc/proto.h"

struct trace_req {
	uint64_t timestamp; /* ms, 0 when absent */
	bool has_timestamp;
	uint64_t input_length, output_length;
	uint64_t *ids; /* hash_ids, in order */
	size_t n, cap;
	char tenant[MC_NAME_MAX + 1]; /* "" when absent */
	char type[MC_NAME_MAX + 1];   /* "" when absent */
	char chat_id[64], parent_chat_id[64];
};

struct trace {
	FILE *f;
	const char *path;
	char *line;
	size_t line_cap;
	uint64_t lineno;
};

/* Open path ("-" for standard input); -1 with err. */
int trace_open(struct trace *t, const char *path, struct mc_err *err);
void trace_close(struct trace *t);
/*
 * The next request into r (its arrays reused from call to call): 1, 0
 * at the end, -1 with err naming the file and line on a malformed line.
 * Blank lines are skipped.
 */
int trace_next(struct trace *t, struct trace_req *r, struct mc_err *err);
void trace_req_free(struct trace_req *r);

#endif
