/*
 * lpc_connect.c: liblivepush-capture's start of a session: the group and the socket path
 * (SPEC.md §3.1, §3.2), connecting with retries and checking the pusher's identity (§3.4),
 * HELLO, WELCOME and the ring (§5.9, §6.4), START (§5.2); and the end: close and the getters.
 */
#define _GNU_SOURCE

#include "lpc_session.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool valid_group(const char *group)
{
    size_t len = strlen(group);
    return len >= 1 && len <= LPC_GROUP_NAME_MAX &&
           strspn(group, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

static int socket_path(lpc_helper *h)
{
    if (h->options.socket_path != NULL) {
        if (strlen(h->options.socket_path) >= sizeof h->path)
            return lpc__set_error(h, LPC_E_INVALID, "socket path %s is longer than %zu bytes",
                                  h->options.socket_path, sizeof h->path - 1);
        strcpy(h->path, h->options.socket_path);
        return LPC_OK;
    }
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    bool use_xdg = xdg != NULL && xdg[0] == '/'; /* empty or relative counts as unset (SPEC §3.2) */
    int n = use_xdg ? snprintf(h->path, sizeof h->path, "%s/livepush/%s.sock", xdg, h->group)
                    : snprintf(h->path, sizeof h->path, "/tmp/livepush-%u/%s.sock", (unsigned)getuid(), h->group);
    if (n < 0 || (size_t)n >= sizeof h->path)
        return lpc__set_error(h, LPC_E_INVALID, "the socket path for group '%s' under %s is longer than %zu bytes; "
                              "use a shorter XDG_RUNTIME_DIR or group name", h->group, use_xdg ? xdg : "/tmp",
                              sizeof h->path - 1);
    return LPC_OK;
}

/* SPEC §3.4 step 5 (SHOULD): the pusher and its socket directory belong to this user. */
static int check_pusher_identity(lpc_helper *h)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(h->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return lpc__set_error(h, LPC_E_SYSTEM, "SO_PEERCRED on %s: %s", h->path, strerror(errno));
    if (cred.uid != getuid())
        return lpc__set_error(h, LPC_E_CONNECT, "the process serving %s (pid %ld) runs as uid %lu, not as this "
                              "helper's uid %lu: run the helper as the pusher's user", h->path, (long)cred.pid,
                              (unsigned long)cred.uid, (unsigned long)getuid());
    if (h->options.socket_path != NULL)
        return LPC_OK; /* an explicit path (tests): its directory is the caller's business */
    char dir[sizeof h->path];
    memcpy(dir, h->path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    struct stat st;
    if (lstat(dir, &st) != 0)
        return lpc__set_error(h, LPC_E_SYSTEM, "cannot inspect the socket directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0)
        return lpc__set_error(h, LPC_E_CONNECT, "the socket directory %s (owner uid %lu, mode %04o) is not a private "
                              "directory of uid %lu: remove it and restart the pusher", dir, (unsigned long)st.st_uid,
                              (unsigned)(st.st_mode & 07777), (unsigned long)getuid());
    return LPC_OK;
}

/* SPEC §3.4: retry ENOENT, ECONNREFUSED, EAGAIN after 100, 200, 400, 800, 1000, 1000... ms until
 * the waits add up to the retry limit. */
static int connect_with_retry(lpc_helper *h)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, h->path, strlen(h->path) + 1);
    uint64_t limit_ms = h->options.connect_retry_ms != 0 ? h->options.connect_retry_ms : LPC_CONNECT_RETRY_MS_DEFAULT;
    uint64_t waited_ms = 0, delay_ms = 100;
    unsigned tries = 0;
    for (;;) {
        h->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (h->fd < 0)
            return lpc__set_error(h, LPC_E_SYSTEM, "socket(AF_UNIX, SOCK_SEQPACKET): %s", strerror(errno));
        tries++;
        if (connect(h->fd, (struct sockaddr *)&addr, sizeof addr) == 0)
            return check_pusher_identity(h);
        int err = errno;
        close(h->fd);
        h->fd = -1;
        if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN && err != EINTR)
            return lpc__set_error(h, LPC_E_CONNECT, "cannot connect to %s: %s%s", h->path, strerror(err),
                                  err == EACCES ? "; run this helper as the pusher's user" : "");
        if (waited_ms >= limit_ms)
            return lpc__set_error(h, LPC_E_CONNECT, "no pusher for group '%s' at %s after %" PRIu64 " ms (%u tries): "
                                  "%s; start the pusher with this capture group first", h->group, h->path, waited_ms,
                                  tries, strerror(err));
        uint64_t wait_ms = delay_ms < limit_ms - waited_ms ? delay_ms : limit_ms - waited_ms;
        struct timespec ts = {.tv_sec = (time_t)(wait_ms / 1000), .tv_nsec = (long)(wait_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        waited_ms += wait_ms;
        delay_ms = delay_ms * 2 > 1000 ? 1000 : delay_ms * 2;
    }
}

static int send_hello(lpc_helper *h)
{
    lpc_hello *hello = &h->hello;
    memset(hello, 0, sizeof *hello);
    hello->version_major = LPC_VERSION_MAJOR;
    hello->version_minor = LPC_VERSION_MINOR;
    hello->pid = (uint32_t)getpid();
    hello->capabilities = h->options.capabilities;
    hello->pixel_formats = h->options.pixel_formats;
    hello->audio_formats = (h->options.capabilities & LPC_CAP_AUDIO) ? h->options.audio_formats : 0;
    hello->max_width = h->options.max_width;
    hello->max_height = h->options.max_height;
    const char *name = h->options.helper_name != NULL ? h->options.helper_name : "";
    const char *version = h->options.helper_version != NULL ? h->options.helper_version : "";
    if (strlen(name) >= LPC_NAME_BYTES || strlen(version) >= LPC_VERSION_BYTES ||
        !lpc_wire_utf8((const uint8_t *)name, strlen(name)) || !lpc_wire_utf8((const uint8_t *)version, strlen(version)))
        return lpc__set_error(h, LPC_E_INVALID, "helper_name must be UTF-8 of at most %u bytes and helper_version at "
                              "most %u", LPC_NAME_BYTES - 1, LPC_VERSION_BYTES - 1);
    memcpy(hello->helper_name, name, strlen(name));
    memcpy(hello->helper_version, version, strlen(version));
    int rc = lpc__send_only(h, LPC_HELLO, hello, sizeof *hello);
    /* A pusher may REJECT before reading HELLO (SPEC §3.5): EPIPE here, but the REJECT is queued
     * and await_welcome reads it (or the end of file). */
    return rc == LPC_E_CLOSED ? LPC_OK : rc;
}

static int map_ring(lpc_helper *h, int ring_fd)
{
    const lpc_welcome *w = &h->welcome;
    lpc_fault f;
    struct stat st;
    int seals = fcntl(ring_fd, F_GET_SEALS);
    if (fstat(ring_fd, &st) != 0)
        lpc_fault_set(&f, 0, "fstat of the ring memfd failed: %s", strerror(errno));
    else if ((uint64_t)st.st_size != w->ring_bytes)
        lpc_fault_set(&f, LPC_ERR_GEOMETRY, "the ring memfd is %jd bytes but WELCOME.ring_bytes is %" PRIu64,
                      (intmax_t)st.st_size, w->ring_bytes);
    else if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
        lpc_fault_set(&f, 0, "the ring memfd's seals 0x%x lack F_SEAL_SHRINK | F_SEAL_GROW", seals < 0 ? 0 : seals);
    else if (w->ring_bytes > SIZE_MAX)
        lpc_fault_set(&f, 0, "WELCOME.ring_bytes %" PRIu64 " does not fit this address space", w->ring_bytes);
    else {
        void *p = mmap(NULL, (size_t)w->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
        int map_errno = errno;
        close(ring_fd); /* the mapping keeps the memory */
        if (p == MAP_FAILED) {
            lpc__set_error(h, LPC_E_SYSTEM, "mmap of the %" PRIu64 "-byte ring: %s", w->ring_bytes,
                           strerror(map_errno));
            (void)lpc__send_finish(h, LPC_FINISH_ERROR, h->error, true);
            return lpc__end_session(h, LPC_E_SYSTEM);
        }
        h->ring = p;
        h->ring_bytes = (size_t)w->ring_bytes;
        return lpc_wire_ring_header(h->ring, w, &f) ? LPC_OK : lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
    }
    close(ring_fd);
    return lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
}

/* Waits for WELCOME (or REJECT, ERROR) for LPC_PEER_TIMEOUT_MS (SPEC §11), checks it, maps. */
static int await_welcome(lpc_helper *h)
{
    uint64_t give_up = lpc_now_ns() + (uint64_t)LPC_PEER_TIMEOUT_MS * NS_PER_MS;
    for (;;) {
        lpc_message m;
        int ring_fd;
        int rc = lpc__receive(h, &m, &ring_fd);
        if (rc < 0)
            return rc;
        if (rc == LPC_NOTHING) {
            uint64_t now = lpc_now_ns();
            if (now >= give_up) {
                lpc__set_error(h, LPC_E_TIMEOUT, "the pusher at %s answered HELLO with neither WELCOME nor REJECT "
                               "within %u ms: it is hung or not a LivePush pusher", h->path, LPC_PEER_TIMEOUT_MS);
                return lpc__end_session(h, LPC_E_TIMEOUT);
            }
            struct pollfd p = {.fd = h->fd, .events = POLLIN};
            (void)poll(&p, 1, (int)((give_up - now + NS_PER_MS - 1) / NS_PER_MS));
            continue;
        }
        if (rc != LPC_RECEIVED)
            continue;
        lpc_fault f;
        switch (m.type) {
        case LPC_WELCOME:
            if (!lpc_wire_welcome(&m, &h->hello, &h->welcome, &f)) {
                close(ring_fd);
                return lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
            }
            h->state = CAPTURING; /* READY; START follows at once */
            return map_ring(h, ring_fd);
        case LPC_REJECT:
            return lpc__peer_message(h, &m, LPC_E_REJECTED, "the pusher rejected this helper:");
        case LPC_ERROR:
            return lpc__peer_message(h, &m, LPC_E_PUSHER_ERROR, "the pusher reported error");
        default:
            lpc_fault_set(&f, LPC_ERR_STATE, "message type 0x%04x before WELCOME", m.type);
            return lpc__pusher_fault(h, LPC_E_PROTOCOL, &f);
        }
    }
}

static int send_start(lpc_helper *h)
{
    const char *info = h->options.start_info != NULL ? h->options.start_info : "{}";
    size_t len = strlen(info);
    if (len < 2 || len > LPC_START_INFO_MAX_BYTES || info[0] != '{' || info[len - 1] != '}' ||
        !lpc_wire_utf8((const uint8_t *)info, len))
        return lpc__set_error(h, LPC_E_INVALID, "start_info must be a JSON object of 2..4096 bytes of UTF-8");
    uint8_t payload[sizeof(lpc_start) + LPC_START_INFO_MAX_BYTES];
    lpc_start s = {.info_bytes = (uint32_t)len};
    memcpy(payload, &s, sizeof s);
    memcpy(payload + sizeof s, info, len);
    return lpc__send_message(h, LPC_START, payload, sizeof s + len);
}

const char *lpc_group_from_args(int argc, char *const argv[])
{
    const char *group = NULL;
    for (int i = 1; argv != NULL && i < argc && argv[i] != NULL; i++) {
        if (strcmp(argv[i], "--group") == 0 && i + 1 < argc && argv[i + 1] != NULL)
            group = argv[++i];
        else if (strncmp(argv[i], "--group=", 8) == 0)
            group = argv[i] + 8;
    }
    return group;
}

int lpc_helper_connect(lpc_helper **out, const char *group, const lpc_helper_options *options)
{
    lpc_helper *h = calloc(1, sizeof *h);
    *out = h;
    if (h == NULL)
        return LPC_E_SYSTEM;
    h->fd = -1;
    h->state = AWAITING_WELCOME;
    h->heartbeat_ns = (uint64_t)LPC_HEARTBEAT_INTERVAL_MS * NS_PER_MS;
    h->peer_timeout_ns = (uint64_t)LPC_PEER_TIMEOUT_MS * NS_PER_MS;
    lpc_helper_options defaults = LPC_HELPER_OPTIONS_INIT;
    h->options = options != NULL ? *options : defaults;
    if (group == NULL)
        group = getenv("LIVEPUSH_CAPTURE_GROUP"); /* the launch convention (SPEC §3.6) */
    if (group == NULL || group[0] == '\0')
        group = "default";
    int rc = LPC_OK;
    if (!valid_group(group))
        rc = lpc__set_error(h, LPC_E_INVALID, "group '%.80s' is not a group name: use 1 to 64 of A-Z a-z 0-9 . _ -",
                            group);
    else if (h->options.format > 31 || !(h->options.pixel_formats & LPC_FORMAT_BIT(h->options.format)) ||
             h->options.max_width < 1 || h->options.max_height < 1 || h->options.fps > 240)
        rc = lpc__set_error(h, LPC_E_INVALID, "options: format %" PRIu32 " must be in pixel_formats 0x%" PRIx32
                            " and max_width x max_height (%" PRIu32 "x%" PRIu32 ") at least 1x1, fps 0..240", h->options.format,
                            h->options.pixel_formats, h->options.max_width, h->options.max_height);
    if (rc == LPC_OK) {
        strcpy(h->group, group);
        rc = socket_path(h);
    }
    if (rc == LPC_OK)
        rc = connect_with_retry(h);
    if (rc == LPC_OK) {
        h->last_recv_ns = lpc_now_ns();
        rc = send_hello(h);
    }
    if (rc == LPC_OK)
        rc = await_welcome(h);
    if (rc == LPC_OK) {
        const lpc_welcome *w = &h->welcome;
        h->heartbeat_ns = (uint64_t)w->heartbeat_interval_ms * NS_PER_MS;
        h->peer_timeout_ns = (uint64_t)w->peer_timeout_ms * NS_PER_MS;
        h->config = (lpc_config){.fps = w->fps, .max_width = w->max_width, .max_height = w->max_height,
                                 .flags = (w->capabilities & LPC_CAP_CURSOR) ? LPC_CONFIG_CURSOR : 0};
        if (!(w->pixel_formats & LPC_FORMAT_BIT(h->options.format))) {
            lpc__set_error(h, LPC_E_REJECTED, "the pusher accepts formats 0x%" PRIx32 " but not format %" PRIu32,
                           w->pixel_formats, h->options.format);
            (void)lpc__send_finish(h, LPC_FINISH_ERROR, h->error, true);
            rc = lpc__end_session(h, LPC_E_REJECTED);
        } else {
            rc = send_start(h);
        }
    }
    if (rc < 0)
        lpc__end_session(h, rc);
    return rc;
}

void lpc_helper_close(lpc_helper *h)
{
    if (h == NULL)
        return;
    if (h->state != CLOSED && h->fd >= 0)
        (void)lpc_helper_finish(h, LPC_FINISH_USER, "closed");
    if (h->fd >= 0)
        close(h->fd);
    if (h->ring != NULL)
        munmap(h->ring, h->ring_bytes);
    free(h);
}

const lpc_welcome *lpc_helper_welcome(const lpc_helper *h) { return h != NULL && h->ring != NULL ? &h->welcome : NULL; }
const lpc_config *lpc_helper_config(const lpc_helper *h) { return h != NULL ? &h->config : NULL; }
uint64_t lpc_helper_frames_dropped(const lpc_helper *h) { return h != NULL ? h->frames_dropped : 0; }
const char *lpc_helper_error(const lpc_helper *h) { return h == NULL ? "out of memory" : h->error; }
uint32_t lpc_helper_peer_code(const lpc_helper *h) { return h != NULL ? h->peer_code : 0; }

int lpc_helper_exit_status(const lpc_helper *h)
{
    return h != NULL && h->state == CLOSED && h->planned_end ? 0 : 1;
}
