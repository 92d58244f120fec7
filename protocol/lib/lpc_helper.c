/*
 * lpc_helper.c: liblivepush-capture's session: the socket, the ring, slot ownership, timers
 * and the lifecycle of SPEC.md §12 on the helper's side. The checks of what arrives are in
 * lpc_wire.c.
 */
#define _GNU_SOURCE

#include "lpc_session.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

uint64_t lpc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

int lpc__set_error(lpc_helper *h, int status, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    vsnprintf(h->error, sizeof h->error, format, ap);
    va_end(ap);
    return status;
}

/* ------------------------------------------------------------------ closing */

/* SPEC §4.7: after the last message, shut our side and read until the pusher closes (<= 1 s). */
void lpc__linger_and_close(lpc_helper *h, bool linger)
{
    if (h->fd < 0)
        return;
    shutdown(h->fd, SHUT_WR);
    uint64_t give_up = lpc_now_ns() + (linger ? LPC_LINGER_MS : 0) * NS_PER_MS;
    for (uint64_t now = lpc_now_ns(); now < give_up; now = lpc_now_ns()) {
        struct pollfd p = {.fd = h->fd, .events = POLLIN};
        int r = poll(&p, 1, (int)((give_up - now + NS_PER_MS - 1) / NS_PER_MS));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        char control[CMSG_SPACE(LPC_WIRE_MAX_FDS * sizeof(int))];
        struct iovec iov = {.iov_base = h->in, .iov_len = sizeof h->in};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                            .msg_controllen = sizeof control};
        ssize_t n = recvmsg(h->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ECONNRESET))
            continue;
        if (n <= 0)
            break;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
                    close(fd);
                }
    }
    close(h->fd);
    h->fd = -1;
}

int lpc__end_session(lpc_helper *h, int status)
{
    if (h->state != CLOSED) {
        h->state = CLOSED;
        h->end_status = status;
    }
    if (h->fd >= 0) {
        close(h->fd);
        h->fd = -1;
    }
    return status;
}

/* ------------------------------------------------------------------ sending */

/* One datagram of h->out. A full socket is waited on for at most peer_timeout_ms (SPEC §4.1). */
static int send_datagram(lpc_helper *h, size_t bytes)
{
    if (h->fd < 0)
        return LPC_FINISHED;
    uint64_t give_up = lpc_now_ns() + h->peer_timeout_ns;
    for (;;) {
        ssize_t r = send(h->fd, h->out, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r == (ssize_t)bytes) {
            h->last_send_ns = lpc_now_ns();
            return LPC_OK;
        }
        if (r >= 0)
            return lpc__set_error(h, LPC_E_SYSTEM, "send() sent %zd of %zu bytes on a SOCK_SEQPACKET socket", r, bytes);
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN) {
            uint64_t now = lpc_now_ns();
            if (now >= give_up)
                return lpc__set_error(h, LPC_E_TIMEOUT, "the pusher read nothing for %" PRIu64 " ms: it is hung",
                                 h->peer_timeout_ns / NS_PER_MS);
            struct pollfd p = {.fd = h->fd, .events = POLLOUT};
            (void)poll(&p, 1, (int)((give_up - now + NS_PER_MS - 1) / NS_PER_MS));
            continue;
        }
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
            return lpc__set_error(h, LPC_E_CLOSED, "the pusher closed the connection (%s)", strerror(errno));
        return lpc__set_error(h, LPC_E_SYSTEM, "send() to %s: %s", h->path, strerror(errno));
    }
}

int lpc__send_only(lpc_helper *h, uint16_t type, const void *payload, size_t bytes)
{
    return send_datagram(h, lpc_wire_encode(h->out, type, payload, bytes));
}

int lpc__send_message(lpc_helper *h, uint16_t type, const void *payload, size_t bytes)
{
    int rc = send_datagram(h, lpc_wire_encode(h->out, type, payload, bytes));
    return rc == LPC_OK || rc == LPC_FINISHED ? rc : lpc__end_session(h, rc);
}

int lpc__send_finish(lpc_helper *h, uint32_t code, const char *text, bool linger)
{
    int rc = send_datagram(h, lpc_wire_encode_reason(h->out, LPC_FINISH, code, text));
    lpc__linger_and_close(h, linger && rc == LPC_OK);
    return rc;
}

/* The pusher broke a rule or went silent: FINISH {ERROR, text} (SPEC §13.3), then close.
 * Before WELCOME there is no session to finish: just close (SPEC §12.8). */
