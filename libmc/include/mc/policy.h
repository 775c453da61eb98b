/*
 * Eviction policies: the text a person writes (man/mc-policy.5) and the
 * scope tree it parses into, which the planner (mc/planner.h) walks.
 *
 * A policy is a tree of scopes. The root is the global scope. A scope
 * either ranks its own candidates (`evict RANKER`) or splits them among
 * child scopes (`assign DIMENSION by MODE` with indented `scope VALUE`
 * children), and a scope with children may add `fallback [RANKER]`: when
 * its children's actual evictions fall short of its lowerbound, take more
 * from anywhere inside it, the children most over their share first. A
 * top-level `fallback` is the global fallback.
 *
 *   # comments run to the end of the line; indentation is spaces
 *   lowerbound 80%            default lowerbound of every scope (100%)
 *   evict lease               default ranker (lease)
 *   cost hidden 5000          default recompute cost of a type
 *   cost kv bytes 0.001       ... or proportional to bytes
 *   half-life 200k            lfu and cost decay half-life, in accesses
 *   half-life 10m             ... and for views without sequences
 *   assign tenant by weight
 *     scope A weight 3 lowerbound 50%
 *       assign type by usage
 *         scope hidden
 *           evict cost
 *         scope *
 *           evict lru
 *       fallback
 *     scope * weight 1
 *   fallback
 *
 * Dimensions: tenant, type, group, peer, tier, domain, prefix (scope
 * values are key prefixes; a key belongs to its longest listed prefix).
 * Modes: weight (the parent's target split by `weight`, default 1),
 * usage (split by each child's share of the bytes), quota (each child
 * owes its bytes above `quota`; what is left of the target is split by
 * usage). `scope *` stands for every value no sibling names, each value
 * its own scope with the same settings; without one, unnamed values get
 * an implicit `scope *` with weight 1 and the default ranker.
 */
#ifndef MC_POLICY_H
#define MC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/ranker.h"

/* The largest policy file accepted, and the deepest scope nesting. */
#define MC_POLICY_MAX_BYTES (1u << 20)
#define MC_POLICY_MAX_DEPTH 8

enum mc_dim {
	MC_DIM_TENANT,
	MC_DIM_TYPE,
	MC_DIM_GROUP,
	MC_DIM_PEER,
	MC_DIM_TIER,
	MC_DIM_DOMAIN,
	MC_DIM_PREFIX,
	MC_DIM_COUNT
};
const char *mc_dim_name(int dim);		 /* "tenant", ... */
int mc_dim_from_name(const char *s, size_t len); /* -1 if unknown */

enum mc_assign_mode { MC_ASSIGN_WEIGHT, MC_ASSIGN_USAGE, MC_ASSIGN_QUOTA };

struct mc_pscope {
	char *value;	   /* the value it matches; NULL for the root */
	bool rest;	   /* `scope *`: each value no sibling names */
	double weight;	   /* by weight: > 0, default 1 */
	uint64_t quota;	   /* by quota: bytes, 0 when not given */
	double lowerbound; /* fraction 0..1 of its target; < 0: the policy default */
	/* `evict RANKER`; NULL: the policy default (leaves only) */
	const struct mc_ranker *ranker;
	/* `assign`: children, when has_assign */
	bool has_assign;
	int dim;  /* enum mc_dim */
	int mode; /* enum mc_assign_mode */
	struct mc_pscope *children;
	size_t nchildren;
	/* `fallback [RANKER]` inside this scope (only with has_assign) */
	bool has_fallback;
	const struct mc_ranker *fallback_ranker; /* NULL: each child's own order */
	unsigned line;				 /* where declared, for messages */
};

struct mc_type_cost {
	char *type;
	double cost;   /* a fixed cost, or per byte when by_bytes */
	bool by_bytes; /* cost = bytes x cost */
};

struct mc_policy {
	struct mc_pscope root;
	double lowerbound;		/* default scope lowerbound fraction: 1.0 */
	const struct mc_ranker *ranker; /* default ranker: lease */
	/* lfu and cost ageing; 0: the ranker's default (mc/ranker.h) */
	uint64_t lfu_half_life_accesses; /* views with an access sequence */
	uint64_t lfu_half_life_ms;	 /* views without one */
	struct mc_type_cost *costs;
	size_t ncosts;
	char name[256]; /* the file's base name, or what the caller gave */
};

/*
 * The empty policy: global scope, `evict lease`, no fallback (what a
 * policy is before parsing, and after mc_policy_free).
 */
void mc_policy_default(struct mc_policy *p);

/*
 * The shipped default, what the master and mc-evict-plan plan with when
 * given no file: examples/policies/kv.policy, built in (the kv ranker for
 * data type kv, lease for the rest). Installed as
 * $(PREFIX)/share/mc/policies/kv.policy.
 */
#define MC_POLICY_BUILTIN_NAME "kv.policy"
extern const char mc_policy_builtin_text[];
int mc_policy_builtin(struct mc_policy *p, struct mc_err *err);
/*
 * Parse text[0..len) into p (overwritten). On error -1 with err naming
 * the line: "line 7: unknown ranker 'lruu'". name labels the policy.
 */
int mc_policy_parse(const char *text, size_t len, const char *name, struct mc_policy *p,
		    struct mc_err *err);
/* Read and parse a file (at most MC_POLICY_MAX_BYTES); err names the file. */
int mc_policy_load(const char *path, struct mc_policy *p, struct mc_err *err);
void mc_policy_free(struct mc_policy *p);

#endif
