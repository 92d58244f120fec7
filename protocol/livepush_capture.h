/*
 * livepush_capture.h: the Capture Link protocol, version 1.
 *
 * Constants and wire structures for writing a LivePush capture helper in C (or for
 * reading the byte layouts from any language). The specification is SPEC.md beside
 * this file; where the two disagree, SPEC.md is right and this header has a bug.
 *
 * Every multi-byte field is little-endian. Every struct is naturally aligned with no
 * implicit padding; the _Static_asserts below pin each size and offset. This header
 * needs only a C11 compiler and <stdint.h>; it declares no functions (the helper side as a
 * library, liblivepush-capture, is declared in livepush_capture_helper.h).
 *
 * License: this header is part of the protocol and may be copied into any helper.
 */
#ifndef LIVEPUSH_CAPTURE_H
#define LIVEPUSH_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- versions */

#define LPC_VERSION_MAJOR 1u
#define LPC_VERSION_MINOR 0u

/* ---------------------------------------------------------------- rendezvous */

/* Socket: $XDG_RUNTIME_DIR/livepush/<group>.sock (directory mode 0700, socket 0600);
 * without XDG_RUNTIME_DIR: /tmp/livepush-<uid>/<group>.sock. SOCK_SEQPACKET. */
#define LPC_GROUP_NAME_MAX 64u            /* group: [A-Za-z0-9._-]{1,64} */
#define LPC_CONNECT_RETRY_MS_DEFAULT 10000u /* a helper retries connecting this long */

/* ---------------------------------------------------------------- framing */

#define LPC_MESSAGE_MAGIC 0x4C43504Cu /* bytes 'L' 'P' 'C' 'L' */
#define LPC_MESSAGE_MAX_BYTES 65536u  /* header + payload */
#define LPC_TEXT_MAX_BYTES 1024u      /* the counted text of FINISH, STOP, REJECT and ERROR */
#define LPC_START_INFO_MAX_BYTES 4096u /* START's JSON (not LPC_TEXT_MAX_BYTES) */

/* Header flags. */
#define LPC_FLAG_OPTIONAL 0x0001u /* a receiver that does not know this type ignores it */

typedef struct lpc_header {
    uint32_t magic;         /* LPC_MESSAGE_MAGIC */
    uint16_t type;          /* enum lpc_message_type */
    uint16_t flags;         /* LPC_FLAG_* ; unknown bits must be 0 and are ignored */
    uint32_t payload_bytes; /* bytes after this header, exactly what the datagram holds */
    uint32_t reserved;      /* 0 */
} lpc_header;

enum lpc_message_type {
    /* helper -> pusher */
    LPC_HELLO = 0x0001,
    LPC_START = 0x0002,
    LPC_FRAME = 0x0003,
    LPC_AUDIO = 0x0004,
    LPC_PAUSE = 0x0005,
    LPC_RESUME = 0x0006,
    LPC_FINISH = 0x0007,
    /* both directions */
    LPC_HEARTBEAT = 0x0040,
    /* pusher -> helper */
    LPC_WELCOME = 0x0081,
    LPC_REJECT = 0x0082,
    LPC_RELEASE = 0x0083,
    LPC_CONFIG = 0x0084,
    LPC_STOP = 0x0085,
    LPC_ERROR = 0x0086,
};

/* ---------------------------------------------------------------- capabilities */

#define LPC_CAP_AUDIO 0x0001u  /* the helper may send AUDIO */
#define LPC_CAP_DAMAGE 0x0002u /* the helper sets LPC_FRAME_UNCHANGED when nothing changed */
#define LPC_CAP_CURSOR 0x0004u /* the helper can composite the cursor into frames */
/* SPEC clarification 28: the helper scales its frames to fit CONFIG's maximum, keeping the aspect
 * ratio, and never crops; a pusher that is granted it may lower CONFIG's size to make the helper
 * grab less (adaptive resolution). */
#define LPC_CAP_SCALE 0x0008u

/* ---------------------------------------------------------------- pixel formats */

