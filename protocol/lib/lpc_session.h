/*
 * lpc_session.h: the state of one liblivepush-capture session, shared by lpc_connect.c
 * (connecting, HELLO, WELCOME, the ring) and lpc_helper.c (dispatch, frames, lifecycle).
 * Private to the library.
 */
#ifndef LPC_SESSION_H
#define LPC_SESSION_H

#include "lpc_wire.h"

#include <sys/un.h>

#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S UINT64_C(1000000000)
#define LPC_INTERNAL __attribute__((visibility("hidden")))

enum session_state { AWAITING_WELCOME = 1, CAPTURING, PAUSED, CLOSED };
enum slot_state { SLOT_FREE = 0, SLOT_ACQUIRED, SLOT_BORROWED };

struct lpc_helper {
    lpc_helper_options options;
    char group[LPC_GROUP_NAME_MAX + 1];
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int fd;
    enum session_state state;
    int end_status;       /* why the session ended (LPC_STOPPED, LPC_E_*), 0 while open */
    bool planned_end;     /* FINISH after STOP or by the caller's lpc_helper_finish */
    uint32_t peer_code;

    lpc_hello hello;
    lpc_welcome welcome;
    lpc_config config;
    uint8_t *ring;
    size_t ring_bytes;
    enum slot_state slots[LPC_MAX_SLOTS];
    bool borrowed[LPC_MAX_SLOTS];
    uint64_t slot_sequence[LPC_MAX_SLOTS];
    uint32_t next_slot;

    uint64_t sequence, frames_sent, frames_dropped;
    uint64_t last_frame_pts_ns, last_audio_pts_ns; /* what FRAME and AUDIO last carried (SPEC §5.3, §5.4) */
    uint32_t last_format, last_width, last_height;
    uint64_t last_send_ns, last_recv_ns, heartbeat_ns, peer_timeout_ns;
    uint64_t pace_t0_ns, pace_count; /* frame k is due at pace_t0_ns + k * 1e9 / fps */
    uint32_t pace_fps;

    char error[LPC_TEXT_MAX_BYTES + 256];
    uint8_t out[LPC_MESSAGE_MAX_BYTES];
    uint8_t in[LPC_MESSAGE_MAX_BYTES];
};

enum { LPC_RECEIVED = 1, LPC_NOTHING = 0 };

LPC_INTERNAL int lpc__set_error(lpc_helper *h, int status, const char *format, ...) __attribute__((format(printf, 3, 4)));
LPC_INTERNAL void lpc__linger_and_close(lpc_helper *h, bool linger);
LPC_INTERNAL int lpc__end_session(lpc_helper *h, int status);
LPC_INTERNAL int lpc__send_message(lpc_helper *h, uint16_t type, const void *payload, size_t bytes);
/* Sends without ending the session on failure (HELLO: a REJECT may be queued behind EPIPE). */
LPC_INTERNAL int lpc__send_only(lpc_helper *h, uint16_t type, const void *payload, size_t bytes);
LPC_INTERNAL int lpc__send_finish(lpc_helper *h, uint32_t code, const char *text, bool linger);
LPC_INTERNAL int lpc__pusher_fault(lpc_helper *h, int status, const lpc_fault *f);
LPC_INTERNAL int lpc__receive(lpc_helper *h, lpc_message *m, int *ring_fd);
LPC_INTERNAL int lpc__peer_message(lpc_helper *h, const lpc_message *m, int status, const char *what);

#endif /* LPC_SESSION_H */
