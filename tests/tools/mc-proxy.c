/*
 * mc-proxy: a byte-forwarding proxy for tests that need a connection to
 * fail under a daemon's feet.
 *
 * Every connection accepted on --listen gets one connection to --to, and
 * bytes go both ways unchanged; a half-close on one side is passed on to
 * the other. On SIGTERM or SIGINT the proxy resets every connection it
 * holds (SO_LINGER 0 on TCP, so both ends see ECONNRESET rather than an
 * orderly end) and exits: what a middlebox or a network failure does to
 * a long-lived link. Started again on the same address (SO_REUSEADDR,
 * and reset sockets leave no TIME_WAIT behind), it lets clients back in.
 * On SIGUSR1 it stops reading what clients send, on the connections it
 * holds and on those it accepts later, while the other way still flows:
 * a link that fails in one direction, so a test can let a daemon's
 * messages reach a client and keep the client's answers from it.
 *
 * One thread and one epoll set, level-triggered: each side reads only
 * while its buffer toward the other side has room, and writes while that
 * buffer holds bytes.
 *
 * Exit status: 0 after a signal, 64 usage, 69 cannot listen, 70 internal.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mc/addr.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/opt.h"

#define BUF_BYTES (64u << 10)
#define CONNECT_TIMEOUT_MS 2000
#define EVENTS_MAX 64

static struct {
	const char *listen;
	const char *to;
	int ready_fd;
} cfg = { .ready_fd = -1 };

static const struct mc_opt opts[] = {
	{ "listen", 0, "ADDR", NULL, "address to accept on (host:port or unix:/path)", mc_set_str,
	  &cfg.listen },
	{ "to", 0, "ADDR", NULL, "address each connection is forwarded to", mc_set_str, &cfg.to },
	{ "ready-fd", 0, "N", NULL, "write the bound address to fd N once listening", mc_set_fd,
	  &cfg.ready_fd },
	{ 0 },
};

static const struct mc_opt_spec spec = {
	.usage = "mc-proxy --listen ADDR --to ADDR [--ready-fd N]",
	.summary = "forward connections byte for byte; reset them all on SIGTERM",
	.opts = opts,
	.version = "mc-proxy " MC_VERSION,
};

struct pair;

/* One side of a forwarded connection and the bytes it sent not yet passed on. */
struct end {
	struct pair *pair;
	int fd;
	bool tcp;
	bool eof;	 /* it sent all it will */
	bool shut;	 /* the other side's EOF was passed on to it */
	size_t off, len; /* pending bytes of buf */
	char *buf;
};

struct pair {
	struct end e[2];
	bool dead; /* closed; freed once the events at hand are handled */
	struct pair *prev, *next;
};

static int ep = -1;
static struct pair *pairs, *dead;
static bool held; /* SIGUSR1: what clients send stays unread */

/* A socket reset rather than closed: no FIN, no TIME_WAIT. */
static void
reset_fd(int fd, bool tcp)
{
	if (tcp) {
		struct linger l = { 1, 0 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	close(fd);
}

/*
 * Close both sides (reset unless orderly) and set the pair aside: an
 * event for its other side may still be in the batch being handled.
 */
static void
pair_close(struct pair *p, bool orderly)
{
	for (int i = 0; i < 2; i++) {
		if (orderly)
			close(p->e[i].fd);
		else
			reset_fd(p->e[i].fd, p->e[i].tcp);
		p->e[i].fd = -1;
	}
	if (p->prev)
		p->prev->next = p->next;
	else
		pairs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->dead = true;
	p->prev = NULL;
	p->next = dead;
	dead = p;
}

static void
pair_free(struct pair *p)
{
	free(p->e[0].buf);
	free(p->e[1].buf);
	free(p);
}

static void
free_dead(void)
{
	while (dead) {
		struct pair *p = dead;

		dead = p->next;
		pair_free(p);
	}
}

/* What end i waits for: room to read into, bytes from the other side to write. */
static int
interest(struct pair *p, int i)
{
	struct epoll_event ev = { 0 };
	const struct end *me = &p->e[i], *other = &p->e[1 - i];

	if (!me->eof && me->len < BUF_BYTES && !(held && i == 0))
		ev.events |= EPOLLIN;
	if (other->len > other->off)
		ev.events |= EPOLLOUT;
	ev.data.ptr = &p->e[i];
	return epoll_ctl(ep, EPOLL_CTL_MOD, me->fd, &ev);
}

/* Write what end i's peer sent to end i; -1 when end i failed. */
static int
flush_to(struct pair *p, int i)
{
	struct end *me = &p->e[i], *from = &p->e[1 - i];

	while (from->len > from->off) {
		ssize_t n = write(me->fd, from->buf + from->off, from->len - from->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		from->off += (size_t)n;
	}
	from->off = from->len = 0;
	if (from->eof && !me->shut) {
		shutdown(me->fd, SHUT_WR);
		me->shut = true;
	}
	return 0;
}

/* Read from end i into its buffer; -1 when end i failed. */
static int
fill_from(struct pair *p, int i)
{
	struct end *me = &p->e[i];

	while (!me->eof && me->len < BUF_BYTES) {
		ssize_t n = read(me->fd, me->buf + me->len, BUF_BYTES - me->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -1;
		if (n == 0)
			me->eof = true;
		me->len += (size_t)n;
	}
	return 0;
}

static void
on_event(struct end *e, uint32_t events)
{
	struct pair *p = e->pair;
	int i = e == &p->e[0] ? 0 : 1;

	if (p->dead)
		return;
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && fill_from(p, i) < 0)
		goto fail;
	if (flush_to(p, 1 - i) < 0)
		goto fail;
	if ((events & EPOLLOUT) && flush_to(p, i) < 0)
		goto fail;
	/*
	 * Nothing more can pass through end i (level-triggered, this would
	 * come back forever): close the other side the same way it ended.
	 */
	if (events & (EPOLLHUP | EPOLLERR)) {
		pair_close(p, !(events & EPOLLERR));
		return;
	}
	/* Both directions ended and drained: an orderly end. */
	if (p->e[0].eof && p->e[1].eof && p->e[0].len == 0 && p->e[1].len == 0) {
		pair_close(p, true);
		return;
	}
	if (interest(p, 0) < 0 || interest(p, 1) < 0)
		goto fail;
	return;
fail:
	/* One side failed: the other learns it the same way. */
	pair_close(p, false);
}

/* A signal arrived: false to stop, true when it was SIGUSR1 (hold). */
static bool
on_signal(int sfd)
{
	struct signalfd_siginfo si;

	if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si) || si.ssi_signo != SIGUSR1)
		return false;
	mc_info("holding what clients send");
	held = true;
	for (struct pair *p = pairs, *next; p; p = next) {
		next = p->next;
		if (interest(p, 0) < 0)
			pair_close(p, false);
	}
	return true;
}

static void
accept_one(int lfd, const struct mc_addr *from, const struct mc_addr *to)
{
	struct mc_err err;
	struct pair *p;
	int cfd, ufd;

	cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			mc_warn("cannot accept: %s", mc_strerror(errno));
		return;
	}
	/* Loopback in tests: a blocking connect with a timeout is short. */
	ufd = mc_addr_connect(to, CONNECT_TIMEOUT_MS, &err);
	if (ufd < 0) {
		mc_warn("cannot connect to %s: %s", to->text, err.msg);
		reset_fd(cfd, !from->is_unix);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		goto oom;
	p->e[0].fd = cfd;
	p->e[0].tcp = !from->is_unix;
	p->e[1].fd = ufd;
	p->e[1].tcp = !to->is_unix;
	for (int i = 0; i < 2; i++) {
		p->e[i].pair = p;
		p->e[i].buf = malloc(BUF_BYTES);
	}
	p->next = pairs;
	if (pairs)
		pairs->prev = p;
	pairs = p;
	if (!p->e[0].buf || !p->e[1].buf || fcntl(ufd, F_SETFL, O_NONBLOCK) < 0)
		goto fail;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &p->e[i] };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, p->e[i].fd, &ev) < 0)
			goto fail;
	}
	if (held && interest(p, 0) < 0)
		goto fail;
	return;
