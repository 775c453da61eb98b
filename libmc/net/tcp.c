/*
 * The tcp transport (mc/transport.h): TCP and unix stream sockets.
 *
 * Reads are one recv into the sink's window (with MSG_WAITALL when the
 * caller wants the window whole); memory and registered regions leave
 * in one sendmsg over an iovec, a descriptor's range with sendfile(2)
 * straight from the page cache. Every send is MSG_NOSIGNAL: a closed
 * peer is an EPIPE, never a signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mc/transport.h"

/*
 * Send buffer of accepted TCP sockets (the kernel doubles it). Measured
 * with 1 MiB bulk reads on loopback: autotuning grows the buffer to
 * 4 MiB, and the receiver then copies bytes the sender's copy has
 * already pushed out of the cache; a fixed 512 KiB keeps the two copies
 * cache-warm and roughly doubles throughput (3.3 -> 7 GB/s) at lower
 * CPU per byte. It is still several times the bandwidth-delay product
 * of a LAN.
 */
#define TCP_SNDBUF (256 << 10)

static int
tcp_connect(struct mc_tconn *tc, const struct mc_addr *a, int timeout_ms, unsigned flags,
	    struct mc_err *err)
{
	int fd = mc_addr_connect(a, timeout_ms, err);

	if (fd < 0)
		return -1;
	if (flags & MC_TCONNECT_NONBLOCK) {
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
			mc_err_errno(err, "cannot make the socket to %s non-blocking", a->text);
			goto fail;
		}
	} else if (timeout_ms > 0) {
		struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
			mc_err_errno(err, "cannot set timeouts on %s", a->text);
			goto fail;
		}
	}
	mc_tconn_wrap(tc, &mc_transport_tcp, fd);
	return 0;
fail:
	close(fd);
	return -1;
}

static int
tcp_accept(struct mc_tconn *tc, int lfd, struct sockaddr_storage *ss, socklen_t *sslen)
{
	int fd, one = 1, sndbuf = TCP_SNDBUF;

	do {
		fd = accept4(lfd, (struct sockaddr *)ss, sslen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	}
	mc_tconn_wrap(tc, &mc_transport_tcp, fd);
	return 0;
}

static ssize_t
tcp_read(struct mc_tconn *tc, struct mc_bulk_sink *sink, uint64_t at, size_t max, unsigned flags)
{
	size_t n;
	char *w = mc_bulk_sink_window(sink, at, &n);
	ssize_t got;

	if (w == NULL)
		return MC_TREAD_SINK_FAILED;
	if (n > max)
		n = max;
	do {
		got = recv(tc->fd, w, n, (flags & MC_TREAD_ALL) ? MSG_WAITALL : 0);
	} while (got < 0 && errno == EINTR);
	if (got <= 0)
		return got;
	if (mc_bulk_sink_commit(sink, at, (size_t)got) < 0)
		return MC_TREAD_SINK_FAILED;
	return got;
}

/* A descriptor's range from position at, at most max bytes, with sendfile. */
static ssize_t
send_file(int sock, const struct mc_bulk_src *s, uint64_t at, size_t max)
{
	uint64_t left = s->len - at;
	size_t n = left < max ? (size_t)left : max;
	ssize_t w;

	if (s->off + at > (uint64_t)INT64_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	/* sendfile moves at most about 2 GiB a call: the caller loops */
	do {
		off_t pos = (off_t)(s->off + at);

		w = sendfile(sock, s->fd, &pos, n);
	} while (w < 0 && errno == EINTR);
	/* a file shorter than the range announced would leave the stream short */
	if (w == 0 && n > 0) {
		errno = ENODATA;
		return -1;
	}
	return w;
}

static ssize_t
tcp_write(struct mc_tconn *tc, const struct mc_bulk_src *src, int n, uint64_t at, size_t max)
{
	struct iovec iov[MC_TWRITE_MAX];
	struct msghdr mh;
	size_t total = 0;
	int k = 0;
	ssize_t w;

	/* empty sources ahead of the first byte are nothing to write */
	while (n > 0 && at >= src->len) {
		at -= src->len;
		src++;
		n--;
	}
	if (n == 0 || max == 0) {
		errno = EINVAL;
		return -1;
	}
	if (max > SSIZE_MAX / 2)
		max = SSIZE_MAX / 2;
	if (src->kind == MC_BULK_FD)
		return send_file(tc->fd, src, at, max);
	for (int i = 0; i < n && k < MC_TWRITE_MAX && total < max; i++, at = 0) {
		uint64_t len = src[i].len - at;

		if (src[i].kind == MC_BULK_FD)
			break;
		if (len == 0)
			continue;
		if (len > max - total)
			len = max - total;
		iov[k].iov_base = (char *)src[i].data + at;
		iov[k].iov_len = (size_t)len;
		total += (size_t)len;
		k++;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)k;
	do {
		w = sendmsg(tc->fd, &mh, MSG_NOSIGNAL);
	} while (w < 0 && errno == EINTR);
	return w;
}

static void
tcp_close(struct mc_tconn *tc)
{
	if (tc->fd >= 0)
		close(tc->fd);
	tc->fd = -1;
}

const struct mc_transport mc_transport_tcp = {
	.name = "tcp",
	.caps = MC_TRANSPORT_CAP_SENDFILE | MC_TRANSPORT_CAP_REMOTE,
	.connect = tcp_connect,
	.accept = tcp_accept,
	.read = tcp_read,
	.write = tcp_write,
	.close = tcp_close,
};