int lpc__pusher_fault(lpc_helper *h, int status, const lpc_fault *f)
{
    if (h->state != AWAITING_WELCOME && h->fd >= 0)
        (void)lpc__send_finish(h, LPC_FINISH_ERROR, f->text, status != LPC_E_TIMEOUT);
    if (status == LPC_E_TIMEOUT)
        lpc__set_error(h, status, "%s; the pusher is hung or overloaded: restart it", f->text);
    else
        lpc__set_error(h, status, "the pusher broke the Capture Link protocol (%s): %s; this is a bug in the pusher",
                  f->code != 0 ? lpc_error_name(f->code) : "rule", f->text);
    return lpc__end_session(h, status);
}

static void publish_counters(lpc_helper *h)
{
    lpc_ring_header *rh = (lpc_ring_header *)(void *)h->ring;
    __atomic_store_n(&rh->helper_frames_published, h->frames_sent, __ATOMIC_RELAXED);
    __atomic_store_n(&rh->helper_frames_dropped, h->frames_dropped, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ receiving */

/* One datagram without blocking: LPC_RECEIVED (m filled, *ring_fd the WELCOME's descriptor or
 * -1), LPC_NOTHING, or a status ending the session. */
int lpc__receive(lpc_helper *h, lpc_message *m, int *ring_fd)
{
    *ring_fd = -1;
    char control[CMSG_SPACE(LPC_WIRE_MAX_FDS * sizeof(int))];
    struct iovec iov = {.iov_base = h->in, .iov_len = sizeof h->in};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t n;
    do
        n = recvmsg(h->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n < 0 && (errno == EINTR || errno == ECONNRESET)); /* SPEC §4.5: a reset means keep reading */
    if (n < 0 && errno == EAGAIN)
        return LPC_NOTHING;
    if (n < 0)
        return lpc__end_session(h, lpc__set_error(h, LPC_E_SYSTEM, "recvmsg() on %s: %s", h->path, strerror(errno)));
    int fds[LPC_WIRE_MAX_FDS + 4], fd_count = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
                if (fd_count < (int)(sizeof fds / sizeof fds[0]))
                    fds[fd_count++] = fd;
                else
                    close(fd);
            }
    if (n == 0 && fd_count == 0) {
        if (h->state == AWAITING_WELCOME)
            lpc__set_error(h, LPC_E_CLOSED, "the pusher at %s closed the connection before WELCOME", h->path);
        else
            lpc__set_error(h, LPC_E_CLOSED, "the pusher closed the connection without STOP (group '%s')", h->group);
        return lpc__end_session(h, LPC_E_CLOSED);
    }
    h->last_recv_ns = lpc_now_ns();
    lpc_fault f;
    int parsed = lpc_wire_parse(h->in, (size_t)n, mh.msg_flags, fd_count, m, &f);
    if (parsed == LPC_PARSE_OK && m->type == LPC_WELCOME)
        *ring_fd = fds[0];
    else
        for (int i = 0; i < fd_count; i++)
            close(fds[i]);
    if (parsed == LPC_PARSE_FAULT)
        return lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
    return parsed == LPC_PARSE_IGNORE ? LPC_RECEIVED + 1 : LPC_RECEIVED;
}

int lpc__peer_message(lpc_helper *h, const lpc_message *m, int status, const char *what)
{
    char text[LPC_TEXT_MAX_BYTES + 1];
    lpc_wire_reason(m, &h->peer_code, text, sizeof text);
    lpc__set_error(h, status, "%s %s (%" PRIu32 "): %s", what, lpc_error_name(h->peer_code), h->peer_code, text);
    lpc__linger_and_close(h, false);
    return lpc__end_session(h, status);
}

/* ------------------------------------------------------------------ dispatch */

static int handle(lpc_helper *h, const lpc_message *m)
{
    lpc_fault f;
    switch (m->type) {
    case LPC_HEARTBEAT:
        return 0;
    case LPC_CONFIG:
        if (!lpc_wire_config(m, &h->welcome, &h->config, &f))
            return lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
        return LPC_EVENT_CONFIG;
    case LPC_RELEASE: {
        lpc_release r;
        if (!lpc_wire_release(m, h->welcome.slot_count, h->borrowed, h->slot_sequence, &r, &f))
            return lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
        h->borrowed[r.slot] = false;
        h->slots[r.slot] = SLOT_FREE;
        return 0;
    }
    case LPC_STOP: {
        char text[LPC_TEXT_MAX_BYTES + 1];
        uint32_t code;
        lpc_wire_reason(m, &code, text, sizeof text);
        lpc__set_error(h, LPC_STOPPED, "the pusher asked to stop (reason %" PRIu32 ": %s)", code, text);
        h->planned_end = true;
        (void)lpc__send_finish(h, LPC_FINISH_USER, "stopped by the pusher", true);
        return lpc__end_session(h, LPC_STOPPED);
    }
    case LPC_ERROR:
        return lpc__peer_message(h, m, LPC_E_PUSHER_ERROR, "the pusher reported error");
    default:
        lpc_fault_set(&f, LPC_ERR_STATE, "message type 0x%04x is not allowed after WELCOME", m->type);
        return lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
    }
}

int lpc_helper_dispatch(lpc_helper *h)
{
    if (h == NULL)
        return LPC_E_INVALID;
    if (h->state == CLOSED)
        return h->end_status;
    int events = 0;
    for (;;) {
        lpc_message m;
        int ring_fd;
        int rc = lpc__receive(h, &m, &ring_fd);
        if (rc < 0)
            return rc;
        if (rc == LPC_NOTHING)
            break;
        if (ring_fd >= 0)
            close(ring_fd); /* a second WELCOME: handle() reports it */
        if (rc != LPC_RECEIVED)
            continue; /* an ignored optional message; it still reset the silence timer */
        rc = handle(h, &m);
        if (rc < 0)
            return rc;
        events |= rc;
    }
    uint64_t now = lpc_now_ns();
    if (now - h->last_recv_ns >= h->peer_timeout_ns) {
        lpc_fault f;
        lpc_fault_set(&f, LPC_ERR_TIMEOUT, "pusher hung: no message for %" PRIu64 " ms",
                      (now - h->last_recv_ns) / NS_PER_MS);
        return lpc__pusher_fault(h, LPC_E_TIMEOUT, &f);
    }
    if (now - h->last_send_ns >= h->heartbeat_ns) {
        lpc_heartbeat hb = {.time_ns = now, .frames_sent = h->frames_sent, .frames_dropped = h->frames_dropped};
        int rc = lpc__send_message(h, LPC_HEARTBEAT, &hb, sizeof hb);
        if (rc < 0)
            return rc;
    }
    return events;
}

int lpc_helper_timeout_ms(const lpc_helper *h)
{
    if (h == NULL || h->state == CLOSED)
        return 0;
    uint64_t now = lpc_now_ns();
    uint64_t next = h->last_send_ns + h->heartbeat_ns;
    if (h->last_recv_ns + h->peer_timeout_ns < next)
        next = h->last_recv_ns + h->peer_timeout_ns;
    return next <= now ? 0 : (int)((next - now + NS_PER_MS - 1) / NS_PER_MS);
}

int lpc_helper_fd(const lpc_helper *h) { return h == NULL ? -1 : h->fd; }

int lpc_helper_wait_frame(lpc_helper *h)
{
    if (h == NULL)
        return LPC_E_INVALID;
    int events = lpc_helper_dispatch(h);
    if (events < 0)
        return events;
    uint64_t now = lpc_now_ns();
    uint32_t fps = h->options.fps != 0 ? h->options.fps : h->config.fps;
    if (h->pace_fps != fps) { /* a new rate applies from the next frame */
        h->pace_fps = fps;
        h->pace_t0_ns = now;
        h->pace_count = 0;
    }
    uint64_t due = h->pace_t0_ns + h->pace_count * NS_PER_S / h->pace_fps;
    if (due + NS_PER_S / h->pace_fps <= now) { /* more than a period late: skip what was missed */
        h->pace_t0_ns = now;
        h->pace_count = 0;
        due = now;
    }
    while ((now = lpc_now_ns()) < due) {
        int wait_ms = (int)((due - now) / NS_PER_MS), limit = lpc_helper_timeout_ms(h);
        if (wait_ms > limit)
            wait_ms = limit;
        if (wait_ms > 0) {
            struct pollfd p = {.fd = h->fd, .events = POLLIN};
            if (poll(&p, 1, wait_ms) < 0 && errno != EINTR)
                return lpc__end_session(h, lpc__set_error(h, LPC_E_SYSTEM, "poll(): %s", strerror(errno)));
        } else if (limit > 0) {
            struct timespec ts = {.tv_sec = (time_t)(due / NS_PER_S), .tv_nsec = (long)(due % NS_PER_S)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        }
        int rc = lpc_helper_dispatch(h);
        if (rc < 0)
            return rc;
        events |= rc;
        if (h->options.fps == 0 && h->pace_fps != h->config.fps)
            break; /* CONFIG changed the rate: the caller sends a frame now, the new rate follows */
    }
    h->pace_count++;
    return events;
}

/* ------------------------------------------------------------------ frames */

/* The size to lay out now. With LPC_CAP_SCALE the source (options' maximum) is fitted whole into
 * CONFIG's maximum, its aspect kept, each side rounded to the nearest pixel and at least 1 (SPEC
 * §12.5); without it each side is capped on its own (a helper that cannot scale crops). */
static void target_size(const lpc_helper *h, uint32_t *w, uint32_t *hh)
{
    uint64_t sw = h->options.max_width, sh = h->options.max_height;
    uint64_t cw = h->config.max_width, ch = h->config.max_height;
    if (!(h->welcome.capabilities & LPC_CAP_SCALE) || (sw <= cw && sh <= ch)) {
        *w = (uint32_t)(sw < cw ? sw : cw);
        *hh = (uint32_t)(sh < ch ? sh : ch);
        return;
    }
    if (sw * ch <= sh * cw) { /* the height limits: sw/sh <= cw/ch */
        *hh = (uint32_t)ch;
        *w = (uint32_t)((sw * ch * 2 + sh) / (sh * 2)); /* sw * ch / sh, rounded */
    } else {
        *w = (uint32_t)cw;
        *hh = (uint32_t)((sh * cw * 2 + sw) / (sw * 2));
    }
    if (*w < 1)
        *w = 1;
    if (*hh < 1)
        *hh = 1;
}

static int check_open(lpc_helper *h)
{
    if (h == NULL)
        return LPC_E_INVALID;
    return h->state == CLOSED ? LPC_FINISHED : LPC_OK;
}

int lpc_helper_acquire(lpc_helper *h, lpc_slot *slot)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (h->state != CAPTURING)
        return lpc__set_error(h, LPC_E_STATE, "no frames while paused (SPEC §12.4): resume first");
    uint32_t count = h->welcome.slot_count, found = UINT32_MAX;
    for (uint32_t i = 0; i < count && found == UINT32_MAX; i++)
        if (h->slots[i] == SLOT_ACQUIRED)
            found = i; /* acquired but never submitted: hand it out again */
    for (uint32_t i = 0; i < count && found == UINT32_MAX; i++)
        if (h->slots[(h->next_slot + i) % count] == SLOT_FREE)
            found = (h->next_slot + i) % count;
    if (found == UINT32_MAX) {
        h->frames_dropped++;
        publish_counters(h);
        return lpc__set_error(h, LPC_E_NO_SLOT, "all %" PRIu32 " slots are with the pusher: frame dropped", count);
    }
    h->slots[found] = SLOT_ACQUIRED;
    memset(slot, 0, sizeof *slot);
    slot->index = found;
    slot->bytes = h->welcome.slot_bytes;
    slot->data = h->ring + h->welcome.first_slot_offset + (uint64_t)found * h->welcome.slot_bytes;
    uint32_t w, hh;
    target_size(h, &w, &hh);
    if (lpc_frame_layout(&slot->frame, h->options.format, w, hh, slot->bytes) != LPC_OK)
        return lpc__set_error(h, LPC_E_INVALID, "format %" PRIu32 " at %" PRIu32 "x%" PRIu32 " does not fit a slot of %"
                         PRIu64 " bytes", h->options.format, w, hh, slot->bytes);
    slot->frame.slot = found;
    slot->frame.pts_ns = lpc_now_ns();
    slot->frame.sequence = h->sequence + 1;
    return LPC_OK;
}

int lpc_helper_layout(lpc_helper *h, lpc_slot *slot, uint32_t format, uint32_t width, uint32_t height)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (slot == NULL || slot->index >= h->welcome.slot_count || h->slots[slot->index] != SLOT_ACQUIRED)
        return lpc__set_error(h, LPC_E_INVALID, "the slot was not acquired with lpc_helper_acquire() (or was sent)");
    char why[200];
    if (lpc_frame_layout_problem(why, sizeof why, format, width, height, slot->bytes) != NULL)
        return lpc__set_error(h, LPC_E_INVALID, "cannot lay out the frame: %s", why);
    if (format > 31 || !(h->welcome.pixel_formats & LPC_FORMAT_BIT(format)))
        return lpc__set_error(h, LPC_E_INVALID, "cannot lay out the frame: format %" PRIu32 " is not in WELCOME's "
                              "pixel_formats 0x%" PRIx32, format, h->welcome.pixel_formats);
    if (width > h->welcome.max_width || height > h->welcome.max_height)
        return lpc__set_error(h, LPC_E_INVALID, "cannot lay out the frame: %" PRIu32 "x%" PRIu32 " is larger than "
                              "WELCOME's maximum %" PRIu32 "x%" PRIu32 ": scale or crop to fit", width, height,
                              h->welcome.max_width, h->welcome.max_height);
    return lpc_frame_layout(&slot->frame, format, width, height, slot->bytes);
}

