/*
 * pattern-helper.c: a complete reference capture helper for the Capture Link protocol.
 *
 * It speaks the helper's side of Capture Link v1 (protocol/SPEC.md, protocol/livepush_capture.h)
 * and, instead of grabbing a screen, draws a test pattern that a
 * pusher (or a test) can check pixel by pixel and that shows torn frames at once.
 *
 * Build (C11, the protocol header and libc only):
 *
 *     cc -std=c11 -Wall -Wextra -O2 -I protocol tools/examples/pattern-helper.c -o pattern-helper
 *
 * Usage:
 *
 *     pattern-helper --group NAME [--size WxH] [--fps N] [--frames N]
 *                    [--format bgrx|nv12|i420] [--audio] [--connect-timeout-ms N]
 *
 * The pattern, for the frame whose FRAME.sequence is n (a uint64) and the pixel (x, y):
 *
 *     BGRX         B = (x + y + n) & 0xFF, G = (n >> 8) & 0xFF, R = n & 0xFF, X = 0xFF
 *     NV12, I420   Y = (x + y + n) & 0xFF for every luma sample;
 *                  U = n & 0xFF and V = (n >> 8) & 0xFF for every chroma sample
 *
 * Layout in a slot: planes one after another from offset 0, each plane offset a multiple
 * of 64, each stride its row bytes rounded up to a multiple of 64 (BGRX width*4, Y width,
 * NV12 UV 2*ceil(width/2), I420 U and V ceil(width/2)). Should those padded strides not fit
 * the pusher's slot_bytes, the helper falls back to unpadded strides (row bytes exactly);
 * whoever checks the pixels must therefore use FRAME.stride and FRAME.plane_offset.
 * Padding bytes at the end of rows are left as they were.
 *
 * Behaviour worth knowing when testing a pusher against it:
 *   - a frame dropped for want of a free slot does not use up a sequence number (FRAME.sequence
 *     is 1, 2, 3... over the FRAMEs actually sent); drops are counted in ring line 1 and in
 *     HEARTBEAT.frames_dropped;
 *   - frames are cropped to min(--size, WELCOME.max, CONFIG.max) (the pattern is defined per
 *     pixel, so a crop is still the pattern); FORMAT_CHANGED marks each new size;
 *   - a pusher that breaks a rule (or is silent for peer_timeout_ms) gets
 *     FINISH {LPC_FINISH_ERROR, "<ERROR_NAME>: <what>"} and the helper exits 1;
 *   - after its last message (FINISH) the helper shuts down its sending side and reads until
 *     the pusher closes, for at most 1 s, so that the pusher always reads that last message.
 *
 * Exit status: 0 finished normally (--frames reached, STOP, SIGINT or SIGTERM),
 * 1 runtime error (no pusher, rejected, protocol violation, pusher gone), 2 bad command line.
 *
 * This file is an example for helper authors: it favours plain, checked code over speed,
 * yet draws 1920x1080 at 60 fps with a few percent of one core.
 */
#define _GNU_SOURCE

#include "livepush_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "this example writes the header's structs as they are in memory, which is the wire format only on a little-endian host; convert every field with htole16/32/64 (and back with le*toh) to port it"
#endif

#define PROG "pattern-helper"
#define HELPER_NAME "pattern-helper-c"
#define HELPER_VERSION "1.0.0"

#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S UINT64_C(1000000000)

#define MAX_DIMENSION 16384u      /* --size limit per side */
#define CONTROL_FDS 4             /* room for this many descriptors per message (SPEC §4.3) */
#define PLANE_ALIGN 64u

#define AUDIO_RATE 48000u
#define AUDIO_CHANNELS 2u
#define AUDIO_BLOCK_FRAMES 960u   /* 20 ms at 48000 Hz */
#define AUDIO_BLOCK_NS (20 * NS_PER_MS)
#define SINE_HZ 440u
#define SINE_PERIOD_FRAMES 600u   /* 48000 / gcd(48000, 440): 11 whole cycles */

/* ------------------------------------------------------------------ state */

struct layout {
    uint32_t plane_count;
    uint32_t stride[3];
    uint32_t offset[3];
    uint32_t row_bytes[3];
    uint32_t rows[3];
};

struct helper {
    /* command line */
    const char *group;
    uint32_t opt_width, opt_height;
    uint32_t opt_fps;
    bool fps_explicit;
    uint64_t frame_limit; /* 0: run until a signal or STOP */
    uint32_t format;      /* enum lpc_pixel_format */
    bool audio_wanted;
    uint32_t connect_timeout_ms;

    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int fd;

    /* the session */
    lpc_welcome welcome;
    uint8_t *ring;
    size_t ring_len;
    bool slot_owned[LPC_MAX_SLOTS];    /* true: the helper owns the slot */
    uint64_t slot_sequence[LPC_MAX_SLOTS];
    uint32_t next_slot;
    uint32_t fps;
    bool fps_changed;
    uint32_t config_max_width, config_max_height; /* 0 until a CONFIG arrives */
    bool audio;
    uint64_t heartbeat_ns, peer_timeout_ns;

    uint64_t sequence; /* of the last FRAME sent */
    uint64_t frames_sent, frames_dropped;
    uint32_t last_width, last_height, last_format;
    uint64_t last_send_ns, last_recv_ns;
    bool peer_reset;

    /* drawing */
    uint32_t *bgrx_row; /* width + 256 pixels, B = index & 0xFF */
    uint8_t *luma_row;  /* width + 256 bytes, value = index & 0xFF */
    uint8_t *chroma_row;
    uint32_t row_capacity;

    /* audio */
    int16_t sine[SINE_PERIOD_FRAMES * AUDIO_CHANNELS];
    uint64_t audio_frames;

    /* message buffers */
    uint8_t out[LPC_MESSAGE_MAX_BYTES];
    uint8_t in[LPC_MESSAGE_MAX_BYTES];
};

static volatile sig_atomic_t g_signal;
static bool g_failing;

static void on_signal(int sig) { g_signal = sig; }

/* ------------------------------------------------------------------ utilities */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *error_name(uint32_t code)
{
    static const char *const names[] = {
        [LPC_ERR_BAD_MAGIC] = "BAD_MAGIC",       [LPC_ERR_BAD_LENGTH] = "BAD_LENGTH",
        [LPC_ERR_UNKNOWN_TYPE] = "UNKNOWN_TYPE", [LPC_ERR_VERSION] = "VERSION",
        [LPC_ERR_STATE] = "STATE",               [LPC_ERR_BAD_SLOT] = "BAD_SLOT",
        [LPC_ERR_SLOT_NOT_OWNED] = "SLOT_NOT_OWNED", [LPC_ERR_SEQUENCE] = "SEQUENCE",
        [LPC_ERR_GEOMETRY] = "GEOMETRY",         [LPC_ERR_FORMAT] = "FORMAT",
        [LPC_ERR_DESCRIPTORS] = "DESCRIPTORS",   [LPC_ERR_TRUNCATED] = "TRUNCATED",
        [LPC_ERR_PEER_UID] = "PEER_UID",         [LPC_ERR_BUSY] = "BUSY",
        [LPC_ERR_TIMEOUT] = "TIMEOUT",           [LPC_ERR_AUDIO] = "AUDIO",
        [LPC_ERR_TEXT] = "TEXT",                 [LPC_ERR_RESERVED] = "RESERVED",
    };
    if (code < sizeof names / sizeof names[0] && names[code] != NULL)
        return names[code];
    return "unknown code";
}

static const char *format_name(uint32_t format)
{
    switch (format) {
    case LPC_FORMAT_BGRX: return "bgrx";
    case LPC_FORMAT_NV12: return "nv12";
    case LPC_FORMAT_I420: return "i420";
    default: return "?";
    }
}