oom:
	reset_fd(ufd, !to->is_unix);
	reset_fd(cfd, !from->is_unix);
	mc_warn("out of memory for a connection");
	return;
fail:
	mc_warn("cannot forward a connection: %s", mc_strerror(errno));
	pair_close(p, false);
	free_dead();
}

int
main(int argc, char **argv)
{
	struct mc_addr la, ta, bound;
	struct epoll_event evs[EVENTS_MAX];
	struct mc_err err;
	sigset_t sigs;
	int lfd, sfd;

	mc_log_init("mc-proxy", 1);
	if (mc_opt_parse(&spec, argc, argv) != argc)
		mc_die(MC_EXIT_USAGE, "unexpected argument; try 'mc-proxy --help'");
	if (!cfg.listen || !cfg.to)
		mc_die(MC_EXIT_USAGE, "needs --listen ADDR and --to ADDR");
	if (mc_addr_parse(cfg.listen, &la, &err) < 0)
		mc_die(MC_EXIT_USAGE, "invalid --listen '%s': %s", cfg.listen, err.msg);
	if (mc_addr_parse(cfg.to, &ta, &err) < 0)
		mc_die(MC_EXIT_USAGE, "invalid --to '%s': %s", cfg.to, err.msg);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &sigs, NULL) < 0 ||
	    (sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		mc_die(MC_EXIT_SOFTWARE, "cannot watch signals: %s", mc_strerror(errno));
	lfd = mc_addr_listen(&la, 128, &bound, &err);
	if (lfd < 0)
		mc_die(MC_EXIT_UNAVAILABLE, "%s", err.msg);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		mc_die(MC_EXIT_SOFTWARE, "cannot create an epoll set: %s", mc_strerror(errno));
	struct epoll_event lev = { .events = EPOLLIN, .data.ptr = NULL };
	struct epoll_event sev = { .events = EPOLLIN, .data.ptr = &sfd };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &sev) < 0)
		mc_die(MC_EXIT_SOFTWARE, "cannot watch the listener: %s", mc_strerror(errno));
	mc_announce_ready(cfg.ready_fd, bound.text);
	for (;;) {
		int n = epoll_wait(ep, evs, EVENTS_MAX, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			mc_die(MC_EXIT_SOFTWARE, "epoll_wait: %s", mc_strerror(errno));
		for (int k = 0; k < n; k++) {
			if (evs[k].data.ptr == NULL)
				accept_one(lfd, &la, &ta);
			else if (evs[k].data.ptr == &sfd) {
				if (!on_signal(sfd))
					goto stop;
			} else
				on_event(evs[k].data.ptr, evs[k].events);
		}
		free_dead();
	}
stop:
	mc_info("stopping: resetting every connection");
	while (pairs)
		pair_close(pairs, false);
	free_dead();
	close(lfd);
	close(ep);
	return MC_EXIT_OK;
}