int lpc_helper_submit(lpc_helper *h, const lpc_slot *slot)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (h->state != CAPTURING)
        return lpc__set_error(h, LPC_E_STATE, "no FRAME while paused (SPEC §12.4): resume first");
    if (slot == NULL || slot->index >= h->welcome.slot_count || h->slots[slot->index] != SLOT_ACQUIRED)
        return lpc__set_error(h, LPC_E_INVALID, "the slot was not acquired with lpc_helper_acquire() (or was sent)");
    lpc_frame f = slot->frame;
    lpc_fault fault;
    if (!lpc_wire_check_frame(&f, &h->welcome, &fault))
        return lpc__set_error(h, LPC_E_INVALID, "this helper's frame breaks a rule (%s): %s", lpc_error_name(fault.code),
                         fault.text);
    f.slot = slot->index;
    f.sequence = h->sequence + 1;
    if (f.pts_ns == 0)
        f.pts_ns = lpc_now_ns();
    if (f.pts_ns < h->last_frame_pts_ns) /* the pusher would end the session with SEQUENCE (SPEC §5.3) */
        return lpc__set_error(h, LPC_E_INVALID, "this helper's frame breaks a rule (SEQUENCE): FRAME.pts_ns %" PRIu64
                              " is before the previous frame's %" PRIu64 "; nothing was sent (pts_ns never goes back: "
                              "stamp frames with lpc_now_ns() at capture)", f.pts_ns, h->last_frame_pts_ns);
    if (f.format != h->last_format || f.width != h->last_width || f.height != h->last_height)
        f.flags |= LPC_FRAME_FORMAT_CHANGED; /* also on the first frame (SPEC §5.3) */
    rc = lpc__send_message(h, LPC_FRAME, &f, sizeof f);
    if (rc < 0)
        return rc; /* nothing was passed: the session is over (SPEC §7.2) */
    h->slots[slot->index] = SLOT_BORROWED;
    h->borrowed[slot->index] = true;
    h->slot_sequence[slot->index] = f.sequence;
    h->next_slot = (slot->index + 1) % h->welcome.slot_count;
    h->sequence = f.sequence;
    h->last_frame_pts_ns = f.pts_ns;
    h->frames_sent++;
    h->last_format = f.format;
    h->last_width = f.width;
    h->last_height = f.height;
    publish_counters(h);
    return LPC_OK;
}