static bool utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c == 0)
            return false; /* text fields carry no NUL */
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1Fu; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0Fu; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07u; min = 0x10000; }
        else return false;
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* Copy text for the terminal, replacing control characters. */
static void printable(char *dst, size_t cap, const uint8_t *src, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < cap; i++)
        dst[j++] = (src[i] < 0x20 || src[i] == 0x7F) ? '?' : (char)src[i];
    dst[j] = '\0';
}

static uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

/* ------------------------------------------------------------------ teardown */

static void cleanup(struct helper *h)
{
    if (h->ring != NULL) {
        munmap(h->ring, h->ring_len);
        h->ring = NULL;
    }
    if (h->fd >= 0) {
        close(h->fd);
        h->fd = -1;
    }
    free(h->bgrx_row);
    free(h->luma_row);
    free(h->chroma_row);
    h->bgrx_row = NULL;
    h->luma_row = NULL;
    h->chroma_row = NULL;
}

static void fail(struct helper *h, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void fail(struct helper *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    cleanup(h);
    exit(1);
}

/* ------------------------------------------------------------------ sending */

static const char *reject_advice(uint32_t code);

/* The pusher is gone (EOF, EPIPE, ECONNRESET). It may have queued a REJECT or an ERROR saying
 * why just before it closed (a sending error comes before reading it): report that if so. */
static void lost_pusher(struct helper *h) __attribute__((noreturn));
static void lost_pusher(struct helper *h)
{
    for (int i = 0; h->fd >= 0 && i < 256; i++) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(CONTROL_FDS * sizeof(int))];
        } control;
        struct iovec iov = {.iov_base = h->in, .iov_len = sizeof h->in};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                            .msg_controllen = sizeof control.buf};
        ssize_t n = recvmsg(h->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == ECONNRESET || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
                close(fd);
            }
        }
        lpc_header hdr;
        lpc_reason r;
        if ((size_t)n < sizeof hdr + sizeof r)
            continue;
        memcpy(&hdr, h->in, sizeof hdr);
        memcpy(&r, h->in + sizeof hdr, sizeof r);
        if (hdr.magic != LPC_MESSAGE_MAGIC || (uint64_t)hdr.payload_bytes + sizeof hdr != (uint64_t)n ||
            (uint64_t)r.text_bytes + sizeof r != hdr.payload_bytes || r.text_bytes > LPC_TEXT_MAX_BYTES)
            continue;
        char text[LPC_TEXT_MAX_BYTES + 1];
        printable(text, sizeof text, h->in + sizeof hdr + sizeof r, r.text_bytes);
        if (hdr.type == LPC_REJECT)
            fail(h, "the pusher rejected this helper: %s (%" PRIu32 "): %s; %s", error_name(r.code), r.code, text,
                 reject_advice(r.code));
        if (hdr.type == LPC_ERROR)
            fail(h, "the pusher reported error %" PRIu32 " (%s): %s; this helper broke a rule or was too slow, "
                    "see the pusher's log", r.code, error_name(r.code), text);
    }
    fail(h, "pusher closed the connection (group '%s', %s); check the pusher's log for why, "
            "then start this helper again", h->group, h->path);
}

/* Sends one message. Returns false (after saying why) only while already failing. */
static bool send_message(struct helper *h, uint16_t type, const void *payload, size_t payload_len)
{
    if (payload_len > LPC_MESSAGE_MAX_BYTES - sizeof(lpc_header))
        fail(h, "internal error: message type 0x%04x of %zu bytes is too large", type, payload_len);
    lpc_header hdr = {
        .magic = LPC_MESSAGE_MAGIC,
        .type = type,
        .flags = 0,
        .payload_bytes = (uint32_t)payload_len,
        .reserved = 0,
    };
    memcpy(h->out, &hdr, sizeof hdr);
    if (payload_len > 0)
        memcpy(h->out + sizeof hdr, payload, payload_len);
    size_t total = sizeof hdr + payload_len;

    uint64_t give_up = now_ns() + h->peer_timeout_ns;
    for (;;) {
        ssize_t r = send(h->fd, h->out, total, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r == (ssize_t)total) {
            h->last_send_ns = now_ns();
            return true;
        }
        if (r >= 0) {
            if (g_failing)
                return false;
            fail(h, "sent %zd of %zu bytes of a message; SOCK_SEQPACKET should never do that", r, total);
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            uint64_t now = now_ns();
            if (now >= give_up) {
                if (g_failing)
                    return false;
                fail(h, "the pusher has not read anything for %" PRIu64 " ms; it is hung: "
                        "restart the pusher", h->peer_timeout_ns / NS_PER_MS);
            }
            struct pollfd p = {.fd = h->fd, .events = POLLOUT};
            int ms = (int)((give_up - now + NS_PER_MS - 1) / NS_PER_MS);
            if (poll(&p, 1, ms) < 0 && errno != EINTR && !g_failing)
                fail(h, "poll: %s", strerror(errno));
            continue;
        }
        if (g_failing)
            return false;
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
            lost_pusher(h);
        fail(h, "sending to the pusher failed: %s", strerror(errno));
    }
}

static bool send_reason_ok(struct helper *h, uint16_t type, uint32_t code, const char *text)
{
    size_t len = strlen(text);
    if (len > LPC_TEXT_MAX_BYTES) {
        len = LPC_TEXT_MAX_BYTES;
        while (len > 0 && ((uint8_t)text[len] & 0xC0) == 0x80)
            len--; /* never cut a UTF-8 character in two */
    }
    uint8_t payload[sizeof(lpc_reason) + LPC_TEXT_MAX_BYTES];
    lpc_reason r = {.code = code, .text_bytes = (uint32_t)len};
    memcpy(payload, &r, sizeof r);
    memcpy(payload + sizeof r, text, len);
    return send_message(h, type, payload, sizeof r + len);
}

static void send_reason(struct helper *h, uint16_t type, uint32_t code, const char *text)
{
    (void)send_reason_ok(h, type, code, text);
}

/* After our last message (FINISH or ERROR): shut our side, then read and discard until the
 * pusher closes (at most 1 s). Closing at once with messages from the pusher still unread
 * makes Linux report ECONNRESET to the pusher, and a pusher that takes that as "gone" before
 * reading its queue would miss our last message. */
static void close_gracefully(struct helper *h)
{
    if (h->fd < 0)
        return;
    shutdown(h->fd, SHUT_WR);
    uint64_t give_up = now_ns() + 1000 * NS_PER_MS;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= give_up)
            break;
        struct pollfd p = {.fd = h->fd, .events = POLLIN};
        int r = poll(&p, 1, (int)((give_up - now + NS_PER_MS - 1) / NS_PER_MS));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(CONTROL_FDS * sizeof(int))];
        } control;
        struct iovec iov = {.iov_base = h->in, .iov_len = sizeof h->in};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                            .msg_controllen = sizeof control.buf};
        ssize_t n = recvmsg(h->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n <= 0)
            break; /* EOF: the pusher has closed */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                close(fd);
            }
        }
    }
    close(h->fd);
    h->fd = -1;
}

/* FINISH {reason, text}, then exit with the given status. */
static void finish(struct helper *h, uint32_t reason, const char *text, int status) __attribute__((noreturn));
static void finish(struct helper *h, uint32_t reason, const char *text, int status)
{
    send_reason(h, LPC_FINISH, reason, text);
    close_gracefully(h);
    cleanup(h);
    exit(status);
}

/* The pusher broke a rule (or went silent): tell it with FINISH {LPC_FINISH_ERROR, text naming
 * the field and value}, say the same on stderr, exit 1 (SPEC.md §13.3; in 1.0 ERROR is the
 * pusher's message only). `code` is the lpc_error_code the rule would carry, for the log only;
 * 0 when no code fits. */
