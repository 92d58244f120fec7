/* minimal-helper.c: a whole LivePush capture helper on liblivepush-capture: colour bars at the
 * pusher's frame rate (30 fps by default), until the pusher says STOP or SIGINT/SIGTERM.
 *   cc -std=c11 minimal-helper.c $(pkg-config --cflags --libs livepush-capture) -o minimal-helper
 *   ./minimal-helper [--group GROUP]      (default: $LIVEPUSH_CAPTURE_GROUP, else "default") */
#include <livepush_capture_helper.h>
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static const uint32_t bars[8] = { /* BGRx little-endian words: white, yellow, cyan, green, ... */
    0xFFFFFFFF, 0xFFFFFF00, 0xFF00FFFF, 0xFF00FF00, 0xFFFF00FF, 0xFFFF0000, 0xFF0000FF, 0xFF000000,
};

int main(int argc, char **argv)
{
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    lpc_helper_options options = LPC_HELPER_OPTIONS_INIT;
    options.helper_name = "minimal-helper";
    options.max_width = 640;
    options.max_height = 360;
    options.start_info = "{\"source\":\"test-pattern\"}";
    lpc_helper *h;
    if (lpc_helper_connect(&h, lpc_group_from_args(argc, argv), &options) < 0) { /* --group NAME (SPEC §3.6) */
        fprintf(stderr, "minimal-helper: %s\n", lpc_helper_error(h));
        lpc_helper_close(h);
        return 1;
    }
    while (!stop_signal) {
        int rc = lpc_helper_wait_frame(h); /* paces at CONFIG's fps; answers STOP, RELEASE... */
        if (rc < 0)
            break;
        lpc_slot slot;
        if (lpc_helper_acquire(h, &slot) < 0)
            continue; /* no free slot: the frame is dropped and counted */
        const lpc_frame *f = &slot.frame;
        for (uint32_t y = 0; y < f->height; y++) {
            uint32_t *row = (uint32_t *)(void *)(slot.data + f->plane_offset[0] + (size_t)y * f->stride[0]);
            for (uint32_t x = 0; x < f->width; x++)
                row[x] = bars[x * 8 / f->width];
        }
        if (lpc_helper_submit(h, &slot) < 0)
            break;
    }
    if (stop_signal)
        lpc_helper_finish(h, LPC_FINISH_USER, "stopped by a signal");
    int status = lpc_helper_exit_status(h);
    if (status != 0)
        fprintf(stderr, "minimal-helper: %s\n", lpc_helper_error(h));
    lpc_helper_close(h);
    return status;
}
