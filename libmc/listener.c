/*
 * Listening, and the limits accepted connections live under (mc/conn.h:
 * mc_server_*, mc_conn_limits_daemon, mc_conn_stats_*).
 *
 * A server listens on one address and serves each connection it
 * accepts with its ops. It counts its open connections, in all and per
 * address in a hash table (every unix client being the same address),
 * and closes one over either cap as soon as it is accepted; on EMFILE
 * it stops listening for a moment instead of spinning on its backlog.
 *
 * Limits of accepted connections: one timer per connection serves the
 * header and the idle timeout. Traffic only moves timestamps; the timer
 * checks them when it fires and re-arms itself for what is left, so a
 * busy connection costs no timer operations beyond one when a read pass
 * ends inside a message.
 *
 * The process-wide counters are kept here: most of them count what the
 * listener and these limits do.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn_impl.h"
#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/hash.h"
#include "mc/log.h"
#include "mc/metrics.h"

#define ACCEPT_BURST 64	      /* connections one readable listener accepts at most */
#define EMFILE_BACKOFF_MS 100 /* listening paused this long when out of descriptors */

/* Open connections from one address: family tag, then the address bytes. */
#define ADDR_KEY_LEN 17
struct addr_count {
	unsigned char key[ADDR_KEY_LEN];
	uint64_t hash;
	int n;
};

struct mc_server {
	struct event_base *base;
	int fd; /* the listening socket */
	struct event *ev, *backoff;
	struct mc_conn_ops ops;
	struct mc_conn_limits lim;
	struct mc_addr addr;
	struct mc_conn *conns;
	int nconns;
	struct mc_conn *unvouched, *unvouched_last; /* oldest first (lim.max_unvouched) */
	int nunvouched;
	struct mc_htab per_addr; /* struct addr_count, with max_conns_per_addr */
};

static bool
addr_count_eq(const void *entry, const void *key)
{
	return memcmp(((const struct addr_count *)entry)->key, key, ADDR_KEY_LEN) == 0;
}

/* ---- the process-wide counters (conn_impl.h) ---- */

struct mc_conn_stats mc_cn_stats;

void
mc_conn_stats_get(struct mc_conn_stats *out)
{
	out->accepted = __atomic_load_n(&mc_cn_stats.accepted, __ATOMIC_RELAXED);
	out->closed = __atomic_load_n(&mc_cn_stats.closed, __ATOMIC_RELAXED);
	out->malformed = __atomic_load_n(&mc_cn_stats.malformed, __ATOMIC_RELAXED);
	out->bytes_in = __atomic_load_n(&mc_cn_stats.bytes_in, __ATOMIC_RELAXED);
	out->bytes_out = __atomic_load_n(&mc_cn_stats.bytes_out, __ATOMIC_RELAXED);
	out->header_timeouts = __atomic_load_n(&mc_cn_stats.header_timeouts, __ATOMIC_RELAXED);
	out->idle_timeouts = __atomic_load_n(&mc_cn_stats.idle_timeouts, __ATOMIC_RELAXED);
	out->hello_timeouts = __atomic_load_n(&mc_cn_stats.hello_timeouts, __ATOMIC_RELAXED);
	out->shed_unvouched = __atomic_load_n(&mc_cn_stats.shed_unvouched, __ATOMIC_RELAXED);
	out->slow_bulks = __atomic_load_n(&mc_cn_stats.slow_bulks, __ATOMIC_RELAXED);
	out->undrained = __atomic_load_n(&mc_cn_stats.undrained, __ATOMIC_RELAXED);
	out->refused_per_addr = __atomic_load_n(&mc_cn_stats.refused_per_addr, __ATOMIC_RELAXED);
	out->refused_max_conns = __atomic_load_n(&mc_cn_stats.refused_max_conns, __ATOMIC_RELAXED);
}

void
mc_conn_stats_export(struct mc_metrics *r)
{
	struct mc_conn_stats st;
	const struct {
		const char *reason;
		const uint64_t *v;
	} rows[] = {
		{ "header_timeout", &st.header_timeouts }, { "idle_timeout", &st.idle_timeouts },
		{ "hello_timeout", &st.hello_timeouts },   { "unvouched", &st.shed_unvouched },
		{ "slow_bulk", &st.slow_bulks },	   { "undrained", &st.undrained },
		{ "per_addr", &st.refused_per_addr },	   { "max_conns", &st.refused_max_conns },
	};

	mc_conn_stats_get(&st);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mc_metric *m = mc_metric_get(
			r, "mc_connections_closed_total", MC_COUNTER,
			"Connections closed or refused by a connection limit, by reason.", "reason",
			rows[i].reason);

		if (m != NULL)
			mc_metric_set(m, (double)*rows[i].v);
	}
}

