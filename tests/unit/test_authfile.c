/* Unit tests for the auth file (libmc/authfile.c): tokens, hashes, parsing, saving. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/authfile.h"
#include "tap.h"

static void
test_add_match(void)
{
	struct mc_authfile a = { 0 };
	struct mc_err err;
	char t1[MC_AUTH_TOKEN_LEN + 1], t2[MC_AUTH_TOKEN_LEN + 1], t3[MC_AUTH_TOKEN_LEN + 1];
	const struct mc_auth_entry *e;

	TAP_OK(mc_authfile_add(&a, MC_ROLE_TENANT, "alice", t1, &err) == 0 &&
		       mc_authfile_add(&a, MC_ROLE_ADMIN, "ops", t2, &err) == 0 &&
		       mc_authfile_add(&a, MC_ROLE_PEER, "peers", t3, &err) == 0,
	       "add: a tenant, an admin and the peer secret");
	TAP_OK(strlen(t1) == MC_AUTH_TOKEN_LEN && strcmp(t1, t2) != 0 && strcmp(t2, t3) != 0,
	       "add: tokens are 64 hex digits, each its own");
	e = mc_authfile_match(&a, t1, strlen(t1));
	TAP_OK(e != NULL && e->role == MC_ROLE_TENANT && strcmp(e->name, "alice") == 0,
	       "match: the tenant's token finds its entry");
	e = mc_authfile_match(&a, t3, strlen(t3));
	TAP_OK(e != NULL && e->role == MC_ROLE_PEER, "match: the peer secret finds the peer role");
	t1[0] = t1[0] == '0' ? '1' : '0';
	TAP_OK(mc_authfile_match(&a, t1, strlen(t1)) == NULL &&
		       mc_authfile_match(&a, "", 0) == NULL,
	       "match: a changed or empty token matches nothing");
	TAP_OK(mc_authfile_add(&a, MC_ROLE_TENANT, "alice", t1, &err) == -1 &&
		       err.code == MC_ERR_EXISTS,
	       "add: a second token for the same tenant is refused (%s)", err.msg);
	TAP_OK(mc_authfile_add(&a, MC_ROLE_TENANT, "a b", t1, &err) == -1 &&
		       err.code == MC_ERR_INVALID,
	       "add: a name with a space is refused");
	TAP_OK(mc_authfile_rm(&a, "ops") == 1 && a.n == 2 &&
		       mc_authfile_match(&a, t2, strlen(t2)) == NULL,
	       "rm: the removed entry's token no longer matches");
	mc_authfile_free(&a);
}

static void
test_parse(void)
{
	struct mc_authfile a = { 0 };
	struct mc_err err;
	const char *good = "# comment\n\n"
			   "tenant alice 000102030405060708090a0b0c0d0e0f "
			   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\r\n"
			   "  admin\tops 000102030405060708090a0b0c0d0e0f "
			   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

	TAP_OK(mc_authfile_parse(&a, good, strlen(good), &err) == 0 && a.n == 2 &&
		       a.v[0].role == MC_ROLE_TENANT && strcmp(a.v[1].name, "ops") == 0 &&
		       a.v[0].salt[15] == 0x0f && a.v[0].hash[31] == 0xff,
	       "parse: comments, blank lines, tabs and CRLF");
	mc_authfile_free(&a);
	TAP_OK(mc_authfile_parse(&a, "root x 00 00\n", 13, &err) == -1 &&
		       strcmp(err.msg, "line 1: unknown role 'root' (tenant, admin or peer)") == 0,
	       "parse: an unknown role is named (%s)", err.msg);
	TAP_OK(mc_authfile_parse(&a, "#\ntenant x 00 00\n", 17, &err) == -1 &&
		       strstr(err.msg, "line 2: salt or hash") != NULL && a.n == 0,
	       "parse: a short salt is refused with its line (%s)", err.msg);
	TAP_OK(mc_authfile_parse(&a, "tenant x\n", 9, &err) == -1 &&
		       strcmp(err.msg, "line 1: want ROLE NAME SALT HASH") == 0,
	       "parse: a line with missing fields is refused");
}

static void
test_save_load(void)
{
	struct mc_authfile a = { 0 }, b;
	struct mc_err err;
	char path[] = "/tmp/test_authfile.XXXXXX";
	char tok[MC_AUTH_TOKEN_LEN + 1];
	int fd = mkstemp(path);
	FILE *f;
	char text[4096];
	size_t n;

	close(fd);
	unlink(path);
	TAP_OK(mc_authfile_load(&b, path, 1, &err) == 0 && b.n == 0,
	       "load: a missing file is empty when allowed");
	TAP_OK(mc_authfile_load(&b, path, 0, &err) == -1 && err.code == MC_ERR_SYSTEM,
	       "load: a missing file is an error otherwise");
	mc_authfile_add(&a, MC_ROLE_TENANT, "alice", tok, &err);
	TAP_OK(mc_authfile_save(&a, path, &err) == 0, "save: written");
	f = fopen(path, "r");
	n = f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0;
	text[n] = '\0';
	if (f != NULL)
		fclose(f);
	TAP_OK(strstr(text, tok) == NULL && strstr(text, "tenant alice ") != NULL,
	       "save: the file holds the entry but never the token");
	TAP_OK(mc_authfile_load(&b, path, 0, &err) == 0 && b.n == 1 &&
		       mc_authfile_match(&b, tok, strlen(tok)) != NULL,
	       "load: the saved hash still matches the token");
	mc_authfile_free(&b);
	mc_authfile_free(&a);
	unlink(path);
}

int
main(void)
{
	test_add_match();
	test_parse();
	test_save_load();
	return tap_done();
}
