/*
 * livepush_capture_helper.h: liblivepush-capture, the helper side of Capture Link 1.0 as a
 * small C library (C11, libc only). Link with `pkg-config --cflags --libs livepush-capture`.
 *
 * The library connects with the specification's retries (SPEC.md §3.4), sends HELLO, checks
 * WELCOME and the ring (§5.9, §6.4), keeps slot ownership (§7), sends heartbeats and notices a
 * silent pusher (§11), applies CONFIG (§5.12), sends START, FRAME, AUDIO, PAUSE, RESUME and
 * FINISH, answers STOP (§12.7) and reports every failure as a status code plus a message.
 * It installs no signal handler, starts no thread and never blocks longer than the caller
 * asks (a send to a full socket waits at most peer_timeout_ms, SPEC §4.1).
 *
 * A helper in a dozen calls (tools/examples/minimal-helper.c is the whole program):
 *
 *     lpc_helper *h;
 *     lpc_helper_options o = LPC_HELPER_OPTIONS_INIT;   // name, formats, max size...
 *     if (lpc_helper_connect(&h, NULL, &o) < 0) { puts(lpc_helper_error(h)); ... }
 *     for (;;) {
 *         int rc = lpc_helper_wait_frame(h);            // paces at CONFIG's fps, dispatches
 *         if (rc < 0) break;                            // STOP, pusher gone, ...
 *         lpc_slot s;
 *         if (lpc_helper_acquire(h, &s) == LPC_E_NO_SLOT) continue;  // drop (counted)
 *         draw(s.data + s.frame.plane_offset[0], s.frame.stride[0], s.frame.width, s.frame.height);
 *         lpc_helper_submit(h, &s);
 *     }
 *     int status = lpc_helper_exit_status(h);           // 0 after STOP, 1 otherwise
 *     lpc_helper_close(h);
 *
 * With a poll loop of your own: watch lpc_helper_fd(h) for POLLIN with a timeout of at most
 * lpc_helper_timeout_ms(h), and call lpc_helper_dispatch(h) whenever poll returns.
 *
 * One lpc_helper is used by one thread at a time. The library's status codes are negative
 * (LivePush's range -1360..-1379); 0 is success; lpc_helper_dispatch returns event bits >= 0.
 */
#ifndef LIVEPUSH_CAPTURE_HELPER_H
#define LIVEPUSH_CAPTURE_HELPER_H

#include "livepush_capture.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version (also in the soname: liblivepush-capture.so.1). */
#define LPC_LIBRARY_VERSION_MAJOR 1
#define LPC_LIBRARY_VERSION_MINOR 0

/* Status codes. Every function returns 0 or one of these; lpc_helper_error() says more. */
enum lpc_status {
    LPC_OK = 0,
    LPC_STOPPED = -1360,        /* the pusher sent STOP; the library answered FINISH {USER} and closed: exit 0 */
    LPC_E_NO_SLOT = -1361,      /* no free slot: the frame is dropped and counted; try the next one */
    LPC_E_CONNECT = -1362,      /* no pusher within the retry limit, or connect() failed (path, errno) */
    LPC_E_REJECTED = -1363,     /* the pusher sent REJECT (lpc_helper_peer_code() has its code) */
    LPC_E_PUSHER_ERROR = -1364, /* the pusher sent ERROR: this helper broke a rule (code, text) */
    LPC_E_CLOSED = -1365,       /* the pusher closed the connection without STOP (it may come back) */
    LPC_E_TIMEOUT = -1366,      /* the pusher was silent for peer_timeout_ms; FINISH {ERROR} sent */
    LPC_E_PROTOCOL = -1367,     /* the pusher broke the protocol; FINISH {ERROR} sent, naming the field */
    LPC_E_INVALID = -1368,      /* a bad argument (e.g. a frame outside the slot); nothing sent, go on */
    LPC_E_STATE = -1369,        /* not allowed now (FRAME while paused, RESUME while capturing...) */
    LPC_E_SYSTEM = -1370,       /* a system call failed (named in the message with errno) */
    LPC_FINISHED = -1371,       /* the session already ended (lpc_helper_finish, or an earlier end) */
};

/* Event bits returned by lpc_helper_dispatch() and lpc_helper_wait_frame() (>= 0). */
#define LPC_EVENT_CONFIG 0x1 /* a CONFIG arrived: lpc_helper_config() has the new wishes */

/* Exported from the shared library (built with -fvisibility=hidden). */
#if defined(__GNUC__)
#define LPC_API __attribute__((visibility("default")))
#else
#define LPC_API
#endif