void
mc_conn_limits_daemon(struct mc_conn_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->max_conns = 4096;
	lim->max_conns_per_addr = 1024;
	lim->max_unvouched = 256;
	lim->min_bulk_rate = MC_MIN_BULK_RATE;
	lim->header_timeout_ms = 10 * 1000;
	lim->idle_timeout_ms = 5 * 60 * 1000;
}

/* ---- limits of accepted connections ---- */

/* A limit in ms as nanoseconds, saturating. */
static uint64_t
ms_ns(uint64_t ms)
{
	return ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u;
}

/* Fire in ns (at most an hour: the check re-arms for what is left). */
static void
limit_arm(struct mc_conn *c, uint64_t ns)
{
	struct timeval tv;
	uint64_t now = mc_mono_ns();

	if (ns > ms_ns(3600 * 1000))
		ns = ms_ns(3600 * 1000);
	/* no later than the hello timeout or the bulk's rate window, whatever the others want */
	if (c->hello_due_ns != 0 && mc_add_sat(now, ns) > c->hello_due_ns)
		ns = c->hello_due_ns > now ? c->hello_due_ns - now : 0;
	if (c->rate_ns != 0) {
		uint64_t due = mc_add_sat(c->rate_ns, ms_ns(MC_BULK_RATE_WINDOW_MS));

		if (mc_add_sat(now, ns) > due)
			ns = due > now ? due - now : 0;
	}
	c->limit_due_ns = mc_add_sat(now, ns);
	tv.tv_sec = (time_t)(ns / 1000000000u);
	tv.tv_usec = (suseconds_t)(ns % 1000000000u / 1000u);
	if (event_add(c->limit_ev, &tv) != 0)
		mc_warn("%s: cannot arm its timeouts", c->name);
}

/* Work in flight that the idle timeout waits for. */
static bool
conn_busy(const struct mc_conn *c)
{
	return c->bulk_mode != BULK_NONE || c->ndeferred > 0 || c->calls != NULL || c->oh != NULL ||
	       c->closing;
}

/*
 * A bulk's rate window is over: whether it brought the floor's bytes
 * (the connection is closed when not), and the next window begun. A
 * window the bulk ended in ends with it.
 */
static bool
bulk_rate_holds(struct mc_conn *c, uint64_t now)
{
	uint64_t win = ms_ns(MC_BULK_RATE_WINDOW_MS), need;

	if (c->bulk_mode == BULK_NONE) {
		c->rate_ns = 0;
		return true;
	}
	if (now - c->rate_ns < win)
		return true;
	need = c->lim.min_bulk_rate * (MC_BULK_RATE_WINDOW_MS / 1000);
	if (c->in_total - c->rate_in < need) {
		STAT_ADD(slow_bulks, 1);
		mc_info("closing %s: its bulk brought %llu bytes in %d s, under --min-bulk-rate "
			"%llu bytes a second",
			c->name, (unsigned long long)(c->in_total - c->rate_in),
			MC_BULK_RATE_WINDOW_MS / 1000, (unsigned long long)c->lim.min_bulk_rate);
		mc_cn_shutdown(c);
		return false;
	}
	c->rate_ns = now;
	c->rate_in = c->in_total;
	limit_arm(c, win);
	return true;
}