static void violation(struct helper *h, uint32_t code, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void violation(struct helper *h, uint32_t code, const char *fmt, ...)
{
    char text[LPC_TEXT_MAX_BYTES + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    g_failing = true;
    /* A hung pusher will not close its end: do not wait for it. */
    if (h->fd >= 0 && send_reason_ok(h, LPC_FINISH, LPC_FINISH_ERROR, text) && code != LPC_ERR_TIMEOUT)
        close_gracefully(h);
    if (code == LPC_ERR_TIMEOUT)
        fail(h, "%s; the pusher is hung or overloaded: restart it", text);
    if (code == 0)
        fail(h, "the pusher broke the Capture Link protocol: %s; this is a bug in the pusher, "
                "report it with this line", text);
    fail(h, "the pusher broke the Capture Link protocol (%s): %s; this is a bug in the pusher, "
            "report it with this line", error_name(code), text);
}

static void send_heartbeat(struct helper *h)
{
    lpc_heartbeat hb = {
        .time_ns = now_ns(),
        .frames_sent = h->frames_sent,
        .frames_dropped = h->frames_dropped,
    };
    send_message(h, LPC_HEARTBEAT, &hb, sizeof hb);
}

/* ------------------------------------------------------------------ receiving */

struct message {
    uint16_t type;
    uint16_t flags;
    const uint8_t *payload;
    uint32_t payload_bytes;
    int fds[CONTROL_FDS + 4];
    int fd_count;
};

enum receive_result { RECEIVED, NOTHING, PEER_CLOSED };

static void close_fds(struct message *m)
{
    for (int i = 0; i < m->fd_count; i++)
        if (m->fds[i] >= 0)
            close(m->fds[i]);
    m->fd_count = 0;
}

/* Receives one message without blocking; SPEC §4.4 checks 1-4 (truncation, length, magic, reserved). */
static enum receive_result receive_message(struct helper *h, struct message *m)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(CONTROL_FDS * sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = h->in, .iov_len = sizeof h->in};
    struct msghdr mh = {
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = control.buf,
        .msg_controllen = sizeof control.buf,
    };
    ssize_t n;
    do
        n = recvmsg(h->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == ECONNRESET) {
        /* The pusher closed with our messages unread. Linux reports ECONNRESET once, before
         * the messages the pusher queued for us (a REJECT, an ERROR, a STOP): read those. */
        h->peer_reset = true;
        do
            n = recvmsg(h->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
    }
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return h->peer_reset ? PEER_CLOSED : NOTHING;
        if (errno == ECONNRESET || errno == ENOTCONN)
            return PEER_CLOSED;
        fail(h, "receiving from the pusher failed: %s", strerror(errno));
    }
    if (n == 0)
        return PEER_CLOSED;
    h->last_recv_ns = now_ns();

    memset(m, 0, sizeof *m);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (m->fd_count < (int)(sizeof m->fds / sizeof m->fds[0]))
                m->fds[m->fd_count++] = fd;
            else
                close(fd);
        }
    }

    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        close_fds(m);
        violation(h, LPC_ERR_TRUNCATED, "message truncated on receipt (%s); at most %u bytes and %d descriptors fit",
                  (mh.msg_flags & MSG_TRUNC) ? "MSG_TRUNC" : "MSG_CTRUNC", LPC_MESSAGE_MAX_BYTES, CONTROL_FDS);
    }
    lpc_header hdr;
    if ((size_t)n < sizeof hdr) {
        close_fds(m);
        violation(h, LPC_ERR_BAD_LENGTH, "datagram of %zd bytes is shorter than the 16-byte header", n);
    }
    memcpy(&hdr, h->in, sizeof hdr);
    if ((uint64_t)hdr.payload_bytes + sizeof hdr != (uint64_t)n) {
        close_fds(m);
        violation(h, LPC_ERR_BAD_LENGTH, "header.payload_bytes %" PRIu32 " but the datagram holds %zd payload bytes",
                  hdr.payload_bytes, n - (ssize_t)sizeof hdr);
    }
    if (hdr.magic != LPC_MESSAGE_MAGIC) {
        close_fds(m);
        violation(h, LPC_ERR_BAD_MAGIC, "header.magic 0x%08" PRIx32 " is not 0x%08x", hdr.magic, LPC_MESSAGE_MAGIC);
    }
    if (hdr.reserved != 0) {
        close_fds(m);
        violation(h, LPC_ERR_RESERVED, "header.reserved %" PRIu32 " is not 0", hdr.reserved);
    }
    m->type = hdr.type;
    m->flags = hdr.flags;
    m->payload = h->in + sizeof hdr;
    m->payload_bytes = hdr.payload_bytes;
    return RECEIVED;
}

static bool known_type(uint16_t type)
{
    switch (type) {
    case LPC_HELLO: case LPC_START: case LPC_FRAME: case LPC_AUDIO: case LPC_PAUSE:
    case LPC_RESUME: case LPC_FINISH: case LPC_HEARTBEAT: case LPC_WELCOME: case LPC_REJECT:
    case LPC_RELEASE: case LPC_CONFIG: case LPC_STOP: case LPC_ERROR:
        return true;
    default:
        return false;
    }
}

/* SPEC §4.4 checks 5-6 for a message that is not WELCOME: unknown types and descriptors.
 * Returns false when the message is to be ignored. */
static bool check_type_and_descriptors(struct helper *h, struct message *m)
{
    if (!known_type(m->type)) {
        close_fds(m);
        if (m->flags & LPC_FLAG_OPTIONAL)
            return false;
        violation(h, LPC_ERR_UNKNOWN_TYPE, "message type 0x%04x is unknown and not marked optional", m->type);
    }
    if (m->fd_count != 0) {
        int count = m->fd_count;
        close_fds(m);
        violation(h, LPC_ERR_DESCRIPTORS, "message type 0x%04x carried %d descriptor(s); only WELCOME may carry one",
                  m->type, count);
    }
    return true;
}

static void expect_size(struct helper *h, const struct message *m, const char *name, size_t size)
{
    if (m->payload_bytes != size)
        violation(h, LPC_ERR_BAD_LENGTH, "%s payload is %" PRIu32 " bytes, not %zu", name, m->payload_bytes, size);
}

/* FINISH/STOP/REJECT/ERROR: code, text. */
static void read_reason(struct helper *h, const struct message *m, const char *name,
                        uint32_t *code, char *text, size_t text_cap)
{
    lpc_reason r;
    if (m->payload_bytes < sizeof r)
        violation(h, LPC_ERR_BAD_LENGTH, "%s payload is %" PRIu32 " bytes, shorter than 8", name, m->payload_bytes);
    memcpy(&r, m->payload, sizeof r);
    if ((uint64_t)r.text_bytes + sizeof r != m->payload_bytes)
        violation(h, LPC_ERR_BAD_LENGTH, "%s.text_bytes %" PRIu32 " but %" PRIu32 " text bytes follow", name,
                  r.text_bytes, m->payload_bytes - (uint32_t)sizeof r);
    if (r.text_bytes > LPC_TEXT_MAX_BYTES)
        violation(h, LPC_ERR_TEXT, "%s.text_bytes %" PRIu32 " exceeds %u", name, r.text_bytes, LPC_TEXT_MAX_BYTES);
    if (!utf8_valid(m->payload + sizeof r, r.text_bytes))
        violation(h, LPC_ERR_TEXT, "%s text is not valid UTF-8 (or holds a NUL)", name);
    *code = r.code;
    printable(text, text_cap, m->payload + sizeof r, r.text_bytes);
}

/* ------------------------------------------------------------------ frame geometry */

