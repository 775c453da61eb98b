/*
 * Recreate cooldowns: a small set-associative table (cooldown.h).
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "cooldown.h"

int
cooldowns_init(struct cooldowns *c, size_t entries, struct mc_err *err)
{
	size_t sets = 1;

	memset(c, 0, sizeof(*c));
	while (sets * COOLDOWN_WAYS < entries)
		sets *= 2;
	c->v = calloc(sets * COOLDOWN_WAYS, sizeof(*c->v));
	if (c->v == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "no memory for %zu cooldowns", entries);
	c->nsets = sets;
	return 0;
}

void
cooldowns_free(struct cooldowns *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

void
cooldowns_clear(struct cooldowns *c)
{
	memset(c->v, 0, c->nsets * COOLDOWN_WAYS * sizeof(*c->v));
}

uint64_t
cooldown_hash(uint64_t key_hash, const char *domain)
{
	uint64_t h = mc_hash64(domain, strlen(domain), key_hash);

	/* 0 marks a free slot */
	return h != 0 ? h : 1;
}

static struct cooldown_slot *
set_of(const struct cooldowns *c, uint64_t hash)
{
	return &c->v[(hash & (c->nsets - 1)) * COOLDOWN_WAYS];
}

void
cooldown_put(struct cooldowns *c, uint64_t hash, uint64_t until)
{
	struct cooldown_slot *set = set_of(c, hash), *pick = &set[0];

	c->set++;
	for (unsigned i = 0; i < COOLDOWN_WAYS; i++) {
		if (set[i].hash == hash) {
			if (set[i].until < until)
				set[i].until = until;
			return;
		}
		/* the one that ends first: a free slot's 0 ends before any */
		if (set[i].until < pick->until)
			pick = &set[i];
	}
	if (pick->hash != 0)
		c->replaced++;
	pick->hash = hash;
	pick->until = until;
}

uint64_t
cooldown_until(const struct cooldowns *c, uint64_t hash, uint64_t now)
{
	const struct cooldown_slot *set = set_of(c, hash);

	for (unsigned i = 0; i < COOLDOWN_WAYS; i++)
		if (set[i].hash == hash)
			return set[i].until > now ? set[i].until : 0;
	return 0;
}

void
cooldowns_each(const struct cooldowns *c, uint64_t now,
	       void (*fn)(uint64_t hash, uint64_t until, void *arg), void *arg)
{
	for (size_t i = 0; i < c->nsets * COOLDOWN_WAYS; i++)
		if (c->v[i].hash != 0 && c->v[i].until > now)
			fn(c->v[i].hash, c->v[i].until, arg);
}

size_t
cooldowns_running(const struct cooldowns *c, uint64_t now)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nsets * COOLDOWN_WAYS; i++)
		n += c->v[i].hash != 0 && c->v[i].until > now;
	return n;
}
