/*
 * The auth file (mc/authfile.h): parse, match, add, remove, save.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc/authfile.h"
#include "mc/io.h"
#include "mc/log.h"

static const char *const role_names[] = {
	[MC_ROLE_NONE] = "none",
	[MC_ROLE_TENANT] = "tenant",
	[MC_ROLE_ADMIN] = "admin",
	[MC_ROLE_PEER] = "peer",
};

const char *
mc_auth_role_name(int role)
{
	if (role < 0 || role > MC_ROLE_PEER)
		return "none";
	return role_names[role];
}

static int
role_from_name(const char *s, size_t len)
{
	for (int r = MC_ROLE_TENANT; r <= MC_ROLE_PEER; r++)
		if (strlen(role_names[r]) == len && memcmp(role_names[r], s, len) == 0)
			return r;
	return MC_ROLE_NONE;
}

static int
init_sodium(struct mc_err *err)
{
	if (sodium_init() < 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot initialize libsodium");
	return 0;
}

static void
hash_token(const uint8_t *salt, const char *token, size_t len, uint8_t *out)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, MC_AUTH_HASH_LEN);
	crypto_generichash_update(&st, salt, MC_AUTH_SALT_LEN);
	crypto_generichash_update(&st, (const unsigned char *)token, len);
	crypto_generichash_final(&st, out, MC_AUTH_HASH_LEN);
}

static struct mc_auth_entry *
push(struct mc_authfile *a, struct mc_err *err)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		struct mc_auth_entry *v = realloc(a->v, cap * sizeof(*v));

		if (v == NULL) {
			mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the auth file");
			return NULL;
		}
		a->v = v;
		a->cap = cap;
	}
	return memset(&a->v[a->n++], 0, sizeof(a->v[0]));
}

/* The next space-separated word of [*p, end), or NULL at the line's end. */
static const char *
word(const char **p, const char *end, size_t *len)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*p = s;
	while (*p < end && **p != ' ' && **p != '\t')
		(*p)++;
	*len = (size_t)(*p - s);
	return *len > 0 ? s : NULL;
}

static int
unhex(const char *s, size_t len, uint8_t *out, size_t n)
{
	size_t got;

	if (len != 2 * n || sodium_hex2bin(out, n, s, len, NULL, &got, NULL) != 0 || got != n)
		return -1;
	return 0;
}

static int
parse_line(struct mc_authfile *a, const char *s, const char *end, unsigned line, struct mc_err *err)
{
	const char *w[5];
	size_t wl[5];
	struct mc_auth_entry *e;
	int role, n = 0;

	while (n < 5 && (w[n] = word(&s, end, &wl[n])) != NULL)
		n++;
	if (n == 0 || w[0][0] == '#')
		return 0;
	if (n != 4)
		return mc_err_set(err, MC_ERR_INVALID, "line %u: want ROLE NAME SALT HASH", line);
	role = role_from_name(w[0], wl[0]);
	if (role == MC_ROLE_NONE)
		return mc_err_set(err, MC_ERR_INVALID,
				  "line %u: unknown role '%.*s' (tenant, admin or peer)", line,
				  (int)(wl[0] > 32 ? 32 : wl[0]), w[0]);
	if (wl[1] > MC_NAME_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "line %u: name longer than %d", line,
				  MC_NAME_MAX);
	if ((e = push(a, err)) == NULL)
		return -1;
	e->role = role;
	memcpy(e->name, w[1], wl[1]);
	if (unhex(w[2], wl[2], e->salt, MC_AUTH_SALT_LEN) != 0 ||
	    unhex(w[3], wl[3], e->hash, MC_AUTH_HASH_LEN) != 0) {
		a->n--;
		return mc_err_set(err, MC_ERR_INVALID,
				  "line %u: salt or hash is not %d/%d hex bytes", line,
				  MC_AUTH_SALT_LEN, MC_AUTH_HASH_LEN);
	}
	return 0;
}

int
mc_authfile_parse(struct mc_authfile *a, const char *text, size_t len, struct mc_err *err)
{
	const char *p = text, *end = text + len;
	unsigned line = 0;

	if (init_sodium(err) < 0)
		return -1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl != NULL ? nl : end;

		line++;
		if (parse_line(a, p, eol > p && eol[-1] == '\r' ? eol - 1 : eol, line, err) < 0) {
			mc_authfile_free(a);
			return -1;
		}
		p = eol + (nl != NULL);
	}
	return 0;
}