enum lpc_pixel_format {
    LPC_FORMAT_BGRX = 1, /* 4 bytes/pixel, memory order B G R X (X11 depth 24) */
    LPC_FORMAT_BGRA = 2, /* B G R A, straight alpha */
    LPC_FORMAT_RGBX = 3, /* R G B X */
    LPC_FORMAT_RGBA = 4, /* R G B A */
    LPC_FORMAT_NV12 = 5, /* plane 0 Y (1 byte/px), plane 1 interleaved U V at half width and height */
    LPC_FORMAT_I420 = 6, /* plane 0 Y, plane 1 U, plane 2 V; U and V at half width and height */
};
#define LPC_FORMAT_BIT(format) (1u << (format)) /* HELLO.pixel_formats is a set of these */

enum lpc_audio_format {
    LPC_AUDIO_S16LE = 1, /* signed 16-bit, interleaved */
    LPC_AUDIO_F32LE = 2, /* 32-bit float in [-1, 1], interleaved */
};
#define LPC_AUDIO_BIT(format) (1u << (format))
#define LPC_AUDIO_MAX_CHANNELS 8u
#define LPC_AUDIO_MIN_RATE_HZ 8000u
#define LPC_AUDIO_MAX_RATE_HZ 192000u

/* ---------------------------------------------------------------- helper -> pusher */

#define LPC_NAME_BYTES 32u
#define LPC_VERSION_BYTES 16u

typedef struct lpc_hello {
    uint16_t version_major;     /* LPC_VERSION_MAJOR */
    uint16_t version_minor;     /* LPC_VERSION_MINOR */
    uint32_t pid;               /* the helper's process id (informative; the pusher trusts SO_PEERCRED) */
    uint32_t capabilities;      /* LPC_CAP_* */
    uint32_t pixel_formats;     /* set of LPC_FORMAT_BIT() the helper can send */
    uint32_t audio_formats;     /* set of LPC_AUDIO_BIT(), 0 without LPC_CAP_AUDIO */
    uint32_t max_width;         /* the largest frame the helper expects to send */
    uint32_t max_height;
    uint32_t reserved;          /* 0 */
    char helper_name[LPC_NAME_BYTES];       /* UTF-8, NUL-padded */
    char helper_version[LPC_VERSION_BYTES]; /* UTF-8, NUL-padded */
} lpc_hello;

/* START payload: uint32 info_bytes, then info_bytes of UTF-8 JSON describing the source,
 * e.g. {"source":"x11","display":":0","region":[0,0,1920,1080]}. */
typedef struct lpc_start {
    uint32_t info_bytes;
} lpc_start;

/* FRAME flags */
#define LPC_FRAME_UNCHANGED 0x0001u       /* nothing changed since the previous frame (damage): the
                                             FRAME names no slot (LPC_NO_SLOT) and its format, size,
                                             planes are 0; the pusher repeats its last frame */
#define LPC_FRAME_CURSOR 0x0002u          /* the cursor is composited into the pixels */
#define LPC_FRAME_FORMAT_CHANGED 0x0004u  /* first frame with a new width, height or format */

#define LPC_NO_SLOT 0xFFFFFFFFu /* lpc_frame.slot of an LPC_FRAME_UNCHANGED frame */

typedef struct lpc_frame {
    uint32_t slot;             /* index of a slot the helper owns; ownership passes to the pusher */
    uint32_t format;           /* enum lpc_pixel_format, one the pusher accepted */
    uint64_t sequence;         /* strictly increasing per session, first >= 1 (1 recommended) */
    uint64_t pts_ns;           /* CLOCK_MONOTONIC capture time, nanoseconds */
    uint32_t width;            /* pixels, 1 .. WELCOME.max_width */
    uint32_t height;           /* pixels, 1 .. WELCOME.max_height */
    uint32_t flags;            /* LPC_FRAME_* */
    uint32_t plane_count;      /* 1 for packed formats, 2 for NV12, 3 for I420 */
    uint32_t stride[3];        /* bytes per row of each plane; unused planes 0 */
    uint32_t plane_offset[3];  /* byte offset of each plane from the start of the slot */
} lpc_frame;