typedef struct lpc_helper lpc_helper;

typedef struct lpc_helper_options {
    const char *helper_name;    /* HELLO.helper_name (<= 31 bytes of UTF-8) */
    const char *helper_version; /* HELLO.helper_version (<= 15 bytes) */
    uint32_t pixel_formats;     /* LPC_FORMAT_BIT() set the helper can send */
    uint32_t format;            /* the format lpc_helper_acquire() lays out (must be in pixel_formats) */
    uint32_t max_width;         /* the largest frame the helper will send */
    uint32_t max_height;
    uint32_t capabilities;      /* LPC_CAP_* wanted */
    uint32_t audio_formats;     /* LPC_AUDIO_BIT() set, with LPC_CAP_AUDIO */
    uint32_t connect_retry_ms;  /* 0: LPC_CONNECT_RETRY_MS_DEFAULT (SPEC §3.4) */
    const char *socket_path;    /* NULL: from the group and XDG_RUNTIME_DIR (SPEC §3.2) */
    const char *start_info;     /* START's JSON object; NULL: "{}" */
    uint32_t fps;               /* 0: pace at the pusher's rate (WELCOME, then CONFIG); else this rate */
} lpc_helper_options;

#define LPC_HELPER_OPTIONS_INIT \
    { "lpc-helper", "1.0", LPC_FORMAT_BIT(LPC_FORMAT_BGRX), LPC_FORMAT_BGRX, 1920, 1080, 0, 0, 0, NULL, NULL, 0 }

/* A slot the helper owns, with a frame laid out for it (format, size, strides, offsets). */
typedef struct lpc_slot {
    uint32_t index;   /* the slot's index in the ring */
    uint8_t *data;    /* its first byte; plane p starts at data + frame.plane_offset[p] */
    uint64_t bytes;   /* its size */
    lpc_frame frame;  /* filled by acquire (pts_ns = now, sequence = the one submit will send); see
                         lpc_frame_layout() to change the format or size */
} lpc_slot;

/* Connects to the pusher of `group` (NULL: $LIVEPUSH_CAPTURE_GROUP, else "default"), retrying
 * as SPEC §3.4 says, sends HELLO, checks WELCOME and the ring, maps it and sends START. *out
 * is set even on failure (read lpc_helper_error(*out), then lpc_helper_close(*out)); it is
 * NULL only when memory ran out. */
LPC_API int lpc_helper_connect(lpc_helper **out, const char *group, const lpc_helper_options *options);

/* The socket, for the caller's poll loop (POLLIN), and the longest time the caller may wait
 * before calling lpc_helper_dispatch() (the next heartbeat or the pusher's timeout), in ms. */
LPC_API int lpc_helper_fd(const lpc_helper *h);
LPC_API int lpc_helper_timeout_ms(const lpc_helper *h);

/* Reads what the pusher sent without blocking and acts on it (RELEASE, CONFIG, HEARTBEAT,
 * STOP, ERROR), sends a heartbeat when one is due and checks the pusher's timeout. Returns
 * event bits (>= 0) or a status (< 0: the session is over). */
LPC_API int lpc_helper_dispatch(lpc_helper *h);

/* Waits, dispatching, until the next frame is due at the current fps (CONFIG's, else
 * WELCOME's); returns event bits (>= 0) when it is, or a status (< 0) when the session ended. */
LPC_API int lpc_helper_wait_frame(lpc_helper *h);

/* Hands out a slot the helper owns with a frame of options.format at the size wanted now:
 * options' max_width x max_height (your source's size) fitted into CONFIG's maximum (WELCOME's
 * until a CONFIG). With LPC_CAP_SCALE granted the whole source is fitted, its aspect ratio kept
 * (SPEC §12.5: each side rounded to the nearest pixel, at least 1): scale your picture to it.
 * Without it each side is capped on its own, which a helper that crops uses. LPC_E_NO_SLOT: all
 * are with the pusher; the frame is counted as dropped (SPEC §7.5). */
LPC_API int lpc_helper_acquire(lpc_helper *h, lpc_slot *slot);

/* Sends FRAME for an acquired slot after checking its frame against the session (format,
 * size, planes inside the slot, and a pts_ns not before the previous frame's: LPC_E_INVALID
 * naming the field, nothing sent, the slot still yours). A pts_ns of 0 means now. Fills slot,
 * sequence and FORMAT_CHANGED. The slot is the pusher's once the FRAME was sent; if sending
 * failed (status < 0 other than LPC_E_INVALID) the session is over. */