int lpc_helper_submit_unchanged(lpc_helper *h, uint64_t pts_ns)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (h->state != CAPTURING)
        return lpc__set_error(h, LPC_E_STATE, "no FRAME while paused (SPEC §12.4): resume first");
    if (!(h->welcome.capabilities & LPC_CAP_DAMAGE))
        return lpc__set_error(h, LPC_E_STATE, "UNCHANGED frames need LPC_CAP_DAMAGE, which WELCOME did not grant");
    lpc_frame f = {.slot = LPC_NO_SLOT, .sequence = h->sequence + 1, .pts_ns = pts_ns ? pts_ns : lpc_now_ns(),
                   .flags = LPC_FRAME_UNCHANGED};
    if (f.pts_ns < h->last_frame_pts_ns)
        return lpc__set_error(h, LPC_E_INVALID, "this helper's frame breaks a rule (SEQUENCE): FRAME.pts_ns %" PRIu64
                              " is before the previous frame's %" PRIu64 "; nothing was sent", f.pts_ns,
                              h->last_frame_pts_ns);
    rc = lpc__send_message(h, LPC_FRAME, &f, sizeof f);
    if (rc == LPC_OK) {
        h->sequence = f.sequence;
        h->last_frame_pts_ns = f.pts_ns;
    }
    return rc;
}