static bool make_layout(uint32_t format, uint32_t w, uint32_t hgt, uint64_t slot_bytes, bool padded,
                        struct layout *l)
{
    memset(l, 0, sizeof *l);
    uint32_t cw = (w + 1) / 2, ch = (hgt + 1) / 2;
    switch (format) {
    case LPC_FORMAT_BGRX:
        l->plane_count = 1;
        l->row_bytes[0] = w * 4;
        l->rows[0] = hgt;
        break;
    case LPC_FORMAT_NV12:
        l->plane_count = 2;
        l->row_bytes[0] = w;
        l->rows[0] = hgt;
        l->row_bytes[1] = 2 * cw;
        l->rows[1] = ch;
        break;
    case LPC_FORMAT_I420:
        l->plane_count = 3;
        l->row_bytes[0] = w;
        l->rows[0] = hgt;
        l->row_bytes[1] = l->row_bytes[2] = cw;
        l->rows[1] = l->rows[2] = ch;
        break;
    default:
        return false;
    }
    uint64_t offset = 0;
    for (uint32_t p = 0; p < l->plane_count; p++) {
        uint64_t stride = padded ? round_up(l->row_bytes[p], PLANE_ALIGN) : l->row_bytes[p];
        offset = round_up(offset, PLANE_ALIGN);
        l->stride[p] = (uint32_t)stride;
        l->offset[p] = (uint32_t)offset;
        offset += stride * (l->rows[p] - 1) + l->row_bytes[p];
        if (offset > UINT32_MAX)
            return false;
    }
    return offset <= slot_bytes;
}

/* ------------------------------------------------------------------ drawing */

static void ensure_rows(struct helper *h, uint32_t width)
{
    if (width <= h->row_capacity)
        return;
    free(h->bgrx_row);
    free(h->luma_row);
    free(h->chroma_row);
    h->bgrx_row = malloc(((size_t)width + 256) * sizeof(uint32_t));
    h->luma_row = malloc((size_t)width + 256);
    h->chroma_row = malloc((size_t)width + 2);
    if (h->bgrx_row == NULL || h->luma_row == NULL || h->chroma_row == NULL)
        fail(h, "out of memory for a %" PRIu32 "-pixel row; use a smaller --size", width);
    for (uint32_t k = 0; k < width + 256; k++)
        h->luma_row[k] = (uint8_t)k;
    h->row_capacity = width;
}

static void draw(struct helper *h, uint8_t *slot, const struct layout *l, uint32_t format,
                 uint32_t w, uint32_t hgt, uint64_t n)
{
    ensure_rows(h, w);
    uint8_t nlo = (uint8_t)(n & 0xFF), nhi = (uint8_t)((n >> 8) & 0xFF);
    if (format == LPC_FORMAT_BGRX) {
        /* bytes B G R X in memory: a little-endian uint32 B | G<<8 | R<<16 | X<<24 */
        uint32_t gr = ((uint32_t)nhi << 8) | ((uint32_t)nlo << 16) | 0xFF000000u;
        for (uint32_t k = 0; k < w + 256; k++)
            h->bgrx_row[k] = (k & 0xFFu) | gr;
        for (uint32_t y = 0; y < hgt; y++)
            memcpy(slot + l->offset[0] + (size_t)y * l->stride[0],
                   h->bgrx_row + ((y + n) & 0xFF), (size_t)w * 4);
        return;
    }
    for (uint32_t y = 0; y < hgt; y++)
        memcpy(slot + l->offset[0] + (size_t)y * l->stride[0], h->luma_row + ((y + n) & 0xFF), w);
    if (format == LPC_FORMAT_NV12) {
        for (uint32_t x = 0; x < l->row_bytes[1]; x += 2) {
            h->chroma_row[x] = nlo;
            h->chroma_row[x + 1] = nhi;
        }
        for (uint32_t y = 0; y < l->rows[1]; y++)
            memcpy(slot + l->offset[1] + (size_t)y * l->stride[1], h->chroma_row, l->row_bytes[1]);
    } else {
        for (uint32_t y = 0; y < l->rows[1]; y++) {
            memset(slot + l->offset[1] + (size_t)y * l->stride[1], nlo, l->row_bytes[1]);
            memset(slot + l->offset[2] + (size_t)y * l->stride[2], nhi, l->row_bytes[2]);
        }
    }
}

/* ------------------------------------------------------------------ audio */

/* sin(x) for x in [-pi, pi] by its Taylor series: no libm needed, error < 1e-6. */
static double series_sin(double x)
{
    double term = x, sum = x, x2 = x * x;
    for (int k = 1; k <= 9; k++) {
        term *= -x2 / ((2.0 * k) * (2.0 * k + 1));
        sum += term;
    }
    return sum;
}

static void make_sine(struct helper *h)
{
    const double pi = 3.14159265358979323846;
    for (uint32_t i = 0; i < SINE_PERIOD_FRAMES; i++) {
        uint32_t r = (uint32_t)(((uint64_t)i * SINE_HZ) % AUDIO_RATE);
        double theta = 2.0 * pi * (double)r / AUDIO_RATE;
        if (theta > pi)
            theta -= 2.0 * pi;
        double v = series_sin(theta) * 0.25 * 32767.0;
        int16_t s = (int16_t)(v >= 0 ? v + 0.5 : v - 0.5);
        for (uint32_t c = 0; c < AUDIO_CHANNELS; c++)
            h->sine[i * AUDIO_CHANNELS + c] = s;
    }
}

static void send_audio(struct helper *h, uint64_t pts)
{
    uint8_t payload[sizeof(lpc_audio) + AUDIO_BLOCK_FRAMES * AUDIO_CHANNELS * sizeof(int16_t)];
    lpc_audio a = {
        .format = LPC_AUDIO_S16LE,
        .rate_hz = AUDIO_RATE,
        .channels = AUDIO_CHANNELS,
        .reserved = 0,
        .frame_count = AUDIO_BLOCK_FRAMES,
        .pts_ns = pts,
    };
    memcpy(payload, &a, sizeof a);
    int16_t *pcm = (int16_t *)(void *)(payload + sizeof a);
    for (uint32_t i = 0; i < AUDIO_BLOCK_FRAMES; i++) {
        uint32_t src = (uint32_t)((h->audio_frames + i) % SINE_PERIOD_FRAMES);
        for (uint32_t c = 0; c < AUDIO_CHANNELS; c++)
            pcm[i * AUDIO_CHANNELS + c] = h->sine[src * AUDIO_CHANNELS + c];
    }
    h->audio_frames += AUDIO_BLOCK_FRAMES;
    send_message(h, LPC_AUDIO, payload, sizeof payload);
}

/* ------------------------------------------------------------------ session */

static void publish_counters(struct helper *h)
{
    lpc_ring_header *rh = (lpc_ring_header *)(void *)h->ring;
    __atomic_store_n(&rh->helper_frames_published, h->frames_sent, __ATOMIC_RELAXED);
    __atomic_store_n(&rh->helper_frames_dropped, h->frames_dropped, __ATOMIC_RELAXED);
}

static void apply_config(struct helper *h, const struct message *m)
{
    expect_size(h, m, "CONFIG", sizeof(lpc_config));
    lpc_config c;
    memcpy(&c, m->payload, sizeof c);
    if (c.max_width == 0 || c.max_width > h->welcome.max_width)
        violation(h, LPC_ERR_GEOMETRY, "CONFIG.max_width %" PRIu32 " out of range 1..%" PRIu32,
                  c.max_width, h->welcome.max_width);
    if (c.max_height == 0 || c.max_height > h->welcome.max_height)
        violation(h, LPC_ERR_GEOMETRY, "CONFIG.max_height %" PRIu32 " out of range 1..%" PRIu32,
                  c.max_height, h->welcome.max_height);
    if (c.fps < 1 || c.fps > 240)
        violation(h, 0, "CONFIG.fps %" PRIu32 " out of range 1..240", c.fps);
    if (c.flags & ~(uint32_t)LPC_CONFIG_CURSOR)
        violation(h, LPC_ERR_RESERVED, "CONFIG.flags 0x%" PRIx32 " has bits other than LPC_CONFIG_CURSOR", c.flags);
    h->config_max_width = c.max_width;
    h->config_max_height = c.max_height;
    /* LPC_CONFIG_CURSOR asks for the pointer; this helper has none (and was not granted CURSOR). */
    if (!h->fps_explicit && c.fps != h->fps) {
        h->fps = c.fps;
        h->fps_changed = true;
    }
}

