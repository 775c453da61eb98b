/*
 * Peer registry, and when each peer's tasks go out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "peers.h"
#include "master.h"
#include "store.h"
#include "tasks.h"

static void
flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	peers_flush(arg);
}

int
peers_init(struct peers *p, struct event_base *base, const struct store *store, struct mc_err *err)
{
	memset(p, 0, sizeof(*p));
	tasks_init(&p->tasks, store);
	p->next_id = 1;
	p->flush_ev = event_new(base, -1, 0, flush_cb, p);
	if (p->flush_ev == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot create the task event");
	return 0;
}

static void
peer_free(struct peers *p, struct peer *peer)
{
	for (int t = 0; t < MC_TIER_COUNT; t++)
		free(peer->packed[t]);
	tasks_retire_all(&p->tasks, &peer->tasks);
	free(peer);
}

void
peers_free(struct peers *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		peer_free(p, p->v[i]);
	free(p->v);
	if (p->flush_ev != NULL)
		event_free(p->flush_ev);
	memset(p, 0, sizeof(*p));
}

struct peer *
peers_find(const struct peers *p, uint32_t id)
{
	/* A cluster has tens of peers: a scan beats any index here. */
	for (uint32_t i = 0; i < p->n; i++)
		if (p->v[i]->id == id)
			return p->v[i];
	return NULL;
}

struct peer *
peers_find_addr(const struct peers *p, const char *addr)
{
	for (uint32_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i]->addr, addr) == 0)
			return p->v[i];
	return NULL;
}

struct peer *
peers_find_live_name(const struct peers *p, const char *name, const struct peer *skip, uint64_t ttl)
{
	for (uint32_t i = 0; i < p->n; i++) {
		struct peer *q = p->v[i];

		/* conn is cleared when the link closes (master_on_close) */
		if (q != skip && strcmp(q->name, name) == 0 && q->conn != NULL &&
		    peer_alive(q, ttl))
			return q;
	}
	return NULL;
}

const char *
peer_refusal_name(int why)
{
	static const char *const names[PEER_REFUSED_COUNT] = {
		[PEER_REFUSED_ADDRESS] = "address",
		[PEER_REFUSED_IDENTITY] = "identity",
		[PEER_REFUSED_CAPACITY] = "capacity",
	};

	return why >= 0 && why < PEER_REFUSED_COUNT ? names[why] : "?";
}

struct peer *
peers_add(struct peers *p, struct mc_err *err)
{
	struct peer *peer;

	if (p->n >= PEERS_MAX) {
		mc_err_set(err, MC_ERR_TOO_LARGE, "too many peers (%d)", PEERS_MAX);
		return NULL;
	}
	struct peer **v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (v == NULL)
		goto oom;
	p->v = v;
	peer = calloc(1, sizeof(*peer));
	if (peer == NULL)
		goto oom;
	peer->id = p->next_id++;
	if (p->next_id == 0)
		p->next_id = 1;
	p->v[p->n++] = peer;
	return peer;
oom:
	mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	return NULL;
}

void
peers_del(struct peers *p, struct peer *peer)
{
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->v[i] != peer)
			continue;
		/* Keep the registration order: listings read better that way. */
		memmove(&p->v[i], &p->v[i + 1], (p->n - i - 1) * sizeof(*p->v));
		p->n--;
		break;
	}
	peer_free(p, peer);
}

struct fixbuf {
	char data[1024]; /* addr, host and domain are bounded well below this */
	size_t len;
	bool over;
};

static int
fixbuf_write(void *arg, const char *buf, size_t len)
{
	struct fixbuf *f = arg;

	if (len > sizeof(f->data) - f->len) {
		f->over = true;
		return -1;
	}
	memcpy(f->data + f->len, buf, len);
	f->len += len;
	return 0;
}

int
peer_prepack(struct peer *peer)
{
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		struct fixbuf f = { .len = 0, .over = false };
		msgpack_packer pk;

		msgpack_packer_init(&pk, &f, fixbuf_write);
		mc_pack_kv_str(&pk, "addr", peer->addr);
		mc_pack_kv_str(&pk, "tier", mc_tier_name(t));
		mc_pack_kv_str(&pk, "host", peer->host);
		mc_pack_kv_str(&pk, "domain", peer->domain);
		if (f.over)
			return -1;
		free(peer->packed[t]);
		peer->packed[t] = malloc(f.len);
		if (peer->packed[t] == NULL)
			return -1;
		memcpy(peer->packed[t], f.data, f.len);
		peer->packed_len[t] = f.len;
	}
	return 0;
}

static bool
peer_connected(const struct peer *peer)
{
	return peer->conn != NULL && mc_conn_is_open(peer->conn);
}

struct mc_conn *
peer_link(const struct peer *peer)
{
	return peer_connected(peer) ? peer->conn : NULL;
}

static void
schedule_flush(struct peers *p)
{
	if (!event_pending(p->flush_ev, EV_TIMEOUT, NULL))
		event_active(p->flush_ev, EV_TIMEOUT, 0);
}