/* ------------------------------------------------------------------ audio, pause, finish */

int lpc_helper_send_audio(lpc_helper *h, uint32_t format, uint32_t rate_hz, uint16_t channels, uint32_t frame_count,
                          uint64_t pts_ns, const void *pcm)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (!(h->welcome.capabilities & LPC_CAP_AUDIO) || format > 31 ||
        !(h->options.audio_formats & LPC_AUDIO_BIT(format)) || (format != LPC_AUDIO_S16LE && format != LPC_AUDIO_F32LE))
        return lpc__set_error(h, LPC_E_STATE, "AUDIO format %" PRIu32 " was not granted (LPC_CAP_AUDIO and "
                         "audio_formats)", format);
    uint64_t bytes = (uint64_t)frame_count * channels * (format == LPC_AUDIO_S16LE ? 2 : 4);
    if (rate_hz < LPC_AUDIO_MIN_RATE_HZ || rate_hz > LPC_AUDIO_MAX_RATE_HZ || channels < 1 ||
        channels > LPC_AUDIO_MAX_CHANNELS || frame_count < 1 ||
        bytes > LPC_MESSAGE_MAX_BYTES - sizeof(lpc_header) - sizeof(lpc_audio) || pcm == NULL)
        return lpc__set_error(h, LPC_E_INVALID, "AUDIO of %" PRIu32 " Hz, %u channels, %" PRIu32 " frames (%" PRIu64
                         " bytes) is outside 8000..192000 Hz, 1..8 channels, 65496 bytes", rate_hz, channels,
                         frame_count, bytes);
    lpc_audio a = {.format = format, .rate_hz = rate_hz, .channels = channels, .frame_count = frame_count,
                   .pts_ns = pts_ns ? pts_ns : lpc_now_ns()};
    if (a.pts_ns < h->last_audio_pts_ns) /* the pusher would end the session with AUDIO (SPEC §5.4) */
        return lpc__set_error(h, LPC_E_INVALID, "this helper's AUDIO breaks a rule (AUDIO): AUDIO.pts_ns %" PRIu64
                              " is before the previous AUDIO's %" PRIu64 "; nothing was sent (pts_ns never goes back: "
                              "stamp each block with its first sample's capture time)", a.pts_ns, h->last_audio_pts_ns);
    uint8_t *payload = h->out + sizeof(lpc_header);
    memmove(payload + sizeof a, pcm, (size_t)bytes);
    memcpy(payload, &a, sizeof a);
    lpc_header header = {.magic = LPC_MESSAGE_MAGIC, .type = LPC_AUDIO, .payload_bytes = (uint32_t)(sizeof a + bytes)};
    memcpy(h->out, &header, sizeof header);
    rc = send_datagram(h, sizeof header + sizeof a + (size_t)bytes);
    if (rc == LPC_OK)
        h->last_audio_pts_ns = a.pts_ns;
    return rc < 0 ? lpc__end_session(h, rc) : rc;
}