static void
on_limit(evutil_socket_t fd, short what, void *arg)
{
	struct mc_conn *c = arg;
	uint64_t now = mc_mono_ns(), due;

	(void)fd;
	(void)what;
	if (c->hello_due_ns != 0 && now >= c->hello_due_ns) {
		STAT_ADD(hello_timeouts, 1);
		mc_info("closing %s: no hello that authenticated %llu ms after connecting", c->name,
			(unsigned long long)c->lim.hello_timeout_ms);
		mc_cn_shutdown(c);
		return;
	}
	if (c->rate_ns != 0 && !bulk_rate_holds(c, now))
		return;
	if (c->msg_ns != 0 && c->lim.header_timeout_ms > 0) {
		due = mc_add_sat(c->msg_ns, ms_ns(c->lim.header_timeout_ms));
		if (now < due) {
			limit_arm(c, due - now);
			return;
		}
		STAT_ADD(header_timeouts, 1);
		mc_info("closing %s: no whole message %llu ms after %s", c->name,
			(unsigned long long)c->lim.header_timeout_ms,
			c->in_end > c->in_start ? "its first byte" : "connecting");
		mc_cn_shutdown(c);
		return;
	}
	/* a message that begins arms the timer again */
	if (c->lim.idle_timeout_ms == 0 || c->keep) {
		/* as late as may be: limit_arm brings it to the hello or rate deadline */
		if (c->hello_due_ns != 0 || c->rate_ns != 0)
			limit_arm(c, ms_ns(3600 * 1000));
		return;
	}
	if (conn_busy(c)) {
		limit_arm(c, ms_ns(c->lim.idle_timeout_ms));
		return;
	}
	due = mc_add_sat(c->active_ns, ms_ns(c->lim.idle_timeout_ms));
	if (now < due) {
		limit_arm(c, due - now);
		return;
	}
	STAT_ADD(idle_timeouts, 1);
	mc_debug("closing %s: idle for %llu ms", c->name,
		 (unsigned long long)c->lim.idle_timeout_ms);
	mc_cn_shutdown(c);
}

/*
 * After a read pass: there was traffic, and a message left partial in
 * the buffer starts the header clock, or keeps it running when it is
 * the same message as before.
 */
void
mc_cn_limit_after_read(struct mc_conn *c, uint64_t parsed_before)
{
	uint64_t now = mc_mono_ns();

	c->active_ns = now;
	/* a bulk under way opens its rate window */
	if (c->bulk_mode != BULK_NONE && c->lim.min_bulk_rate > 0 && c->rate_ns == 0 &&
	    c->limit_ev != NULL) {
		c->rate_ns = now;
		c->rate_in = c->in_total;
		limit_arm(c, ms_ns(MC_BULK_RATE_WINDOW_MS));
	}
	if (c->bulk_mode != BULK_NONE || c->held != NULL || c->in_end == c->in_start) {
		/*
		 * The header clock stops; the timer it armed may be due long
		 * after the idle timeout (a new connection's is), so it is
		 * brought forward to it.
		 */
		if (c->msg_ns != 0 && c->lim.idle_timeout_ms > 0 && !c->keep &&
		    c->limit_due_ns > mc_add_sat(now, ms_ns(c->lim.idle_timeout_ms)))
			limit_arm(c, ms_ns(c->lim.idle_timeout_ms));
		c->msg_ns = 0;
		return;
	}
	if (c->msg_ns != 0 && c->nparsed == parsed_before)
		return;
	c->msg_ns = now;
	if (c->lim.header_timeout_ms > 0)
		limit_arm(c, ms_ns(c->lim.header_timeout_ms));
}

/* The connection was just accepted: its first message is due, or it idles. */
static int
limit_start(struct mc_conn *c)
{
	uint64_t first;

	if (c->lim.header_timeout_ms == 0 && c->lim.idle_timeout_ms == 0 &&
	    c->lim.hello_timeout_ms == 0 && c->lim.min_bulk_rate == 0)
		return 0;
	c->limit_ev = evtimer_new(c->base, on_limit, c);
	if (c->limit_ev == NULL)
		return -1;
	c->active_ns = mc_mono_ns();
	if (c->lim.hello_timeout_ms > 0)
		c->hello_due_ns = mc_add_sat(c->active_ns, ms_ns(c->lim.hello_timeout_ms));
	c->msg_ns = c->lim.header_timeout_ms > 0 ? c->active_ns : 0;
	first = c->msg_ns != 0 ? c->lim.header_timeout_ms : c->lim.idle_timeout_ms;
	limit_arm(c, ms_ns(first));
	return 0;
}

/*
 * The key of a client's address: its IP address, or on a unix socket
 * its user (SO_PEERCRED on fd), so that one local user's flood does not
 * lock out another's clients; a unix client whose user cannot be told
 * shares the key of all zeros.
 */
static void
addr_key(const struct sockaddr_storage *ss, int fd, unsigned char key[ADDR_KEY_LEN])
{
	memset(key, 0, ADDR_KEY_LEN);
	if (ss->ss_family == AF_UNIX) {
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
		    len == sizeof(cred)) {
			key[0] = 1;
			memcpy(key + 1, &cred.uid, sizeof(cred.uid));
		}
	} else if (ss->ss_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			key[0] = 4;
			memcpy(key + 1, a6->s6_addr + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a6->s6_addr, 16);
		}
	}
}

