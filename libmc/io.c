/*
 * Plain descriptor I/O (mc/io.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc/err.h"
#include "mc/io.h"
#include "mc/log.h"

int
mc_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
mc_read_secret(const char *path, char *buf, size_t cap, char *why)
{
	FILE *f = fopen(path, "r");
	size_t n, skip = 0;

	if (f == NULL) {
		snprintf(why, MC_ERR_MSG_MAX, "cannot read %s: %s", path, mc_strerror(errno));
		return -1;
	}
	if (fgets(buf, (int)cap, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	n = strlen(buf);
	if (n + 1 == cap && buf[n - 1] != '\n') {
		snprintf(why, MC_ERR_MSG_MAX, "%s: the secret is longer than %zu bytes", path,
			 cap - 2);
		return -1;
	}
	while (n > 0 && strchr(" \t\r\n", buf[n - 1]) != NULL)
		buf[--n] = '\0';
	while (buf[skip] == ' ' || buf[skip] == '\t')
		skip++;
	memmove(buf, buf + skip, n - skip + 1);
	if (buf[0] == '\0') {
		snprintf(why, MC_ERR_MSG_MAX, "%s holds no secret", path);
		return -1;
	}
	return 0;
}

int
mc_check_private(int fd, const char *path, const char *if_written, const char *if_read,
		 struct mc_err *err)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot stat %s: %s", path,
				  mc_strerror(errno));
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return mc_err_set(err, MC_ERR_INVALID,
				  "%s is writable by group or others (mode %04o): %s; chmod 600 %s",
				  path, (unsigned)(st.st_mode & 07777), if_written, path);
	if (st.st_mode & (S_IRGRP | S_IROTH))
		mc_warn("%s is readable by group or others (mode %04o): %s; chmod 600 %s", path,
			(unsigned)(st.st_mode & 07777), if_read, path);
	return 0;
}
