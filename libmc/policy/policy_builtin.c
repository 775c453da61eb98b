/*
 * The built-in eviction policy, the text of examples/policies/kv.policy
 * (test_policy compares the two byte for byte).
 */
#include "mc/policy.h"

const char mc_policy_builtin_text[] =
	"# The master's default eviction policy (mc-master(8)): built in, and\n"
	"# this file is the same text, to read, copy and change (a unit test\n"
	"# keeps the two identical).\n"
	"#\n"
	"#   KV-cache blocks (data type \"kv\"): the kv ranker (mc-policy(5))\n"
	"#     1. orphans: blocks whose parent, the block before them in their\n"
	"#        prompt, is gone, so no prefix lookup can reach them;\n"
	"#     2. new blocks past the probationary segment: written with no\n"
	"#        history of their key and not read since, oldest first;\n"
	"#     3. the rest by their decayed frequency (LRFU), lowest first, a\n"
	"#        block never above its parent, so chains lose tails before heads.\n"
	"#   every other type: lease expiry, copies no reader holds first.\n"
	"#\n"
	"# The master keeps the history kv needs (decayed counts that outlive an\n"
	"# eviction, the half-life it adapts) and sends it in the candidate view,\n"
	"# so mc-evict-plan plans the same from `mc-cli candidates`.\n"
	"#\n"
	"# Try it: mc-cli candidates | mc-evict-plan -p kv.policy --target 1GiB --explain\n"
	"\n"
	"evict lease             # the ranker of any scope that names none\n"
	"assign type by usage\n"
	"  scope kv\n"
	"    evict kv\n"
	"fallback                # when a type fell short, take from the one most over its share\n";

int
mc_policy_builtin(struct mc_policy *p, struct mc_err *err)
{
	return mc_policy_parse(mc_policy_builtin_text, sizeof(mc_policy_builtin_text) - 1,
			       MC_POLICY_BUILTIN_NAME, p, err);
}