int lpc_helper_pause(lpc_helper *h, uint32_t reason)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (h->state != CAPTURING)
        return lpc__set_error(h, LPC_E_STATE, "PAUSE only while capturing");
    lpc_pause p = {.reason = reason};
    rc = lpc__send_message(h, LPC_PAUSE, &p, sizeof p);
    if (rc == LPC_OK)
        h->state = PAUSED;
    return rc;
}

int lpc_helper_resume(lpc_helper *h)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (h->state != PAUSED)
        return lpc__set_error(h, LPC_E_STATE, "RESUME only while paused");
    rc = lpc__send_message(h, LPC_RESUME, NULL, 0);
    if (rc == LPC_OK) {
        h->state = CAPTURING;
        h->last_format = 0; /* the first frame after RESUME is a full one, marked FORMAT_CHANGED */
    }
    return rc;
}

int lpc_helper_finish(lpc_helper *h, uint32_t code, const char *text)
{
    int rc = check_open(h);
    if (rc < 0)
        return rc;
    if (h->state == AWAITING_WELCOME) {
        lpc__linger_and_close(h, false); /* no session yet: nothing to finish (SPEC §12.8) */
        return lpc__end_session(h, lpc__set_error(h, LPC_FINISHED, "closed before WELCOME"));
    }
    /* SPEC §12.9: a planned end exits 0; a lost source, a restart or an error does not. */
    h->planned_end = code == LPC_FINISH_USER || code == LPC_FINISH_DONE || code == LPC_FINISH_SOURCE_CLOSED;
    rc = lpc__send_finish(h, code, text == NULL ? "" : text, true);
    lpc__set_error(h, LPC_FINISHED, "finished (reason %" PRIu32 ": %s)", code, text == NULL ? "" : text);
    lpc__end_session(h, LPC_FINISHED);
    return rc == LPC_OK ? LPC_OK : rc;
}