/* ---- the unvouched, oldest first ---- */

static void
unvouched_add(struct mc_server *s, struct mc_conn *c)
{
	c->uprev = s->unvouched_last;
	c->unext = NULL;
	if (s->unvouched_last != NULL)
		s->unvouched_last->unext = c;
	else
		s->unvouched = c;
	s->unvouched_last = c;
	c->unvouched = true;
	s->nunvouched++;
}

static void
unvouched_del(struct mc_server *s, struct mc_conn *c)
{
	if (!c->unvouched)
		return;
	if (c->uprev != NULL)
		c->uprev->unext = c->unext;
	else
		s->unvouched = c->unext;
	if (c->unext != NULL)
		c->unext->uprev = c->uprev;
	else
		s->unvouched_last = c->uprev;
	c->uprev = c->unext = NULL;
	c->unvouched = false;
	s->nunvouched--;
}

void
mc_cn_server_vouched(struct mc_conn *c)
{
	if (c->srv != NULL)
		unvouched_del(c->srv, c);
}

/* Shedding looks this far past the oldest stranger for one that holds its slot silent. */
#define SHED_LOOK 16

/*
 * Whether c sent bytes the loop has not read yet: a request on its way
 * to be judged, which may well vouch for it (a granted read under a
 * flood of strangers is one). Bytes read and left partial do not count:
 * the header timeout judges those.
 */
static bool
unread(const struct mc_conn *c)
{
	int n = 0;

	return ioctl(c->tc.fd, FIONREAD, &n) == 0 && n > 0;
}

/*
 * Close a connection nobody vouched for: the oldest of the first
 * SHED_LOOK that has sent nothing unread, else the oldest. Whether
 * there was one.
 */
static bool
shed_unvouched(struct mc_server *s)
{
	struct mc_conn *c = s->unvouched, *q = c;

	for (int i = 0; q != NULL && i < SHED_LOOK; q = q->unext, i++)
		if (!unread(q)) {
			c = q;
			break;
		}
	if (c == NULL)
		return false;
	STAT_ADD(shed_unvouched, 1);
	mc_info("closing %s: one of the %d connections on %s that have not authenticated", c->name,
		s->nunvouched, s->addr.text);
	mc_conn_close(c, false);
	return true;
}

/* ---- closing ---- */

void
mc_cn_server_unlink(struct mc_conn *c)
{
	struct mc_server *s = c->srv;

	if (s == NULL)
		return;
	unvouched_del(s, c);
	if (c->sprev != NULL)
		c->sprev->snext = c->snext;
	else
		s->conns = c->snext;
	if (c->snext != NULL)
		c->snext->sprev = c->sprev;
	c->sprev = c->snext = NULL;
	c->srv = NULL;
	s->nconns--;
	if (c->addr != NULL && --c->addr->n == 0) {
		mc_htab_remove(&s->per_addr, c->addr->hash, addr_count_eq, c->addr->key);
		free(c->addr);
	}
	c->addr = NULL;
}

/* ---- servers ---- */

