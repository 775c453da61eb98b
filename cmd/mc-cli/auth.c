/*
 * mc-cli auth: the master's auth file (mc-auth(5)), offline. add makes a
 * token, prints it once and keeps only its salted hash; rm and ls never
 * see a token at all. The master picks changes up on SIGHUP.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mc/authfile.h"
#include "mc/json.h"
#include "mc/log.h"

static struct {
	const char *file;
	bool admin, peer;
} auth_o;

const struct mc_opt cli_auth_opts[] = {
	{ "auth-file", 0, "FILE", "MC_AUTH_FILE", "the master's --auth-file", mc_set_str,
	  &auth_o.file },
	{ "admin", 0, NULL, NULL, "add: the token also holds the admin role", mc_set_flag,
	  &auth_o.admin },
	{ "peer", 0, NULL, NULL,
	  "add: a peer's own secret, under the peer's NAME (none: the secret all peers share)",
	  mc_set_flag, &auth_o.peer },
	{ 0 },
};

static int
usage(const char *why)
{
	mc_complain("auth: %s", why);
	fprintf(stderr, "usage: mc-cli auth add TENANT [--admin] | add --peer [NAME] | rm NAME | ls"
			" --auth-file FILE\n");
	return MC_EXIT_USAGE;
}

static int
auth_add(struct mc_authfile *a, int argc, char **argv)
{
	char token[MC_AUTH_TOKEN_LEN + 1];
	struct mc_err err;
	const char *name;
	int role;

	if (auth_o.peer) {
		if (argc > 2 || auth_o.admin)
			return usage("add --peer takes at most a peer's NAME, and no --admin");
		role = MC_ROLE_PEER;
		name = argc == 2 ? argv[1] : MC_AUTH_SHARED_PEER;
	} else {
		if (argc != 2)
			return usage("add needs one TENANT");
		role = auth_o.admin ? MC_ROLE_ADMIN : MC_ROLE_TENANT;
		name = argv[1];
	}
	if (mc_authfile_add(a, role, name, token, &err) != 0) {
		mc_complain("auth add %s: %s", name, err.msg);
		return err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_FAIL;
	}
	if (mc_authfile_save(a, auth_o.file, &err) != 0) {
		mc_complain("auth add: %s", err.msg);
		return MC_EXIT_FAIL;
	}
	/* the one time the token is shown: the file keeps only its hash */
	printf("%s\n", token);
	return MC_EXIT_OK;
}

int
cli_auth(int argc, char **argv)
{
	struct mc_authfile a;
	struct mc_err err;
	int rc = MC_EXIT_OK;

	if (argc == 0)
		return usage("missing add, rm or ls");
	if (auth_o.file == NULL || !*auth_o.file)
		return usage("missing --auth-file");
	if (mc_authfile_load(&a, auth_o.file, strcmp(argv[0], "add") == 0, &err) != 0) {
		mc_complain("auth: %s", err.msg);
		return err.code == MC_ERR_INVALID ? MC_EXIT_DATAERR : MC_EXIT_FAIL;
	}
	if (strcmp(argv[0], "add") == 0) {
		rc = auth_add(&a, argc, argv);
	} else if (strcmp(argv[0], "rm") == 0) {
		if (argc != 2) {
			rc = usage("rm needs one NAME");
		} else if (mc_authfile_rm(&a, argv[1]) == 0) {
			mc_complain("auth rm: no entry named '%s'", argv[1]);
			rc = MC_EXIT_FAIL;
		} else if (mc_authfile_save(&a, auth_o.file, &err) != 0) {
			mc_complain("auth rm: %s", err.msg);
			rc = MC_EXIT_FAIL;
		}
	} else if (strcmp(argv[0], "ls") == 0 && argc == 1) {
		for (size_t i = 0; i < a.n; i++) {
			const char *role = mc_auth_role_name(a.v[i].role);

			if (cli.json) {
				printf("{\"role\":\"%s\",\"name\":", role);
				mc_json_write_str(stdout, a.v[i].name, strlen(a.v[i].name));
				printf("}\n");
			} else
				printf("%s %s\n", role, a.v[i].name);
		}
	} else {
		rc = usage("want add, rm or ls");
	}
	mc_authfile_free(&a);
	return rc;
}
