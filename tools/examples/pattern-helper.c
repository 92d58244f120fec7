/*
 * pattern-helper.c: the reference capture helper, on liblivepush-capture.
 *
 * It draws a test pattern that a pusher (or a test) can check pixel by pixel and that shows
 * torn frames at once, and optionally sends a 440 Hz sine as desktop audio. Everything about
 * the protocol (connecting, HELLO, WELCOME, the ring, slots, heartbeats, CONFIG, STOP, errors)
 * is the library's (protocol/livepush_capture_helper.h); this file is the capture loop around it,
 * written with the caller's own poll loop (lpc_helper_fd, lpc_helper_timeout_ms,
 * lpc_helper_dispatch) because audio and video run on two clocks.
 *
 * Build against the installed library:
 *
 *     cc -std=c11 -O2 tools/examples/pattern-helper.c $(pkg-config --cflags --libs livepush-capture)
 *
 * or with the library's sources, from the repository: cc -std=c11 -O2 -I protocol
 * tools/examples/pattern-helper.c protocol/lib/lpc_*.c -o pattern-helper
 *
 * Usage:
 *
 *     pattern-helper [--group NAME] [--size WxH] [--fps N] [--frames N]
 *                    [--format bgrx|nv12|i420] [--audio] [--connect-timeout-ms N]
 *
 * The pattern, for the frame whose FRAME.sequence is n (a uint64) and the pixel (x, y):
 *
 *     BGRX         B = (x + y + n) & 0xFF, G = (n >> 8) & 0xFF, R = n & 0xFF, X = 0xFF
 *     NV12, I420   Y = (x + y + n) & 0xFF for every luma sample;
 *                  U = n & 0xFF and V = (n >> 8) & 0xFF for every chroma sample
 *
 * Layout: the library's (lpc_frame_layout): strides and plane offsets aligned to 64 bytes when
 * that fits the slot, else packed; whoever checks the pixels uses FRAME.stride and plane_offset.
 * A dropped frame (no free slot) uses up no sequence number; frames are cropped to
 * min(--size, WELCOME.max, CONFIG.max).
 *
 * Exit status (SPEC §12.7): 0 finished normally (--frames reached, STOP, SIGINT or SIGTERM),
 * 1 runtime error (no pusher, rejected, protocol violation, pusher gone or hung), 2 bad
 * command line.
 */
#define _POSIX_C_SOURCE 200809L

#include <livepush_capture_helper.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "pattern-helper"
#define NS_PER_MS UINT64_C(1000000)
#define MAX_DIMENSION 16384u

#define AUDIO_RATE 48000u
#define AUDIO_CHANNELS 2u
#define AUDIO_BLOCK_FRAMES 960u /* 20 ms at 48000 Hz */
#define AUDIO_BLOCK_NS (20 * NS_PER_MS)
#define SINE_HZ 440u
#define SINE_PERIOD_FRAMES 1200u /* 48000 / gcd(48000, 440): 11 whole cycles */

struct pattern {
    const char *group;
    uint32_t width, height, fps, format, connect_timeout_ms;
    uint64_t frame_limit; /* 0: until a signal or STOP */
    bool audio_wanted, audio;
    uint8_t row[MAX_DIMENSION * 4 + 1024]; /* one row of the pattern, 256 entries longer than needed */
    int16_t sine[SINE_PERIOD_FRAMES * AUDIO_CHANNELS];
    int16_t pcm[AUDIO_BLOCK_FRAMES * AUDIO_CHANNELS];
    uint64_t audio_frames, frames_sent;
};

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) { g_signal = sig; }

/* ------------------------------------------------------------------ drawing */

