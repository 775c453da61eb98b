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

#endif
