/*
 * library-checks.c: a helper on liblivepush-capture that streams like any other (a grey frame at
 * the pusher's rate, one block of silence in AUDIO) and, on the way, tries what the library must
 * refuse or get right (issue 29), writing one line per check to --report FILE:
 *
 *   frame-pts-backwards   submit with a pts_ns before the previous frame's: LPC_E_INVALID naming
 *                         FRAME.pts_ns, nothing sent (the pusher would answer ERROR SEQUENCE)
 *   audio-pts-backwards   the same for AUDIO (ERROR AUDIO)
 *   layout-unchanged      lpc_frame_layout with an unknown format, and with a size that does not
 *                         fit: LPC_E_INVALID, the frame byte for byte as it was, and
 *                         lpc_frame_layout_problem / lpc_helper_layout saying why
 *   group-from-args       lpc_group_from_args reads --group NAME and --group=NAME
 *
 * It asks for LPC_CAP_SCALE with a 640x360 source and reports each frame size it sends ("size
 * WxH"): with a WELCOME or CONFIG maximum of another shape, acquire must keep the source's aspect
 * (SPEC §12.5).
 *
 *     library-checks --group NAME --report FILE
 */
#include <livepush_capture_helper.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *report;
static int failures;

static void check(const char *name, int ok, const char *detail)
{
    fprintf(report, "%s %s: %s\n", ok ? "ok" : "FAIL", name, detail);
    fflush(report);
    if (!ok)
        failures++;
}

static void check_group_from_args(void)
{
    char *spaced[] = {"helper", "--size", "1x1", "--group", "g-one", NULL};
    char *joined[] = {"helper", "--group=g.two", NULL};
    char *none[] = {"helper", "--group", NULL};
    const char *a = lpc_group_from_args(5, spaced), *b = lpc_group_from_args(2, joined), *c = lpc_group_from_args(2, none);
    char detail[160];
    snprintf(detail, sizeof detail, "'%s', '%s', %s", a ? a : "(null)", b ? b : "(null)", c ? c : "(null)");
    check("group-from-args", a && strcmp(a, "g-one") == 0 && b && strcmp(b, "g.two") == 0 && c == NULL, detail);
}

static void check_layout(lpc_helper *h, lpc_slot *slot)
{
    lpc_frame before = slot->frame, f = slot->frame;
    char why[200], detail[600];
    int unknown = lpc_frame_layout(&f, 99, 64, 64, slot->bytes);
    int same = memcmp(&f, &before, sizeof f) == 0;
    const char *problem = lpc_frame_layout_problem(why, sizeof why, 99, 64, 64, slot->bytes);
    snprintf(detail, sizeof detail, "format 99: status %d, frame %s, says '%s'", unknown, same ? "unchanged" : "CHANGED",
             problem ? problem : "(nothing)");
    check("layout-unchanged", unknown == LPC_E_INVALID && same && problem && strstr(problem, "format 99"), detail);

    int big = lpc_frame_layout(&f, LPC_FORMAT_BGRX, 60000, 60000, slot->bytes);
    same = memcmp(&f, &before, sizeof f) == 0;
    problem = lpc_frame_layout_problem(why, sizeof why, LPC_FORMAT_BGRX, 60000, 60000, slot->bytes);
    snprintf(detail, sizeof detail, "60000x60000: status %d, frame %s, says '%s'", big, same ? "unchanged" : "CHANGED",
             problem ? problem : "(nothing)");
    check("layout-too-large", big == LPC_E_INVALID && same && problem && strstr(problem, "needs"), detail);

    int session = lpc_helper_layout(h, slot, LPC_FORMAT_I420, 64, 64); /* I420 was not asked for: not granted */
    same = memcmp(&slot->frame, &before, sizeof before) == 0;
    snprintf(detail, sizeof detail, "I420 not granted: status %d, frame %s, says '%s'", session,
             same ? "unchanged" : "CHANGED", lpc_helper_error(h));
    check("helper-layout", session == LPC_E_INVALID && same && strstr(lpc_helper_error(h), "pixel_formats"), detail);
    check("good-layout", lpc_frame_layout(&f, LPC_FORMAT_BGRX, 64, 64, slot->bytes) == LPC_OK && f.width == 64,
          "BGRX 64x64 lays out");
}

int main(int argc, char **argv)
{
    const char *report_path = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--report") == 0)
            report_path = argv[i + 1];
    report = report_path ? fopen(report_path, "a") : stderr; /* check-helper starts it again for its paths */
    if (report == NULL)
        return perror("library-checks: --report"), 2;
    check_group_from_args();

    lpc_helper_options options = LPC_HELPER_OPTIONS_INIT;
    options.helper_name = "library-checks";
    options.max_width = 640; /* the "source": 16:9 */
    options.max_height = 360;
    options.capabilities = LPC_CAP_SCALE | LPC_CAP_AUDIO;
    options.audio_formats = LPC_AUDIO_BIT(LPC_AUDIO_S16LE);
    lpc_helper *h;
    if (lpc_helper_connect(&h, lpc_group_from_args(argc, argv), &options) < 0) {
        fprintf(stderr, "library-checks: %s\n", lpc_helper_error(h));
        lpc_helper_close(h);
        return 1;
    }
    static int16_t silence[960 * 2];
    uint64_t audio_pts = 0;
    uint32_t last_width = 0, last_height = 0;
    int checked = 0;
    while (lpc_helper_wait_frame(h) >= 0) {
        lpc_slot slot;
        if (lpc_helper_acquire(h, &slot) < 0)
            continue;
        for (uint32_t y = 0; y < slot.frame.height; y++)
            memset(slot.data + slot.frame.plane_offset[0] + (size_t)y * slot.frame.stride[0], 0x80, slot.frame.width * 4);
        if (!checked && lpc_helper_submit(h, &slot) == LPC_OK) {
            /* A second frame stamped before the first: refused here, never sent. */
            if (lpc_helper_acquire(h, &slot) == LPC_OK) {
                check_layout(h, &slot);
                slot.frame.pts_ns = lpc_now_ns() - 1000000000u;
                int rc = lpc_helper_submit(h, &slot);
                check("frame-pts-backwards", rc == LPC_E_INVALID && strstr(lpc_helper_error(h), "FRAME.pts_ns"),
                      lpc_helper_error(h));
                slot.frame.pts_ns = 0; /* now: the same slot goes out after all */
                check("frame-after-refusal", lpc_helper_submit(h, &slot) == LPC_OK, lpc_helper_error(h));
            }
            audio_pts = lpc_now_ns();
            lpc_helper_send_audio(h, LPC_AUDIO_S16LE, 48000, 2, 960, audio_pts, silence);
            int rc = lpc_helper_send_audio(h, LPC_AUDIO_S16LE, 48000, 2, 960, audio_pts - 20000000u, silence);
            check("audio-pts-backwards", rc == LPC_E_INVALID && strstr(lpc_helper_error(h), "AUDIO.pts_ns"),
                  lpc_helper_error(h));
            checked = 1;
            continue;
        }
        uint32_t width = slot.frame.width, height = slot.frame.height;
        if (lpc_helper_submit(h, &slot) < 0)
            break;
        if (width != last_width || height != last_height) /* each size sent, once */
            fprintf(report, "size %ux%u\n", width, height);
        last_width = width, last_height = height;
    }
    int status = lpc_helper_exit_status(h);
    if (status != 0)
        fprintf(stderr, "library-checks: %s\n", lpc_helper_error(h));
    lpc_helper_close(h);
    fprintf(report, "checks failed: %d\n", failures);
    fclose(report);
    return failures ? 1 : status;
}