static void take_release(struct helper *h, const struct message *m)
{
    expect_size(h, m, "RELEASE", sizeof(lpc_release));
    lpc_release r;
    memcpy(&r, m->payload, sizeof r);
    if (r.reserved != 0)
        violation(h, LPC_ERR_RESERVED, "RELEASE.reserved %" PRIu32 " is not 0", r.reserved);
    if (r.slot >= h->welcome.slot_count)
        violation(h, LPC_ERR_BAD_SLOT, "RELEASE.slot %" PRIu32 " out of range 0..%" PRIu32, r.slot,
                  h->welcome.slot_count - 1);
    if (h->slot_owned[r.slot])
        violation(h, LPC_ERR_SLOT_NOT_OWNED, "RELEASE.slot %" PRIu32 " is already the helper's", r.slot);
    if (r.sequence != h->slot_sequence[r.slot])
        violation(h, LPC_ERR_SEQUENCE, "RELEASE.sequence %" PRIu64 " but slot %" PRIu32 " holds frame %" PRIu64,
                  r.sequence, r.slot, h->slot_sequence[r.slot]);
    h->slot_owned[r.slot] = true;
}

/* Reads everything the pusher has sent; acts on it. */
static void handle_incoming(struct helper *h)
{
    for (;;) {
        struct message m;
        enum receive_result rr = receive_message(h, &m);
        if (rr == NOTHING)
            return;
        if (rr == PEER_CLOSED)
            lost_pusher(h);
        if (!check_type_and_descriptors(h, &m))
            continue;
        char text[LPC_TEXT_MAX_BYTES + 1];
        uint32_t code;
        switch (m.type) {
        case LPC_RELEASE:
            take_release(h, &m);
            break;
        case LPC_CONFIG:
            apply_config(h, &m);
            break;
        case LPC_HEARTBEAT:
            expect_size(h, &m, "HEARTBEAT", sizeof(lpc_heartbeat));
            break;
        case LPC_STOP:
            read_reason(h, &m, "STOP", &code, text, sizeof text);
            say("the pusher asked to stop (reason %" PRIu32 ": %s); finishing", code, text);
            finish(h, LPC_FINISH_USER, "stopped by the pusher", 0);
        case LPC_ERROR:
            read_reason(h, &m, "ERROR", &code, text, sizeof text);
            fail(h, "the pusher reported error %" PRIu32 " (%s): %s; this helper broke a rule or was too slow, "
                    "see the pusher's log", code, error_name(code), text);
        default:
            violation(h, LPC_ERR_STATE, "message type 0x%04x is not allowed while capturing", m.type);
        }
    }
}

static void produce_frame(struct helper *h, uint64_t now)
{
    uint32_t w = h->opt_width, hgt = h->opt_height;
    if (w > h->welcome.max_width) w = h->welcome.max_width;
    if (hgt > h->welcome.max_height) hgt = h->welcome.max_height;
    if (h->config_max_width != 0 && w > h->config_max_width) w = h->config_max_width;
    if (h->config_max_height != 0 && hgt > h->config_max_height) hgt = h->config_max_height;

    uint32_t slot = UINT32_MAX;
    for (uint32_t i = 0; i < h->welcome.slot_count; i++) {
        uint32_t s = (h->next_slot + i) % h->welcome.slot_count;
        if (h->slot_owned[s]) {
            slot = s;
            break;
        }
    }
    if (slot == UINT32_MAX) {
        h->frames_dropped++;
        publish_counters(h);
        return;
    }

    struct layout l;
    if (!make_layout(h->format, w, hgt, h->welcome.slot_bytes, true, &l) &&
        !make_layout(h->format, w, hgt, h->welcome.slot_bytes, false, &l)) {
        /* SPEC §12.6: a frame larger than the ring means FINISH {RESTARTING} and a larger HELLO.
         * This helper's size never grows, so the pusher sized its ring wrongly. */
        violation(h, LPC_ERR_GEOMETRY, "WELCOME.slot_bytes %" PRIu64 " cannot hold a %" PRIu32 "x%" PRIu32
                  " %s frame although it is within max %" PRIu32 "x%" PRIu32,
                  (uint64_t)h->welcome.slot_bytes, w, hgt, format_name(h->format), h->welcome.max_width,
                  h->welcome.max_height);
    }

    uint64_t n = h->sequence + 1;
    uint8_t *base = h->ring + h->welcome.first_slot_offset + (uint64_t)slot * h->welcome.slot_bytes;
    draw(h, base, &l, h->format, w, hgt, n);

    lpc_frame f = {
        .slot = slot,
        .format = h->format,
        .sequence = n,
        .pts_ns = now,
        .width = w,
        .height = hgt,
        .flags = 0,
        .plane_count = l.plane_count,
    };
    for (uint32_t p = 0; p < 3; p++) {
        f.stride[p] = l.stride[p];
        f.plane_offset[p] = l.offset[p];
    }
    if (w != h->last_width || hgt != h->last_height || h->format != h->last_format)
        f.flags |= LPC_FRAME_FORMAT_CHANGED;

    h->slot_owned[slot] = false;
    h->slot_sequence[slot] = n;
    h->next_slot = (slot + 1) % h->welcome.slot_count;
    h->sequence = n;
    send_message(h, LPC_FRAME, &f, sizeof f);
    h->frames_sent++;
    h->last_width = w;
    h->last_height = hgt;
    h->last_format = h->format;
    publish_counters(h);
}