static void
on_backoff(evutil_socket_t fd, short what, void *arg)
{
	struct mc_server *s = arg;

	(void)fd;
	(void)what;
	event_add(s->ev, NULL);
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct mc_server *s = arg;
	const struct mc_transport *t =
		s->ops.transport != NULL ? s->ops.transport : &mc_transport_tcp;
	int i;

	(void)what;
	for (i = 0; i < ACCEPT_BURST; i++) {
		unsigned char key[ADDR_KEY_LEN];
		struct sockaddr_storage ss;
		socklen_t sslen = sizeof(ss);
		struct addr_count *ac = NULL;
		struct mc_conn *c;
		struct mc_tconn tc;
		struct mc_err e;
		uint64_t h = 0;

		memset(&ss, 0, sizeof(ss));
		mc_tconn_wrap(&tc, t, -1);
		if (t->accept(&tc, lfd, &ss, &sslen) < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/*
				 * The pending connection stays in the backlog and
				 * keeps the listener readable: stop listening for
				 * a moment instead of spinning on it.
				 */
				struct timeval tv = { 0, EMFILE_BACKOFF_MS * 1000 };

				mc_warn("cannot accept on %s: %s; pausing %d ms", s->addr.text,
					strerror(errno), EMFILE_BACKOFF_MS);
				event_del(s->ev);
				evtimer_add(s->backoff, &tv);
				return;
			}
			mc_warn("cannot accept on %s: %s", s->addr.text, strerror(errno));
			return;
		}
		/* strangers make room for a newcomer before anyone else is refused */
		if (s->lim.max_unvouched > 0 && s->nunvouched >= s->lim.max_unvouched)
			shed_unvouched(s);
		if (s->nconns >= s->lim.max_conns && !shed_unvouched(s)) {
			STAT_ADD(refused_max_conns, 1);
			mc_warn("refusing a connection on %s: %d connections open", s->addr.text,
				s->nconns);
			tc.t->close(&tc);
			continue;
		}
		if (s->lim.max_conns_per_addr > 0) {
			addr_key(&ss, tc.fd, key);
			h = mc_hash64(key, sizeof(key), 0);
			ac = mc_htab_find(&s->per_addr, h, addr_count_eq, key);
			if (ac != NULL && ac->n >= s->lim.max_conns_per_addr) {
				STAT_ADD(refused_per_addr, 1);
				mc_warn("refusing a connection on %s: %d connections open from its "
					"address",
					s->addr.text, ac->n);
				tc.t->close(&tc);
				continue;
			}
		}
		c = mc_cn_new(s->base, &tc, &s->ops, &s->lim, &e);
		if (c == NULL) {
			mc_warn("cannot serve a connection on %s: %s", s->addr.text, e.msg);
			tc.t->close(&tc);
			continue;
		}
		if (limit_start(c) < 0) {
			mc_warn("cannot serve a connection on %s: cannot arm its timeouts",
				s->addr.text);
			mc_conn_close(c, false);
			continue;
		}
		if (s->lim.max_conns_per_addr > 0 && ac == NULL) {
			ac = calloc(1, sizeof(*ac));
			if (ac == NULL || mc_htab_insert(&s->per_addr, h, ac) < 0) {
				free(ac);
				mc_warn("cannot serve a connection on %s: out of memory",
					s->addr.text);
				mc_conn_close(c, false);
				continue;
			}
			memcpy(ac->key, key, sizeof(key));
			ac->hash = h;
		}
		if (ac != NULL)
			ac->n++;
		c->addr = ac;
		c->accepted = true;
		c->srv = s;
		c->snext = s->conns;
		if (s->conns != NULL)
			s->conns->sprev = c;
		s->conns = c;
		s->nconns++;
		if (c->hello_due_ns != 0)
			unvouched_add(s, c);
		STAT_ADD(accepted, 1);
		mc_debug("accepted %s on %s", c->name, s->addr.text);
	}
}

struct mc_server *
mc_server_new(struct event_base *base, const struct mc_addr *addr, const struct mc_conn_ops *ops,
	      const struct mc_conn_limits *lim, struct mc_addr *bound, struct mc_err *err)
{
	struct mc_server *s;

	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate a server");
		return NULL;
	}
	s->base = base;
	s->fd = -1;
	if (ops != NULL)
		s->ops = *ops;
	mc_cn_limits_norm(&s->lim, lim);
	mc_htab_init(&s->per_addr);
	s->fd = mc_addr_listen(addr, 1024, &s->addr, err);
	if (s->fd < 0)
		goto fail;
	s->ev = event_new(base, s->fd, EV_READ | EV_PERSIST, on_accept, s);
	s->backoff = evtimer_new(base, on_backoff, s);
	if (s->ev == NULL || s->backoff == NULL || event_add(s->ev, NULL) < 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot register the listener on %s", addr->text);
		goto fail;
	}
	if (bound != NULL)
		*bound = s->addr;
	return s;
fail:
	if (s->ev != NULL)
		event_free(s->ev);
	if (s->backoff != NULL)
		event_free(s->backoff);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return NULL;
}

void
mc_server_free(struct mc_server *s)
{
	if (s == NULL)
		return;
	event_free(s->ev);
	event_free(s->backoff);
	close(s->fd);
	if (s->addr.is_unix) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&s->addr.ss;

		if (un->sun_path[0] != '\0')
			unlink(un->sun_path);
	}
	while (s->conns != NULL)
		mc_cn_shutdown(s->conns);
	mc_htab_free(&s->per_addr);
	free(s);
}

int
mc_server_conn_count(const struct mc_server *s)
{
	return s->nconns;
}