bool
peer_alive(const struct peer *peer, uint64_t ttl)
{
	uint64_t now = mc_mono_ms();

	return now <= peer->heard || now - peer->heard <= ttl;
}

uint64_t
peer_drop_in_ms(const struct peer *peer, uint64_t ttl)
{
	uint64_t now = mc_mono_ms();
	uint64_t silent = now > peer->heard ? now - peer->heard : 0;

	return silent < ttl ? ttl - silent : 0;
}

int
peer_session_new(struct peer *peer, struct mc_err *err)
{
	size_t have = 0;

	while (have < sizeof(peer->session)) {
		ssize_t n = getrandom(peer->session + have, sizeof(peer->session) - have, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return mc_err_errno(err, "cannot draw a session token");
		have += (size_t)n;
	}
	return 0;
}

void
peer_session_hex(const struct peer *peer, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < sizeof(peer->session); i++) {
		out[2 * i] = digits[peer->session[i] >> 4];
		out[2 * i + 1] = digits[peer->session[i] & 15];
	}
	out[PEER_SESSION_HEX] = '\0';
}

/* A hex digit's value, or -1. */
static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
peer_session_is(const struct peer *peer, const char *hex, size_t len)
{
	unsigned diff = 0;
	bool ok = true;

	if (len != PEER_SESSION_HEX)
		return false;
	/* Every byte is looked at: how long it takes says nothing of where it differs. */
	for (size_t i = 0; i < PEER_SESSION_LEN; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		ok &= hi >= 0 && lo >= 0;
		diff |= (unsigned)((((hi & 15) << 4) | (lo & 15)) ^ peer->session[i]);
	}
	return ok && diff == 0;
}

void
peers_queue(struct peers *p, struct peer *peer, int kind, uint32_t tenant, const char *key,
	    size_t len, uint64_t version, int tier)
{
	/*
	 * Queued even while the peer is disconnected: one that resumes its
	 * registration still holds the bytes, and hears of the task when it
	 * is back (peers_attach). One that expires or registers anew takes
	 * its tasks with it (peers_del).
	 */
	if (tasks_queue(&p->tasks, &peer->tasks, kind, tenant, key, len, version, tier) == 0 &&
	    peer_connected(peer))
		schedule_flush(p);
}

uint64_t
peers_queue_task(struct peers *p, struct peer *peer, int kind, const union task_payload *pl)
{
	if (tasks_add(&p->tasks, &peer->tasks, kind, pl) != 0)
		return 0;
	if (peer_connected(peer))
		schedule_flush(p);
	return p->tasks.last_id;
}

double
peer_tier_high(const struct peer_tier *t, double dflt)
{
	return t->high > 0 ? t->high : dflt;
}

double
peer_tier_low(const struct peer_tier *t, double dflt)
{
	return t->low > 0 ? t->low : dflt;
}

int
peer_tier_below(const struct peer *peer, int tier)
{
	int t = mc_tier_downstream(tier);

	while (t != MC_TIER_NONE && !peer->tiers[t].present)
		t = mc_tier_downstream(t);
	return t;
}

static void flush_peer(struct peers *p, struct peer *peer);

void
peers_attach(struct peers *p, struct peer *peer, struct mc_conn *conn)
{
	peer->conn = conn;
	/* its heartbeats and --peer-ttl watch the link, not the idle timeout */
	mc_conn_keep(conn);
	tasks_relink(&peer->tasks);
	/*
	 * At once, not at the end of the turn: what goes out now precedes
	 * the reply being built, so a peer acts on its drops before it
	 * starts reporting its inventory.
	 */
	flush_peer(p, peer);
}

void
peers_expire_tasks(struct peers *p, uint64_t now, uint64_t ttl)
{
	for (uint32_t i = 0; i < p->n; i++)
		tasks_expire(&p->tasks, &p->v[i]->tasks, now, ttl);
}

void
peers_retire_tasks(struct peers *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		tasks_retire_all(&p->tasks, &p->v[i]->tasks);
}

/* A disconnected peer keeps its tasks for when it resumes. */
static void
flush_peer(struct peers *p, struct peer *peer)
{
	if (peer_connected(peer) && tasks_unsent(&peer->tasks))
		tasks_send(&p->tasks, &peer->tasks, peer->conn, peer->id);
}

void
peers_flush(struct peers *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		flush_peer(p, p->v[i]);
}

static int
peers_start(struct master *m, struct mc_err *err)
{
	return peers_init(m->peers, m->base, m->store, err);
}

static void
peers_stop(struct master *m)
{
	peers_free(m->peers);
}

/* Tasks whose acknowledgement is overdue are sent again, or given up. */
static void
peers_sweep(struct master *m)
{
	peers_expire_tasks(m->peers, mc_now_ms(), m->cfg.task_ttl);
}

const struct master_module peers_module = {
	.name = "the peer table",
	.init = peers_start,
	.free = peers_stop,
	.sweep = peers_sweep,
};