/* Waits until `deadline` (CLOCK_MONOTONIC ns) or until the pusher sends something. */
static void wait_until(struct helper *h, uint64_t deadline)
{
    uint64_t now = now_ns();
    if (deadline <= now)
        return;
    uint64_t ms = (deadline - now) / NS_PER_MS;
    if (ms > 0) {
        struct pollfd p = {.fd = h->fd, .events = POLLIN};
        int r = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
        if (r > 0) {
            handle_incoming(h);
            return;
        }
        if (r < 0) {
            if (errno == EINTR)
                return;
            fail(h, "poll: %s", strerror(errno));
        }
    }
    /* Less than a millisecond left (poll cannot wait that precisely): sleep to the deadline. */
    struct timespec ts = {.tv_sec = (time_t)(deadline / NS_PER_S), .tv_nsec = (long)(deadline % NS_PER_S)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void run(struct helper *h) __attribute__((noreturn));
static void run(struct helper *h)
{
    uint64_t t0 = now_ns(), k = 0; /* frame k is due at t0 + k * 1e9 / fps */
    uint64_t next_frame = t0;
    uint64_t audio_t0 = t0, audio_blocks = 0;
    uint64_t next_audio = h->audio ? audio_t0 + AUDIO_BLOCK_NS : UINT64_MAX;

    for (;;) {
        if (g_signal != 0) {
            char text[64];
            snprintf(text, sizeof text, "stopped by %s", g_signal == SIGINT ? "SIGINT" : "SIGTERM");
            finish(h, LPC_FINISH_USER, text, 0);
        }
        uint64_t now = now_ns();
        if (now - h->last_recv_ns >= h->peer_timeout_ns) {
            /* Read what is queued first: after this process was itself stopped for a while,
             * the pusher's ERROR TIMEOUT may be waiting. */
            handle_incoming(h);
            now = now_ns();
            if (now - h->last_recv_ns >= h->peer_timeout_ns)
                violation(h, LPC_ERR_TIMEOUT, "pusher hung: no message for %" PRIu64 " ms",
                          h->peer_timeout_ns / NS_PER_MS);
        }

        if (h->fps_changed) {
            /* The frame already scheduled keeps its time; the new period applies after it. */
            h->fps_changed = false;
            t0 = next_frame;
            k = 0;
        }

        if (now >= next_frame) {
            produce_frame(h, now);
            if (h->frame_limit != 0 && h->frames_sent >= h->frame_limit)
                finish(h, LPC_FINISH_USER, "done", 0);
            k++;
            next_frame = t0 + k * NS_PER_S / h->fps;
            now = now_ns();
            if (next_frame <= now) {
                /* More than a period late (a stalled machine): skip the missed deadlines. */
                k = (now - t0) * h->fps / NS_PER_S + 1;
                next_frame = t0 + k * NS_PER_S / h->fps;
            }
        }

        if (now >= next_audio) {
            send_audio(h, audio_t0 + audio_blocks * AUDIO_BLOCK_NS);
            audio_blocks++;
            next_audio = audio_t0 + (audio_blocks + 1) * AUDIO_BLOCK_NS;
            if (next_audio + 10 * AUDIO_BLOCK_NS <= now) {
                /* Stalled for over 200 ms: restart the audio clock rather than burst. */
                audio_t0 = now;
                audio_blocks = 0;
                next_audio = audio_t0 + AUDIO_BLOCK_NS;
            }
        }

        now = now_ns();
        if (now - h->last_send_ns >= h->heartbeat_ns)
            send_heartbeat(h);

        uint64_t deadline = min_u64(next_frame, next_audio);
        deadline = min_u64(deadline, h->last_send_ns + h->heartbeat_ns);
        deadline = min_u64(deadline, h->last_recv_ns + h->peer_timeout_ns);
        wait_until(h, deadline);
    }
}

/* ------------------------------------------------------------------ connecting */

static void socket_path(struct helper *h)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (xdg != NULL && xdg[0] == '/') /* empty or relative counts as unset */
        n = snprintf(h->path, sizeof h->path, "%s/livepush/%s.sock", xdg, h->group);
    else
        n = snprintf(h->path, sizeof h->path, "/tmp/livepush-%u/%s.sock", (unsigned)getuid(), h->group);
    if (n < 0 || (size_t)n >= sizeof h->path)
        fail(h, "the socket path for group '%s' (%s/...) is longer than %zu bytes; use a shorter "
                "XDG_RUNTIME_DIR or group name", h->group, (xdg != NULL && xdg[0] == '/') ? xdg : "/tmp",
             sizeof h->path - 1);
}

/* SPEC §3.4 step 5 (SHOULD): the process serving the socket, and the directory holding it,
 * belong to this helper's user. */
static void check_pusher_identity(struct helper *h)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(h->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        fail(h, "SO_PEERCRED on %s: %s", h->path, strerror(errno));
    if (cred.uid != getuid())
        fail(h, "the process serving %s (pid %ld) runs as uid %lu, not as this helper's uid %lu; run the "
                "helper as the pusher's user", h->path, (long)cred.pid, (unsigned long)cred.uid,
             (unsigned long)getuid());

    char dir[sizeof h->path];
    memcpy(dir, h->path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    struct stat st;
    if (lstat(dir, &st) != 0)
        fail(h, "cannot inspect the socket directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0)
        fail(h, "the socket directory %s (owner uid %lu, mode %04o) is not a private directory of uid %lu; "
                "another user may have prepared it: remove it and restart the pusher", dir,
             (unsigned long)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned long)getuid());
}

static void connect_with_retry(struct helper *h)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, h->path, strlen(h->path) + 1);
    uint64_t start = now_ns(), give_up = start + (uint64_t)h->connect_timeout_ms * NS_PER_MS;
    uint64_t delay_ms = 100;
    for (;;) {
        h->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (h->fd < 0)
            fail(h, "socket(AF_UNIX, SOCK_SEQPACKET): %s", strerror(errno));
        if (connect(h->fd, (struct sockaddr *)&addr, sizeof addr) == 0) {
            check_pusher_identity(h);
            return;
        }
        int err = errno;
        close(h->fd);
        h->fd = -1;
        /* ENOENT: no socket yet; ECONNREFUSED: a stale socket, the pusher is starting;
         * EAGAIN: its listen backlog is full. Anything else ends the attempt. */
        if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN && err != EINTR) {
            if (err == EACCES)
                fail(h, "cannot connect to %s: %s; run this helper as the same user as the pusher", h->path,
                     strerror(err));
            fail(h, "cannot connect to %s: %s", h->path, strerror(err));
        }
        if (g_signal != 0) {
            cleanup(h);
            exit(0);
        }
        uint64_t now = now_ns();
        if (now >= give_up)
            fail(h, "no pusher for group '%s' at %s after %" PRIu32 " ms: %s; start the pusher with this "
                    "capture group first, or raise --connect-timeout-ms",
                 h->group, h->path, h->connect_timeout_ms, strerror(err));
        uint64_t wake = now + delay_ms * NS_PER_MS;
        if (wake > give_up)
            wake = give_up;
        struct timespec ts = {.tv_sec = (time_t)(wake / NS_PER_S), .tv_nsec = (long)(wake % NS_PER_S)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        delay_ms = delay_ms * 2 > 1000 ? 1000 : delay_ms * 2;
    }
}

static void send_hello(struct helper *h)
{
    lpc_hello hello;
    memset(&hello, 0, sizeof hello);
    hello.version_major = LPC_VERSION_MAJOR;
    hello.version_minor = LPC_VERSION_MINOR;
    hello.pid = (uint32_t)getpid();
    hello.capabilities = h->audio_wanted ? LPC_CAP_AUDIO : 0;
    hello.pixel_formats = LPC_FORMAT_BIT(LPC_FORMAT_BGRX) | LPC_FORMAT_BIT(LPC_FORMAT_NV12) |
                          LPC_FORMAT_BIT(LPC_FORMAT_I420);
    hello.audio_formats = h->audio_wanted ? LPC_AUDIO_BIT(LPC_AUDIO_S16LE) : 0;
    hello.max_width = h->opt_width;
    hello.max_height = h->opt_height;
    memcpy(hello.helper_name, HELPER_NAME, sizeof HELPER_NAME - 1);
    memcpy(hello.helper_version, HELPER_VERSION, sizeof HELPER_VERSION - 1);
    send_message(h, LPC_HELLO, &hello, sizeof hello);
}

static const char *reject_advice(uint32_t code)
{
    switch (code) {
    case LPC_ERR_PEER_UID: return "run this helper as the same user as the pusher";
    case LPC_ERR_BUSY: return "another helper is connected to this group: stop it, or use another group";
    case LPC_ERR_VERSION: return "this helper and the pusher speak different major versions: update one of them";
    case LPC_ERR_FORMAT: return "the pusher accepts none of BGRX, NV12, I420";
    case LPC_ERR_GEOMETRY: return "the pusher refused the frame size: try a smaller --size";
    default: return "see the pusher's log";
    }
}

