/* Holding the cleanup signals over a step that creates something and
 * registers it (base.h, "cleanup on a signal"). Needs POSIX's sigset_t, so
 * it stays out of base.h, which builds as plain C11. */
#ifndef INGOT_BASE_CLEANUP_H_
#define INGOT_BASE_CLEANUP_H_

#include <signal.h>

/* Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, saving the old
 * mask; release restores it, and a signal that came in between is handled
 * then, with what was created registered. */
void ingot_cleanup_hold(sigset_t* saved);
void ingot_cleanup_release(const sigset_t* saved);

#endif /* INGOT_BASE_CLEANUP_H_ */
