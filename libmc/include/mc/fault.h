/*
 * Deterministic fault injection, compiled into every build and doing
 * nothing unless the environment asks: MC_FAULT names points and what
 * each does when reached,
 *
 *	MC_FAULT='write:nth=2;reply.put_end:always;snapshot.write:pause'
 *
 * one NAME:MODE per ';', MODE one of
 *	always		fire every time
 *	nth=N		fire the Nth time only (1-based)
 *	prob=P,seed=S	fire with probability P, from a generator seeded S
 *	pause		do not fire; wait at the point until the file NAME
 *			appears in $MC_FAULT_DIR (creating NAME.paused there
 *			first, so a test knows the point was reached)
 * A point fires by making its operation fail the way the real fault
 * would: the peer's write, read or drop fails or is lost, a reply is not
 * sent and its connection closed, a request is answered as by a daemon
 * without its method, a snapshot write fails, a task is not delivered.
 * Tests use always, nth and pause only; prob is for soaks.
 */
#ifndef MC_FAULT_H
#define MC_FAULT_H

#include <stdbool.h>

/*
 * Whether the point name fires now (its pause, if any, waited out
 * first). false at once when MC_FAULT is not set. Thread-safe.
 */
bool mc_fault(const char *name);
/* The same for the point "prefix.suffix" (reply.METHOD), built only when MC_FAULT is set. */
bool mc_fault2(const char *prefix, const char *suffix);
/*
 * Whether MC_FAULT sets point name to always, without reaching it (no
 * count, no pause): what such a point fails is out for good, so whoever
 * advertises that operation can leave it out (method.NAME: a daemon's
 * method, on its registry). Thread-safe.
 */
bool mc_fault_always(const char *name);
/* The same for the point "prefix.suffix". */
bool mc_fault2_always(const char *prefix, const char *suffix);
/* How many times name fired since start (for logs and tests). */
unsigned long mc_fault_fired(const char *name);
/* Forget the parsed MC_FAULT and read it again (unit tests). */
void mc_fault_reset(void);

#endif
