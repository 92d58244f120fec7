// libpipewire-0.3 (audio capture in the pusher, screen capture in helpers).
//
// Much of PipeWire's API is made of function-like macros that dispatch through method
// tables (pw_core_add_listener, pw_core_sync, ...); Swift cannot import macros, so each
// one used from Swift gets a static inline wrapper here, named CPipeWire_<macro>.
#ifndef LIVEPUSH_CPIPEWIRE_H
#define LIVEPUSH_CPIPEWIRE_H
#include <pipewire/pipewire.h>
#include <spa/utils/hook.h>

static inline int CPipeWire_pw_core_add_listener(struct pw_core *core, struct spa_hook *listener,
                                                 const struct pw_core_events *events, void *data) {
    return pw_core_add_listener(core, listener, events, data);
}

/// Asks the daemon to answer `done(PW_ID_CORE, seq)` once it has handled every earlier request.
static inline int CPipeWire_pw_core_sync(struct pw_core *core, int seq) {
    return pw_core_sync(core, PW_ID_CORE, seq);
}

/// An empty property set (pw_properties_new is variadic, which Swift cannot call).
static inline struct pw_properties *CPipeWire_pw_properties_new_empty(void) {
    return pw_properties_new(NULL, NULL);
}

static inline uint32_t CPipeWire_PW_ID_CORE(void) { return PW_ID_CORE; }
#endif