LPC_API int lpc_helper_submit(lpc_helper *h, const lpc_slot *slot);

/* Sends FRAME {LPC_FRAME_UNCHANGED} (needs LPC_CAP_DAMAGE granted). */
LPC_API int lpc_helper_submit_unchanged(lpc_helper *h, uint64_t pts_ns);

/* Lays out a frame of `format`, width x height in a slot of slot_bytes: strides and plane
 * offsets aligned to 64 bytes when that fits, else packed. LPC_E_INVALID if it cannot fit (an
 * unknown format, a side of 0, too many bytes): the frame is then left exactly as it was, and
 * lpc_frame_layout_problem() says why. */
LPC_API int lpc_frame_layout(lpc_frame *frame, uint32_t format, uint32_t width, uint32_t height, uint64_t slot_bytes);

/* Why lpc_frame_layout() refuses these values, in words written into buffer (which it returns),
 * or NULL when it accepts them. */
LPC_API const char *lpc_frame_layout_problem(char *buffer, size_t size, uint32_t format, uint32_t width,
                                             uint32_t height, uint64_t slot_bytes);

/* lpc_frame_layout() for an acquired slot, checked against the session too (WELCOME's formats and
 * maximum size): LPC_E_INVALID with lpc_helper_error() saying why, the slot's frame unchanged. */
LPC_API int lpc_helper_layout(lpc_helper *h, lpc_slot *slot, uint32_t format, uint32_t width, uint32_t height);

/* AUDIO: frame_count frames of interleaved PCM (LPC_CAP_AUDIO granted, format accepted). A
 * pts_ns before the previous AUDIO's is refused (LPC_E_INVALID naming AUDIO.pts_ns, nothing
 * sent: SPEC §5.4); 0 means now. */
LPC_API int lpc_helper_send_audio(lpc_helper *h, uint32_t format, uint32_t rate_hz, uint16_t channels,
                          uint32_t frame_count, uint64_t pts_ns, const void *pcm);

LPC_API int lpc_helper_pause(lpc_helper *h, uint32_t reason); /* enum lpc_pause_reason */
LPC_API int lpc_helper_resume(lpc_helper *h);

/* Ends the session: FINISH {code, text}, shutdown, drain until the pusher closes (<= 1 s). */
LPC_API int lpc_helper_finish(lpc_helper *h, uint32_t code, const char *text);

/* Finishes (LPC_FINISH_USER) if the session is still open, unmaps, closes, frees. NULL is fine. */
LPC_API void lpc_helper_close(lpc_helper *h);

/* What the session agreed and what the pusher wants now. */
LPC_API const lpc_welcome *lpc_helper_welcome(const lpc_helper *h); /* NULL before WELCOME */
LPC_API const lpc_config *lpc_helper_config(const lpc_helper *h);   /* WELCOME's values until a CONFIG */
LPC_API uint64_t lpc_helper_frames_dropped(const lpc_helper *h);

/* The last failure in words (never NULL), the code of a REJECT/ERROR received (0 if none),
 * and the exit status the SPEC asks for (§12.9): 0 after STOP or a planned FINISH (USER, DONE,
 * SOURCE_CLOSED), else 1. */
LPC_API const char *lpc_helper_error(const lpc_helper *h);
LPC_API uint32_t lpc_helper_peer_code(const lpc_helper *h);
LPC_API int lpc_helper_exit_status(const lpc_helper *h);

/* Names: "LPC_E_TIMEOUT" for a status, "SLOT_NOT_OWNED" for an lpc_error_code. */
LPC_API const char *lpc_status_name(int status);
LPC_API const char *lpc_error_name(uint32_t code);

/* CLOCK_MONOTONIC now, in ns (the clock of every pts, SPEC §9). */
LPC_API uint64_t lpc_now_ns(void);

/* The group a starter gave on the command line, as SPEC §3.6 shows it: the argument after
 * "--group", or the text after "--group=" (the last one wins); NULL when there is none, which
 * lpc_helper_connect() reads as $LIVEPUSH_CAPTURE_GROUP, else "default". argv[0] is skipped; the
 * arguments are not changed. So `my-helper --group {group}` works with check-helper and livepush:
 *     lpc_helper_connect(&h, lpc_group_from_args(argc, argv), &options); */
LPC_API const char *lpc_group_from_args(int argc, char *const argv[]);

#ifdef __cplusplus
}
#endif
#endif /* LIVEPUSH_CAPTURE_HELPER_H */
