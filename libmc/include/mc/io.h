/*
 * Plain descriptor I/O that every program needs the same way.
 */
#ifndef MC_IO_H
#define MC_IO_H

#include <stddef.h>

/*
 * Write all len bytes of buf to fd, through short writes and EINTR.
 * 0, or -1 with errno set (a descriptor that accepts nothing is EIO).
 */
int mc_write_all(int fd, const void *buf, size_t len);

/*
 * A secret kept in a file (a tool's --token-file, the peer's
 * --peer-secret-file): its first line, without surrounding blanks, into
 * buf (cap bytes, NUL-terminated). 0, or -1 with a reason in why
 * (MC_ERR_MSG_MAX bytes) for an unreadable, empty or oversized one.
 */
int mc_read_secret(const char *path, char *buf, size_t cap, char *why);

struct mc_err;

/*
 * A file only its owner should touch (the auth file, a token file),
 * open on fd: one group or others may write is refused (-1, err says
 * why: if_written, what whoever writes it could do), one they may read
 * warned of (if_read, what whoever reads it learns); 0 otherwise.
 */
int mc_check_private(int fd, const char *path, const char *if_written, const char *if_read,
		     struct mc_err *err);

#endif
