/*
 * The master's auth file (mc-auth(5)): who may speak to it, by role.
 *
 * A text file, one entry a line: "ROLE NAME SALT HASH", ROLE one of
 * tenant, admin or peer, NAME the tenant the token speaks for (for a
 * peer, the identity the master binds its id to; "peers" is the secret
 * every peer may share, MC_AUTH_SHARED_PEER), SALT 16 random bytes
 * and HASH crypto_generichash(SALT || token) in hex. The token itself
 * is never stored: mc_authfile_add makes one, hands it back to be
 * printed once, and keeps only its salted hash. Blank lines and lines
 * starting with '#' are comments.
 */
#ifndef MC_AUTHFILE_H
#define MC_AUTHFILE_H

#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/proto.h"

enum mc_auth_role {
	MC_ROLE_NONE = 0, /* said no hello, or no valid token */
	MC_ROLE_TENANT,	  /* its own tenant's objects */
	MC_ROLE_ADMIN,	  /* a tenant's calls, and the operator's */
	MC_ROLE_PEER,	  /* a peer's control connection */
};

/* The name of the peer entry that every peer may share: no identity of its own. */
#define MC_AUTH_SHARED_PEER "peers"

#define MC_AUTH_SALT_LEN 16
#define MC_AUTH_HASH_LEN 32
/* 256 random bits, in hex: what a client sends */
#define MC_AUTH_TOKEN_LEN 64

struct mc_auth_entry {
	int role; /* enum mc_auth_role */
	char name[MC_NAME_MAX + 1];
	uint8_t salt[MC_AUTH_SALT_LEN];
	uint8_t hash[MC_AUTH_HASH_LEN];
};

struct mc_authfile {
	struct mc_auth_entry *v;
	size_t n, cap;
};

/* "tenant", "admin", "peer" ("none" for MC_ROLE_NONE). */
const char *mc_auth_role_name(int role);

/* Parse text (len bytes) into a (empty on entry); -1 with err naming the line. */
int mc_authfile_parse(struct mc_authfile *a, const char *text, size_t len, struct mc_err *err);
/* Load path; a missing file is an error unless missing_ok (then a is empty). */
int mc_authfile_load(struct mc_authfile *a, const char *path, int missing_ok, struct mc_err *err);
/* Write a to path atomically (a temporary beside it, renamed), mode 0600. */
int mc_authfile_save(const struct mc_authfile *a, const char *path, struct mc_err *err);
void mc_authfile_free(struct mc_authfile *a);

/* The entry whose hash the token matches, or NULL (every entry is tried). */
const struct mc_auth_entry *mc_authfile_match(const struct mc_authfile *a, const char *token,
					      size_t len);
/*
 * Add an entry for a new random token, written into token
 * (MC_AUTH_TOKEN_LEN + 1 bytes, NUL-terminated). One entry per role and
 * name: -1 (MC_ERR_EXISTS) when there is one already.
 */
int mc_authfile_add(struct mc_authfile *a, int role, const char *name, char *token,
		    struct mc_err *err);
/* Remove the entries of name (any role); how many went. */
size_t mc_authfile_rm(struct mc_authfile *a, const char *name);

#endif