/* SPEC §5.9: every range of WELCOME's table. */
static void validate_welcome(struct helper *h, const lpc_welcome *w)
{
    const uint32_t offered = LPC_FORMAT_BIT(LPC_FORMAT_BGRX) | LPC_FORMAT_BIT(LPC_FORMAT_NV12) |
                             LPC_FORMAT_BIT(LPC_FORMAT_I420);
    if (w->reserved != 0)
        violation(h, LPC_ERR_RESERVED, "WELCOME.reserved %" PRIu32 " is not 0", w->reserved);
    if (w->version_major != LPC_VERSION_MAJOR || w->version_minor > LPC_VERSION_MINOR)
        violation(h, LPC_ERR_VERSION, "WELCOME.version %u.%u, but this helper speaks %u.%u", w->version_major,
                  w->version_minor, LPC_VERSION_MAJOR, LPC_VERSION_MINOR);
    if (w->capabilities & ~(uint32_t)(h->audio_wanted ? LPC_CAP_AUDIO : 0))
        violation(h, LPC_ERR_FORMAT, "WELCOME.capabilities 0x%" PRIx32 " has bits this helper did not ask for",
                  w->capabilities);
    if ((w->pixel_formats & ~offered) != 0 || w->pixel_formats == 0)
        violation(h, LPC_ERR_FORMAT, "WELCOME.pixel_formats 0x%" PRIx32 " is not a non-empty subset of 0x%" PRIx32,
                  w->pixel_formats, offered);
    if (w->session_id == 0)
        violation(h, 0, "WELCOME.session_id is 0");
    if (w->slot_count < LPC_MIN_SLOTS || w->slot_count > LPC_MAX_SLOTS)
        violation(h, LPC_ERR_GEOMETRY, "WELCOME.slot_count %" PRIu32 " out of range %u..%u", w->slot_count,
                  LPC_MIN_SLOTS, LPC_MAX_SLOTS);
    if (w->max_width < 1 || w->max_width > h->opt_width || w->max_height < 1 || w->max_height > h->opt_height)
        violation(h, LPC_ERR_GEOMETRY, "WELCOME.max_width x max_height %" PRIu32 "x%" PRIu32 " out of range "
                  "1x1..%" PRIu32 "x%" PRIu32, w->max_width, w->max_height, h->opt_width, h->opt_height);
    uint64_t largest = (uint64_t)w->max_width * w->max_height * 4; /* both <= 16384 here */
    if (w->slot_bytes % 4096 != 0 || w->slot_bytes < largest)
        violation(h, LPC_ERR_GEOMETRY, "WELCOME.slot_bytes %" PRIu64 " is not a multiple of 4096 >= %" PRIu64
                  " (max_width x max_height x 4)", (uint64_t)w->slot_bytes, largest);
    if (w->first_slot_offset < LPC_RING_HEADER_BYTES || w->first_slot_offset % 4096 != 0)
        violation(h, LPC_ERR_GEOMETRY, "WELCOME.first_slot_offset %" PRIu64 " is not a multiple of 4096 >= %u",
                  (uint64_t)w->first_slot_offset, LPC_RING_HEADER_BYTES);
    if (w->slot_bytes > (UINT64_MAX - w->first_slot_offset) / w->slot_count ||
        w->first_slot_offset + (uint64_t)w->slot_count * w->slot_bytes != w->ring_bytes)
        violation(h, LPC_ERR_GEOMETRY, "WELCOME.ring_bytes %" PRIu64 " is not first_slot_offset %" PRIu64
                  " + %" PRIu32 " slots x %" PRIu64 " bytes", (uint64_t)w->ring_bytes,
                  (uint64_t)w->first_slot_offset, w->slot_count, (uint64_t)w->slot_bytes);
    if (w->ring_bytes > SIZE_MAX)
        fail(h, "the ring of %" PRIu64 " bytes does not fit this process's address space", (uint64_t)w->ring_bytes);
    if (w->fps < 1 || w->fps > 240)
        violation(h, 0, "WELCOME.fps %" PRIu32 " out of range 1..240", w->fps);
    if (w->heartbeat_interval_ms < 1)
        violation(h, 0, "WELCOME.heartbeat_interval_ms is 0");
    if (w->peer_timeout_ms <= w->heartbeat_interval_ms)
        violation(h, 0, "WELCOME.peer_timeout_ms %" PRIu32 " is not greater than heartbeat_interval_ms %" PRIu32,
                  w->peer_timeout_ms, w->heartbeat_interval_ms);
}

static void map_ring(struct helper *h, int ring_fd)
{
    const lpc_welcome *w = &h->welcome;
    struct stat st;
    if (fstat(ring_fd, &st) != 0) {
        close(ring_fd);
        fail(h, "fstat of the ring memfd: %s", strerror(errno));
    }
    if ((uint64_t)st.st_size != w->ring_bytes) {
        close(ring_fd);
        violation(h, LPC_ERR_GEOMETRY, "the ring memfd is %jd bytes but WELCOME.ring_bytes is %" PRIu64,
                  (intmax_t)st.st_size, (uint64_t)w->ring_bytes);
    }
    int seals = fcntl(ring_fd, F_GET_SEALS);
    if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
        close(ring_fd);
        violation(h, 0, "the ring memfd's seals 0x%x lack F_SEAL_SHRINK | F_SEAL_GROW", seals < 0 ? 0 : seals);
    }
    void *p = mmap(NULL, (size_t)w->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
    int map_errno = errno;
    close(ring_fd); /* the mapping keeps the memory */
    if (p == MAP_FAILED)
        fail(h, "mmap of the %" PRIu64 "-byte ring: %s", (uint64_t)w->ring_bytes, strerror(map_errno));
    h->ring = p;
    h->ring_len = (size_t)w->ring_bytes;

    lpc_ring_header rh;
    memcpy(&rh, h->ring, sizeof rh);
    if (rh.magic != LPC_RING_MAGIC)
        violation(h, LPC_ERR_BAD_MAGIC, "ring header magic 0x%08" PRIx32 " is not 0x%08x", rh.magic, LPC_RING_MAGIC);
    if (rh.version_major != w->version_major || rh.version_minor != w->version_minor ||
        rh.session_id != w->session_id || rh.slot_count != w->slot_count ||
        rh.header_bytes != LPC_RING_HEADER_BYTES || rh.slot_bytes != w->slot_bytes ||
        rh.first_slot_offset != w->first_slot_offset || rh.ring_bytes != w->ring_bytes)
        violation(h, LPC_ERR_GEOMETRY,
                  "ring header (version %u.%u, session %" PRIu64 ", %" PRIu32 " slots of %" PRIu64 " at %" PRIu64
                  ", header %" PRIu32 ", ring %" PRIu64 ") disagrees with WELCOME (version %u.%u, session %" PRIu64
                  ", %" PRIu32 " slots of %" PRIu64 " at %" PRIu64 ", ring %" PRIu64 ")",
                  rh.version_major, rh.version_minor, rh.session_id, rh.slot_count, rh.slot_bytes,
                  rh.first_slot_offset, rh.header_bytes, rh.ring_bytes, w->version_major, w->version_minor,
                  (uint64_t)w->session_id, w->slot_count, (uint64_t)w->slot_bytes, (uint64_t)w->first_slot_offset,
                  (uint64_t)w->ring_bytes);
}