int
mc_authfile_load(struct mc_authfile *a, const char *path, int missing_ok, struct mc_err *err)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t n = 0, cap = 0;
	int rc;

	*a = (struct mc_authfile){ 0 };
	if (f == NULL) {
		if (errno == ENOENT && missing_ok)
			return init_sodium(err);
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot read %s: %s", path,
				  mc_strerror(errno));
	}
	/*
	 * Whoever may write the file may add an admin token of their own;
	 * whoever may read it has the hashes to try tokens against offline.
	 */
	if (mc_check_private(fileno(f), path, "whoever can write it can make themselves admin",
			     "its hashes let them try tokens offline", err) != 0) {
		fclose(f);
		return -1;
	}
	for (;;) {
		if (n == cap) {
			char *t = realloc(text, cap = cap ? cap * 2 : 4096);

			if (t == NULL) {
				free(text);
				fclose(f);
				return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory reading %s",
						  path);
			}
			text = t;
		}
		size_t got = fread(text + n, 1, cap - n, f);

		n += got;
		if (got == 0)
			break;
	}
	rc = ferror(f) ? mc_err_set(err, MC_ERR_SYSTEM, "cannot read %s", path)
		       : mc_authfile_parse(a, text, n, err);
	if (rc < 0 && err->code == MC_ERR_INVALID) {
		char why[MC_ERR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", err->msg);
		mc_err_set(err, MC_ERR_INVALID, "%s: %s", path, why);
	}
	free(text);
	fclose(f);
	return rc;
}

int
mc_authfile_save(const struct mc_authfile *a, const char *path, struct mc_err *err)
{
	char tmp[4096];
	FILE *f;
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return mc_err_set(err, MC_ERR_INVALID, "path too long: %s", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		if (fd >= 0)
			close(fd);
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot write %s: %s", tmp,
				  mc_strerror(errno));
	}
	fprintf(f, "# mc auth file (mc-auth(5)): ROLE NAME SALT HASH; managed by mc-cli auth\n");
	for (size_t i = 0; i < a->n; i++) {
		char salt[2 * MC_AUTH_SALT_LEN + 1], hash[2 * MC_AUTH_HASH_LEN + 1];

		sodium_bin2hex(salt, sizeof(salt), a->v[i].salt, MC_AUTH_SALT_LEN);
		sodium_bin2hex(hash, sizeof(hash), a->v[i].hash, MC_AUTH_HASH_LEN);
		fprintf(f, "%s %s %s %s\n", mc_auth_role_name(a->v[i].role), a->v[i].name, salt,
			hash);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot write %s: %s", tmp, mc_strerror(errno));
		fclose(f);
		unlink(tmp);
		return -1;
	}
	fclose(f);
	if (rename(tmp, path) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot rename %s to %s: %s", tmp, path,
			   mc_strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

void
mc_authfile_free(struct mc_authfile *a)
{
	free(a->v);
	*a = (struct mc_authfile){ 0 };
}

const struct mc_auth_entry *
mc_authfile_match(const struct mc_authfile *a, const char *token, size_t len)
{
	const struct mc_auth_entry *found = NULL;

	/* every entry is hashed, so the time taken tells nothing of which matched */
	for (size_t i = 0; i < a->n; i++) {
		uint8_t h[MC_AUTH_HASH_LEN];

		hash_token(a->v[i].salt, token, len, h);
		if (sodium_memcmp(h, a->v[i].hash, MC_AUTH_HASH_LEN) == 0 && found == NULL)
			found = &a->v[i];
	}
	return found;
}

int
mc_authfile_add(struct mc_authfile *a, int role, const char *name, char *token, struct mc_err *err)
{
	uint8_t raw[MC_AUTH_TOKEN_LEN / 2];
	struct mc_auth_entry *e;
	size_t len = strlen(name);

	if (init_sodium(err) < 0)
		return -1;
	if (role < MC_ROLE_TENANT || role > MC_ROLE_PEER)
		return mc_err_set(err, MC_ERR_INVALID, "unknown role %d", role);
	if (len == 0 || len > MC_NAME_MAX || strpbrk(name, " \t\r\n") != NULL)
		return mc_err_set(err, MC_ERR_INVALID, "name must be 1..%d bytes without spaces",
				  MC_NAME_MAX);
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].role == role && strcmp(a->v[i].name, name) == 0)
			return mc_err_set(err, MC_ERR_EXISTS, "%s '%s' has a token already",
					  mc_auth_role_name(role), name);
	if ((e = push(a, err)) == NULL)
		return -1;
	e->role = role;
	memcpy(e->name, name, len);
	randombytes_buf(raw, sizeof(raw));
	randombytes_buf(e->salt, sizeof(e->salt));
	sodium_bin2hex(token, MC_AUTH_TOKEN_LEN + 1, raw, sizeof(raw));
	sodium_memzero(raw, sizeof(raw));
	hash_token(e->salt, token, MC_AUTH_TOKEN_LEN, e->hash);
	return 0;
}

size_t
mc_authfile_rm(struct mc_authfile *a, const char *name)
{
	size_t j = 0, n = a->n;

	for (size_t i = 0; i < n; i++)
		if (strcmp(a->v[i].name, name) != 0)
			a->v[j++] = a->v[i];
	a->n = j;
	return n - j;
}