/* AUDIO payload: this struct, then frame_count * channels * sample bytes of PCM. */
typedef struct lpc_audio {
    uint32_t format;       /* enum lpc_audio_format */
    uint32_t rate_hz;
    uint16_t channels;     /* 1 .. LPC_AUDIO_MAX_CHANNELS */
    uint16_t reserved;     /* 0 */
    uint32_t frame_count;  /* samples per channel */
    uint64_t pts_ns;       /* CLOCK_MONOTONIC time of the first sample */
} lpc_audio;

enum lpc_pause_reason {
    LPC_PAUSE_SCREEN_LOCKED = 1,
    LPC_PAUSE_SOURCE_HIDDEN = 2, /* window minimised or off-screen */
    LPC_PAUSE_REQUESTED = 3,     /* the helper's user asked */
};

typedef struct lpc_pause {
    uint32_t reason; /* enum lpc_pause_reason */
} lpc_pause;

/* RESUME has no payload. */

enum lpc_finish_reason {
    LPC_FINISH_USER = 1,          /* the helper was asked to stop (signal, its UI, or the pusher's STOP) */
    LPC_FINISH_SOURCE_CLOSED = 2, /* the captured window or output went away */
    LPC_FINISH_SOURCE_LOST = 3,   /* the display server or PipeWire went away */
    LPC_FINISH_ERROR = 4,         /* the helper failed; the text says how */
    LPC_FINISH_RESTARTING = 5,    /* the helper will reconnect at once (e.g. frames larger than the ring) */
    LPC_FINISH_DONE = 6,          /* a planned end: the helper did what it was asked to (e.g. N frames) */
};

/* FINISH, STOP, REJECT and ERROR share this layout: a code, then code-specific text. */
typedef struct lpc_reason {
    uint32_t code;       /* enum lpc_finish_reason / lpc_stop_reason / lpc_error_code */
    uint32_t text_bytes; /* UTF-8 bytes that follow, <= LPC_TEXT_MAX_BYTES, no NUL */
} lpc_reason;

/* ---------------------------------------------------------------- both directions */

typedef struct lpc_heartbeat {
    uint64_t time_ns;         /* sender's CLOCK_MONOTONIC */
    uint64_t frames_sent;     /* helper: FRAMEs sent; pusher: frames consumed */
    uint64_t frames_dropped;  /* helper: frames dropped for want of a free slot; pusher: 0 */
} lpc_heartbeat;

#define LPC_HEARTBEAT_INTERVAL_MS 1000u /* send one when nothing else was sent for this long */
#define LPC_PEER_TIMEOUT_MS 3000u       /* silence this long means the peer is hung */
#define LPC_STOP_GRACE_MS 1000u         /* after STOP, the pusher closes if no FINISH came by then */
#define LPC_LINGER_MS 1000u             /* a closing side drains its socket at most this long */

/* ---------------------------------------------------------------- pusher -> helper */

#define LPC_MAX_SLOTS 4u
#define LPC_MIN_SLOTS 3u

/* WELCOME carries exactly one descriptor (SCM_RIGHTS): the ring memfd, sealed with
 * F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL. Map it MAP_SHARED, PROT_READ | PROT_WRITE. */
typedef struct lpc_welcome {
    uint16_t version_major;   /* the version chosen for this session */
    uint16_t version_minor;
    uint32_t capabilities;    /* the subset of HELLO's capabilities the pusher accepts */
    uint64_t session_id;      /* also in the ring header */
    uint64_t ring_bytes;      /* size of the memfd */
    uint32_t slot_count;      /* LPC_MIN_SLOTS .. LPC_MAX_SLOTS; all start owned by the helper */
    uint32_t pixel_formats;   /* the subset of HELLO's formats the pusher accepts */
    uint64_t slot_bytes;      /* bytes of each slot: round_up(round_up(max_width*4, 64)*max_height, 4096),
                                 so the 64-byte-aligned layout of SPEC §8.2 always fits */
    uint64_t first_slot_offset; /* slot i starts at first_slot_offset + i * slot_bytes */
    uint32_t max_width;       /* frames may be at most this large */
    uint32_t max_height;
    uint32_t fps;             /* the rate the pusher wants (as CONFIG.fps) */
    uint32_t heartbeat_interval_ms;
    uint32_t peer_timeout_ms;
    uint32_t reserved;        /* 0 */
} lpc_welcome;

