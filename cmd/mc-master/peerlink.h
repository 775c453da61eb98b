/*
 * The master's side of a peer's control link: peer_register,
 * peer_heartbeat and peer_unregister, and the close hook that detaches
 * a peer from a connection that went away (the peer may come back on
 * another one and resume its registration).
 */
#ifndef MASTER_PEERLINK_H
#define MASTER_PEERLINK_H

#include "mc/conn.h"

struct master;

void master_on_close(struct mc_conn *c, void *ctx);
/*
 * A new grant key (SIGHUP), sent at once to every connected peer; one
 * that is not connected gets it when it registers again.
 */
void peerlink_rotate_grants(struct master *m);

/* The methods this module serves (in its module table). */
extern const struct mc_method peerlink_methods[];

/* The peers' calls as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module peerlink_module;

#endif