/* Waits for WELCOME (or REJECT), validates it, maps the ring. */
static void await_welcome(struct helper *h)
{
    uint64_t give_up = now_ns() + (uint64_t)LPC_PEER_TIMEOUT_MS * NS_PER_MS;
    for (;;) {
        if (g_signal != 0)
            finish(h, LPC_FINISH_USER, g_signal == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM", 0);
        uint64_t now = now_ns();
        if (now >= give_up)
            fail(h, "the pusher at %s answered HELLO with neither WELCOME nor REJECT within %u ms; it is hung "
                    "or not a LivePush pusher: restart it", h->path, LPC_PEER_TIMEOUT_MS);
        struct pollfd p = {.fd = h->fd, .events = POLLIN};
        int r = poll(&p, 1, (int)((give_up - now + NS_PER_MS - 1) / NS_PER_MS));
        if (r < 0 && errno != EINTR)
            fail(h, "poll: %s", strerror(errno));
        if (r <= 0)
            continue;

        struct message m;
        enum receive_result rr = receive_message(h, &m);
        if (rr == NOTHING)
            continue;
        if (rr == PEER_CLOSED)
            lost_pusher(h);
        if (m.type == LPC_WELCOME) {
            if (m.fd_count != 1) {
                int count = m.fd_count;
                close_fds(&m);
                violation(h, LPC_ERR_DESCRIPTORS, "WELCOME carried %d descriptors, not exactly 1", count);
            }
            int ring_fd = m.fds[0];
            if (m.payload_bytes != sizeof(lpc_welcome)) {
                close(ring_fd);
                violation(h, LPC_ERR_BAD_LENGTH, "WELCOME payload is %" PRIu32 " bytes, not %zu", m.payload_bytes,
                          sizeof(lpc_welcome));
            }
            memcpy(&h->welcome, m.payload, sizeof h->welcome);
            /* validate_welcome may exit; the descriptor closes with the process then. */
            validate_welcome(h, &h->welcome);
            map_ring(h, ring_fd);
            return;
        }
        if (!check_type_and_descriptors(h, &m))
            continue;
        char text[LPC_TEXT_MAX_BYTES + 1];
        uint32_t code;
        switch (m.type) {
        case LPC_REJECT:
            read_reason(h, &m, "REJECT", &code, text, sizeof text);
            fail(h, "the pusher rejected this helper: %s (%" PRIu32 "): %s; %s", error_name(code), code, text,
                 reject_advice(code));
        case LPC_ERROR:
            read_reason(h, &m, "ERROR", &code, text, sizeof text);
            fail(h, "the pusher reported error %" PRIu32 " (%s): %s; see the pusher's log", code, error_name(code),
                 text);
        default: /* HEARTBEAT, CONFIG, STOP... are not allowed before WELCOME (SPEC §12.8) */
            violation(h, LPC_ERR_STATE, "message type 0x%04x before WELCOME", m.type);
        }
    }
}

/* ------------------------------------------------------------------ command line */

static void usage(FILE *to)
{
    fputs("usage: pattern-helper --group NAME [--size WxH] [--fps N] [--frames N]\n"
          "                      [--format bgrx|nv12|i420] [--audio] [--connect-timeout-ms N]\n"
          "\n"
          "A Capture Link helper that sends a test pattern to the LivePush pusher serving group NAME.\n"
          "  --group NAME              capture group ([A-Za-z0-9._-], 1..64 characters); required\n"
          "  --size WxH                frame size (default 640x360)\n"
          "  --fps N                   frame rate 1..240 (default: the rate the pusher asks for, else 30)\n"
          "  --frames N                send N frames, then finish (default: until SIGINT/SIGTERM or STOP)\n"
          "  --format F                pixel format bgrx, nv12 or i420 (default bgrx)\n"
          "  --audio                   also send a 440 Hz S16LE stereo 48 kHz sine, if the pusher accepts audio\n"
          "  --connect-timeout-ms N    keep retrying to connect this long (default 10000)\n",
          to);
}

static void bad_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("; see pattern-helper --help\n", stderr);
    va_end(ap);
    exit(2);
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return false;
    *out = v;
    return true;
}

static void parse_args(struct helper *h, int argc, char **argv)
{
    enum { OPT_GROUP = 256, OPT_SIZE, OPT_FPS, OPT_FRAMES, OPT_FORMAT, OPT_AUDIO, OPT_TIMEOUT, OPT_HELP };
    static const struct option options[] = {
        {"group", required_argument, NULL, OPT_GROUP},
        {"size", required_argument, NULL, OPT_SIZE},
        {"fps", required_argument, NULL, OPT_FPS},
        {"frames", required_argument, NULL, OPT_FRAMES},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"audio", no_argument, NULL, OPT_AUDIO},
        {"connect-timeout-ms", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case OPT_GROUP: {
            size_t len = strlen(optarg);
            if (len < 1 || len > LPC_GROUP_NAME_MAX || strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                      "abcdefghijklmnopqrstuvwxyz0123456789._-") != len)
                bad_usage("--group '%s' is not a group name: use 1 to %u of A-Z a-z 0-9 . _ -", optarg,
                          LPC_GROUP_NAME_MAX);
            h->group = optarg;
            break;
        }
        case OPT_SIZE: {
            char *x = strchr(optarg, 'x');
            uint64_t w = 0, hh = 0;
            if (x == NULL)
                bad_usage("--size '%s' is not WxH (for example 1920x1080)", optarg);
            *x = '\0';
            bool ok = parse_u64(optarg, MAX_DIMENSION, &w) && parse_u64(x + 1, MAX_DIMENSION, &hh) && w > 0 && hh > 0;
            *x = 'x';
            if (!ok)
                bad_usage("--size '%s' is not WxH with each side 1..%u", optarg, MAX_DIMENSION);
            h->opt_width = (uint32_t)w;
            h->opt_height = (uint32_t)hh;
            break;
        }
        case OPT_FPS:
            if (!parse_u64(optarg, 240, &v) || v < 1)
                bad_usage("--fps '%s' is not a whole number 1..240", optarg);
            h->opt_fps = (uint32_t)v;
            h->fps_explicit = true;
            break;
        case OPT_FRAMES:
            if (!parse_u64(optarg, UINT64_MAX, &v) || v < 1)
                bad_usage("--frames '%s' is not a whole number >= 1", optarg);
            h->frame_limit = v;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "bgrx") == 0) h->format = LPC_FORMAT_BGRX;
            else if (strcmp(optarg, "nv12") == 0) h->format = LPC_FORMAT_NV12;
            else if (strcmp(optarg, "i420") == 0) h->format = LPC_FORMAT_I420;
            else bad_usage("--format '%s' is not bgrx, nv12 or i420", optarg);
            break;
        case OPT_AUDIO:
            h->audio_wanted = true;
            break;
        case OPT_TIMEOUT:
            if (!parse_u64(optarg, 24ull * 3600 * 1000, &v))
                bad_usage("--connect-timeout-ms '%s' is not a whole number of milliseconds", optarg);
            h->connect_timeout_ms = (uint32_t)v;
            break;
        case OPT_HELP:
        case 'h':
            usage(stdout);
            exit(0);
        case ':':
            bad_usage("%s needs a value", argv[optind - 1]);
        default:
            if (optopt != 0 && optopt < 256)
                bad_usage("unknown option -%c", optopt);
            bad_usage("unknown option or missing value: %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        bad_usage("unexpected argument '%s'", argv[optind]);
    if (h->group == NULL)
        bad_usage("--group NAME is required (the capture group the pusher serves)");
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    static struct helper helper; /* large buffers: not on the stack */
    struct helper *h = &helper;
    h->fd = -1;
    h->opt_width = 640;
    h->opt_height = 360;
    h->opt_fps = 30;
    h->format = LPC_FORMAT_BGRX;
    h->connect_timeout_ms = LPC_CONNECT_RETRY_MS_DEFAULT;
    h->peer_timeout_ns = (uint64_t)LPC_PEER_TIMEOUT_MS * NS_PER_MS;
    h->heartbeat_ns = (uint64_t)LPC_HEARTBEAT_INTERVAL_MS * NS_PER_MS;
    parse_args(h, argc, argv);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll and sleeps return EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    socket_path(h);
    connect_with_retry(h);
    h->last_recv_ns = now_ns();
    send_hello(h);
    await_welcome(h);

    const lpc_welcome *w = &h->welcome;
    if (!(w->pixel_formats & LPC_FORMAT_BIT(h->format))) {
        char text[128];
        snprintf(text, sizeof text, "the pusher does not accept pixel format %s", format_name(h->format));
        say("%s; try another --format", text);
        finish(h, LPC_FINISH_ERROR, text, 1);
    }
    h->audio = h->audio_wanted && (w->capabilities & LPC_CAP_AUDIO);
    if (h->audio_wanted && !h->audio)
        say("note: the pusher did not accept audio; sending video only");
    h->heartbeat_ns = (uint64_t)w->heartbeat_interval_ms * NS_PER_MS;
    h->peer_timeout_ns = (uint64_t)w->peer_timeout_ms * NS_PER_MS;
    h->fps = h->fps_explicit ? h->opt_fps : w->fps; /* until a CONFIG says otherwise */
    for (uint32_t i = 0; i < w->slot_count; i++)
        h->slot_owned[i] = true;
    if (h->audio)
        make_sine(h);

    static const char info[] = "{\"source\":\"pattern\",\"helper\":\"" HELPER_NAME "\"}";
    uint8_t start[sizeof(lpc_start) + sizeof info];
    lpc_start s = {.info_bytes = (uint32_t)(sizeof info - 1)};
    memcpy(start, &s, sizeof s);
    memcpy(start + sizeof s, info, sizeof info - 1);
    send_message(h, LPC_START, start, sizeof s + sizeof info - 1);

    run(h);
}