typedef struct lpc_release {
    uint32_t slot;      /* the slot returns to the helper */
    uint32_t reserved;  /* 0 */
    uint64_t sequence;  /* the sequence of the FRAME that was in it */
} lpc_release;

typedef struct lpc_config {
    uint32_t fps;        /* frames per second wanted, 1 .. 240 */
    uint32_t max_width;  /* capture no larger than this (scale down or crop); <= WELCOME.max_width */
    uint32_t max_height;
    uint32_t flags;      /* LPC_CONFIG_*; a helper ignores bits it does not know (SPEC §5.12) */
} lpc_config;

#define LPC_CONFIG_CURSOR 0x0001u /* composite the cursor */

enum lpc_stop_reason {
    LPC_STOP_USER = 1,           /* the pusher's user stopped screen capture */
    LPC_STOP_PUSHER_EXITING = 2, /* the pusher is shutting down */
};

enum lpc_error_code {
    LPC_ERR_BAD_MAGIC = 1,        /* header magic wrong */
    LPC_ERR_BAD_LENGTH = 2,       /* payload_bytes disagrees with the datagram or the type's layout */
    LPC_ERR_UNKNOWN_TYPE = 3,     /* a required message type the receiver does not know */
    LPC_ERR_VERSION = 4,          /* protocol major version not supported */
    LPC_ERR_STATE = 5,            /* message not allowed in this state or direction (e.g. FRAME before START,
                                     a second HELLO, FRAME while paused, FRAME received by a helper) */
    LPC_ERR_BAD_SLOT = 6,         /* slot index out of range */
    LPC_ERR_SLOT_NOT_OWNED = 7,   /* FRAME on a slot the pusher holds */
    LPC_ERR_SEQUENCE = 8,         /* FRAME.sequence 0 or not increasing, or FRAME.pts_ns 0 or decreasing */
    LPC_ERR_GEOMETRY = 9,         /* size, stride, plane offsets or their product out of bounds */
    LPC_ERR_FORMAT = 10,          /* pixel or audio format not negotiated */
    LPC_ERR_DESCRIPTORS = 11,     /* descriptors where none belong, or the wrong number */
    LPC_ERR_TRUNCATED = 12,       /* MSG_TRUNC or MSG_CTRUNC */
    LPC_ERR_PEER_UID = 13,        /* the peer runs as another user */
    LPC_ERR_BUSY = 14,            /* REJECT: another helper is connected to this group */
    LPC_ERR_TIMEOUT = 15,         /* nothing received for peer_timeout_ms, or a socket full that long */
    LPC_ERR_AUDIO = 16,           /* AUDIO fields or PCM length invalid */
    LPC_ERR_TEXT = 17,            /* text or JSON too long, not UTF-8, a NUL in counted text, START info not
                                     a JSON object */
    LPC_ERR_RESERVED = 18,        /* a reserved field is not 0, or an undefined bit in FRAME.flags */
};

/* ---------------------------------------------------------------- the ring */

#define LPC_RING_MAGIC 0x474E524Cu /* bytes 'L' 'R' 'N' 'G' */
#define LPC_RING_HEADER_BYTES 4096u

/* At offset 0 of the memfd. Written by the pusher before WELCOME; the helper only reads
 * it, except for its own counters line. The pusher never trusts what it reads back: its
 * own copy of the geometry is authoritative. */
