/*
 * The snapshot directory the offline commands work in.
 */
#include <stdlib.h>

#include "snap.h"

const char *
snap_dir(int argc, char **argv)
{
	const char *d = argc > 0 ? argv[0] : getenv("MC_SNAPSHOT_DIR");

	return d != NULL && *d != '\0' ? d : ".";
}