static void draw(struct pattern *p, const lpc_slot *slot)
{
    const lpc_frame *f = &slot->frame;
    uint64_t n = f->sequence;
    uint8_t nlo = (uint8_t)(n & 0xFF), nhi = (uint8_t)((n >> 8) & 0xFF);
    if (f->format == LPC_FORMAT_BGRX) {
        for (uint32_t k = 0; k < f->width + 256; k++) {
            uint8_t *px = p->row + (size_t)k * 4;
            px[0] = (uint8_t)k, px[1] = nhi, px[2] = nlo, px[3] = 0xFF;
        }
        for (uint32_t y = 0; y < f->height; y++)
            memcpy(slot->data + f->plane_offset[0] + (size_t)y * f->stride[0], p->row + ((y + n) & 0xFF) * 4,
                   (size_t)f->width * 4);
        return;
    }
    for (uint32_t k = 0; k < f->width + 256; k++)
        p->row[k] = (uint8_t)k;
    for (uint32_t y = 0; y < f->height; y++)
        memcpy(slot->data + f->plane_offset[0] + (size_t)y * f->stride[0], p->row + ((y + n) & 0xFF), f->width);
    uint32_t cw = (f->width + 1) / 2, ch = (f->height + 1) / 2;
    for (uint32_t y = 0; y < ch; y++) {
        if (f->format == LPC_FORMAT_NV12) {
            uint8_t *uv = slot->data + f->plane_offset[1] + (size_t)y * f->stride[1];
            for (uint32_t x = 0; x < cw; x++)
                uv[2 * x] = nlo, uv[2 * x + 1] = nhi;
        } else {
            memset(slot->data + f->plane_offset[1] + (size_t)y * f->stride[1], nlo, cw);
            memset(slot->data + f->plane_offset[2] + (size_t)y * f->stride[2], nhi, cw);
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

static void make_sine(struct pattern *p)
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
            p->sine[i * AUDIO_CHANNELS + c] = s;
    }
}

static int send_audio(struct pattern *p, lpc_helper *h, uint64_t pts_ns)
{
    for (uint32_t i = 0; i < AUDIO_BLOCK_FRAMES; i++) {
        uint32_t src = (uint32_t)((p->audio_frames + i) % SINE_PERIOD_FRAMES);
        for (uint32_t c = 0; c < AUDIO_CHANNELS; c++)
            p->pcm[i * AUDIO_CHANNELS + c] = p->sine[src * AUDIO_CHANNELS + c];
    }
    p->audio_frames += AUDIO_BLOCK_FRAMES;
    return lpc_helper_send_audio(h, LPC_AUDIO_S16LE, AUDIO_RATE, AUDIO_CHANNELS, AUDIO_BLOCK_FRAMES, pts_ns, p->pcm);
}

/* ------------------------------------------------------------------ the capture loop */

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Runs until the session ends; returns the process's exit status. */
static int run(struct pattern *p, lpc_helper *h)
{
    uint64_t t0 = lpc_now_ns(), k = 0; /* frame k is due at t0 + k * 1e9 / fps */
    uint32_t fps = p->fps != 0 ? p->fps : lpc_helper_config(h)->fps;
    uint64_t next_frame = t0, audio_t0 = t0, audio_blocks = 0;
    uint64_t next_audio = p->audio ? audio_t0 + AUDIO_BLOCK_NS : UINT64_MAX;
    for (;;) {
        if (g_signal != 0) {
            lpc_helper_finish(h, LPC_FINISH_USER, g_signal == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM");
            return 0;
        }
        int rc = lpc_helper_dispatch(h); /* RELEASE, CONFIG, STOP, heartbeats, the pusher's timeout */
        if (rc < 0)
            break;
        if ((rc & LPC_EVENT_CONFIG) && p->fps == 0 && lpc_helper_config(h)->fps != fps) {
            fps = lpc_helper_config(h)->fps; /* the frame already scheduled keeps its time */
            t0 = next_frame;
            k = 0;
        }
        uint64_t now = lpc_now_ns();
        if (now >= next_frame) {
            lpc_slot slot;
            rc = lpc_helper_acquire(h, &slot);
            if (rc == LPC_OK) {
                draw(p, &slot);
                rc = lpc_helper_submit(h, &slot);
                if (rc < 0)
                    break;
                if (p->frame_limit != 0 && ++p->frames_sent >= p->frame_limit) {
                    lpc_helper_finish(h, LPC_FINISH_DONE, "sent the frames asked for");
                    return 0;
                }
            } else if (rc != LPC_E_NO_SLOT) {
                break;
            }
            k++;
            next_frame = t0 + k * 1000000000u / fps;
            if (next_frame <= (now = lpc_now_ns())) { /* more than a period late: skip missed deadlines */
                k = (now - t0) * fps / 1000000000u + 1;
                next_frame = t0 + k * 1000000000u / fps;
            }
        }
        if (now >= next_audio) {
            if (send_audio(p, h, audio_t0 + audio_blocks * AUDIO_BLOCK_NS) < 0)
                break;
            audio_blocks++;
            next_audio = audio_t0 + (audio_blocks + 1) * AUDIO_BLOCK_NS;
            if (next_audio + 10 * AUDIO_BLOCK_NS <= now) { /* stalled over 200 ms: restart the audio clock */
                audio_t0 = now;
                audio_blocks = 0;
                next_audio = audio_t0 + AUDIO_BLOCK_NS;
            }
        }
        uint64_t deadline = min_u64(next_frame, next_audio);
        now = lpc_now_ns();
        int wait_ms = deadline > now ? (int)min_u64((deadline - now) / NS_PER_MS, 1000) : 0;
        if (wait_ms > lpc_helper_timeout_ms(h))
            wait_ms = lpc_helper_timeout_ms(h);
        struct pollfd pfd = {.fd = lpc_helper_fd(h), .events = POLLIN};
        if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR) {
            fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
            return 1;
        }
    }
    int status = lpc_helper_exit_status(h);
    fprintf(stderr, PROG ": %s\n", lpc_helper_error(h));
    return status;
}

/* ------------------------------------------------------------------ command line */

static void usage(FILE *to)
{
    fputs("usage: pattern-helper [--group NAME] [--size WxH] [--fps N] [--frames N]\n"
          "                      [--format bgrx|nv12|i420] [--audio] [--connect-timeout-ms N]\n"
          "\n"
          "A Capture Link helper that sends a test pattern to the LivePush pusher serving group NAME.\n"
          "  --group NAME              capture group (default: $LIVEPUSH_CAPTURE_GROUP, else default)\n"
          "  --size WxH                frame size (default 640x360)\n"
          "  --fps N                   frame rate 1..240 (default: the rate the pusher asks for)\n"
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

static void parse_args(struct pattern *p, int argc, char **argv)
{
    enum { OPT_GROUP = 256, OPT_SIZE, OPT_FPS, OPT_FRAMES, OPT_FORMAT, OPT_AUDIO, OPT_TIMEOUT, OPT_HELP };
    static const struct option options[] = {
        {"group", required_argument, NULL, OPT_GROUP},   {"size", required_argument, NULL, OPT_SIZE},
        {"fps", required_argument, NULL, OPT_FPS},       {"frames", required_argument, NULL, OPT_FRAMES},
        {"format", required_argument, NULL, OPT_FORMAT}, {"audio", no_argument, NULL, OPT_AUDIO},
        {"connect-timeout-ms", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, OPT_HELP},           {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int c;
    uint64_t v, w, hh;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case OPT_GROUP:
            p->group = optarg; /* the library checks the name */
            break;
        case OPT_SIZE: {
            char *x = strchr(optarg, 'x');
            if (x == NULL)
                bad_usage("--size '%s' is not WxH (for example 1920x1080)", optarg);
            *x = '\0';
            bool ok = parse_u64(optarg, MAX_DIMENSION, &w) && parse_u64(x + 1, MAX_DIMENSION, &hh) && w > 0 && hh > 0;
            *x = 'x';
            if (!ok)
                bad_usage("--size '%s' is not WxH with each side 1..%u", optarg, MAX_DIMENSION);
            p->width = (uint32_t)w;
            p->height = (uint32_t)hh;
            break;
        }
        case OPT_FPS:
            if (!parse_u64(optarg, 240, &v) || v < 1)
                bad_usage("--fps '%s' is not a whole number 1..240", optarg);
            p->fps = (uint32_t)v;
            break;
        case OPT_FRAMES:
            if (!parse_u64(optarg, UINT64_MAX, &v) || v < 1)
                bad_usage("--frames '%s' is not a whole number >= 1", optarg);
            p->frame_limit = v;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "bgrx") == 0) p->format = LPC_FORMAT_BGRX;
            else if (strcmp(optarg, "nv12") == 0) p->format = LPC_FORMAT_NV12;
            else if (strcmp(optarg, "i420") == 0) p->format = LPC_FORMAT_I420;
            else bad_usage("--format '%s' is not bgrx, nv12 or i420", optarg);
            break;
        case OPT_AUDIO:
            p->audio_wanted = true;
            break;
        case OPT_TIMEOUT:
            if (!parse_u64(optarg, 24ull * 3600 * 1000, &v))
                bad_usage("--connect-timeout-ms '%s' is not a whole number of milliseconds", optarg);
            p->connect_timeout_ms = v == 0 ? 1 : (uint32_t)v;
            break;
        case OPT_HELP:
        case 'h':
            usage(stdout);
            exit(0);
        default:
            bad_usage("unknown option or missing value: %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        bad_usage("unexpected argument '%s'", argv[optind]);
}

int main(int argc, char **argv)
{
    static struct pattern pattern = {.width = 640, .height = 360, .format = LPC_FORMAT_BGRX};
    struct pattern *p = &pattern;
    parse_args(p, argc, argv);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    lpc_helper_options options = LPC_HELPER_OPTIONS_INIT;
    options.helper_name = "pattern-helper-c";
    options.helper_version = "2.0.0";
    options.pixel_formats = LPC_FORMAT_BIT(LPC_FORMAT_BGRX) | LPC_FORMAT_BIT(LPC_FORMAT_NV12) |
                            LPC_FORMAT_BIT(LPC_FORMAT_I420);
    options.format = p->format;
    options.max_width = p->width;
    options.max_height = p->height;
    options.capabilities = p->audio_wanted ? LPC_CAP_AUDIO : 0;
    options.audio_formats = LPC_AUDIO_BIT(LPC_AUDIO_S16LE);
    options.connect_retry_ms = p->connect_timeout_ms;
    options.fps = p->fps;
    options.start_info = "{\"source\":\"pattern\",\"helper\":\"pattern-helper-c\"}";
    lpc_helper *h;
    int status = 1;
    if (lpc_helper_connect(&h, p->group, &options) < 0) {
        fprintf(stderr, PROG ": %s\n", lpc_helper_error(h));
    } else {
        p->audio = p->audio_wanted && (lpc_helper_welcome(h)->capabilities & LPC_CAP_AUDIO);
        if (p->audio_wanted && !p->audio)
            fprintf(stderr, PROG ": note: the pusher did not accept audio; sending video only\n");
        if (p->audio)
            make_sine(p);
        status = run(p, h);
    }
    lpc_helper_close(h);
    return status;
}