typedef struct lpc_ring_header {
    /* line 0: geometry, written once by the pusher */
    uint32_t magic;           /* LPC_RING_MAGIC */
    uint16_t version_major;
    uint16_t version_minor;
    uint64_t session_id;
    uint32_t slot_count;
    uint32_t header_bytes;    /* LPC_RING_HEADER_BYTES */
    uint64_t slot_bytes;
    uint64_t first_slot_offset;
    uint64_t ring_bytes;
    uint8_t line0_reserved[16];
    /* line 1: the helper's counters (informative; the pusher reads them for statistics only) */
    uint64_t helper_frames_published;
    uint64_t helper_frames_dropped;
    uint8_t line1_reserved[48];
    /* line 2: the pusher's counters */
    uint64_t pusher_frames_consumed;
    uint64_t pusher_last_sequence;
    uint8_t line2_reserved[48];
} lpc_ring_header;

/* ---------------------------------------------------------------- layout checks */

#ifdef __cplusplus
#define LPC_STATIC_ASSERT(condition, message) static_assert(condition, message)
#else
#define LPC_STATIC_ASSERT(condition, message) _Static_assert(condition, message)
#endif

LPC_STATIC_ASSERT(sizeof(lpc_header) == 16, "lpc_header");
LPC_STATIC_ASSERT(offsetof(lpc_header, payload_bytes) == 8, "lpc_header.payload_bytes");
LPC_STATIC_ASSERT(sizeof(lpc_hello) == 80, "lpc_hello");
LPC_STATIC_ASSERT(offsetof(lpc_hello, helper_name) == 32, "lpc_hello.helper_name");
LPC_STATIC_ASSERT(offsetof(lpc_hello, helper_version) == 64, "lpc_hello.helper_version");
LPC_STATIC_ASSERT(sizeof(lpc_start) == 4, "lpc_start");
LPC_STATIC_ASSERT(sizeof(lpc_frame) == 64, "lpc_frame");
LPC_STATIC_ASSERT(offsetof(lpc_frame, sequence) == 8, "lpc_frame.sequence");
LPC_STATIC_ASSERT(offsetof(lpc_frame, pts_ns) == 16, "lpc_frame.pts_ns");
LPC_STATIC_ASSERT(offsetof(lpc_frame, stride) == 40, "lpc_frame.stride");
LPC_STATIC_ASSERT(offsetof(lpc_frame, plane_offset) == 52, "lpc_frame.plane_offset");
LPC_STATIC_ASSERT(sizeof(lpc_audio) == 24, "lpc_audio");
LPC_STATIC_ASSERT(offsetof(lpc_audio, pts_ns) == 16, "lpc_audio.pts_ns");
LPC_STATIC_ASSERT(sizeof(lpc_pause) == 4, "lpc_pause");
LPC_STATIC_ASSERT(sizeof(lpc_reason) == 8, "lpc_reason");
LPC_STATIC_ASSERT(sizeof(lpc_heartbeat) == 24, "lpc_heartbeat");
LPC_STATIC_ASSERT(sizeof(lpc_welcome) == 72, "lpc_welcome");
LPC_STATIC_ASSERT(offsetof(lpc_welcome, session_id) == 8, "lpc_welcome.session_id");
LPC_STATIC_ASSERT(offsetof(lpc_welcome, slot_bytes) == 32, "lpc_welcome.slot_bytes");
LPC_STATIC_ASSERT(offsetof(lpc_welcome, first_slot_offset) == 40, "lpc_welcome.first_slot_offset");
LPC_STATIC_ASSERT(offsetof(lpc_welcome, max_width) == 48, "lpc_welcome.max_width");
LPC_STATIC_ASSERT(sizeof(lpc_release) == 16, "lpc_release");
LPC_STATIC_ASSERT(sizeof(lpc_config) == 16, "lpc_config");
LPC_STATIC_ASSERT(sizeof(lpc_ring_header) == 192, "lpc_ring_header");
LPC_STATIC_ASSERT(offsetof(lpc_ring_header, helper_frames_published) == 64, "ring line 1");
LPC_STATIC_ASSERT(offsetof(lpc_ring_header, pusher_frames_consumed) == 128, "ring line 2");

#ifdef __cplusplus
}
#endif
#endif /* LIVEPUSH_CAPTURE_H */
