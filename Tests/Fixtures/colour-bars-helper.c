/*
 * colour-bars-helper.c: a helper on liblivepush-capture that sends four vertical bars, pure red,
 * green, blue and white, in one pixel format, with the colours the Capture Link SPEC (§8.1) gives
 * that format: sRGB full range for the RGB formats, BT.709 limited range for NV12 and I420. A
 * test decodes what the pusher recorded and expects the same primaries back.
 *
 *     colour-bars-helper --group NAME --format bgrx|bgra|rgbx|rgba|nv12|i420 [--frames N]
 */
#include <livepush_capture_helper.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 640u
#define HEIGHT 360u

static const uint8_t rgb[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}};

/* BT.709, limited range: Y 16..235, U and V 16..240 (SPEC §8.1). */
static void bt709(const uint8_t c[3], uint8_t *y, uint8_t *u, uint8_t *v)
{
    double r = c[0] / 255.0, g = c[1] / 255.0, b = c[2] / 255.0;
    double luma = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    *y = (uint8_t)(16.0 + 219.0 * luma + 0.5);
    *u = (uint8_t)(128.0 + 224.0 * (b - luma) / 1.8556 + 0.5);
    *v = (uint8_t)(128.0 + 224.0 * (r - luma) / 1.5748 + 0.5);
}

static void draw(const lpc_slot *slot)
{
    const lpc_frame *f = &slot->frame;
    for (uint32_t x = 0; x < f->width; x++) {
        const uint8_t *c = rgb[x * 4 / f->width];
        uint8_t y, u, v;
        bt709(c, &y, &u, &v);
        for (uint32_t row = 0; row < f->height; row++) {
            uint8_t *p = slot->data + f->plane_offset[0] + (size_t)row * f->stride[0];
            switch (f->format) {
            case LPC_FORMAT_BGRX: case LPC_FORMAT_BGRA:
                p[x * 4] = c[2], p[x * 4 + 1] = c[1], p[x * 4 + 2] = c[0], p[x * 4 + 3] = 0xFF;
                break;
            case LPC_FORMAT_RGBX: case LPC_FORMAT_RGBA:
                p[x * 4] = c[0], p[x * 4 + 1] = c[1], p[x * 4 + 2] = c[2], p[x * 4 + 3] = 0xFF;
                break;
            default:
                p[x] = y;
                if (row % 2 == 0 && x % 2 == 0) {
                    uint8_t *c1 = slot->data + f->plane_offset[1] + (size_t)(row / 2) * f->stride[1];
                    if (f->format == LPC_FORMAT_NV12) {
                        c1[x] = u, c1[x + 1] = v;
                    } else {
                        c1[x / 2] = u;
                        slot->data[f->plane_offset[2] + (size_t)(row / 2) * f->stride[2] + x / 2] = v;
                    }
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    const char *group = NULL, *format_name = "bgrx";
    long frames = 60;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--group") == 0) group = argv[i + 1];
        else if (strcmp(argv[i], "--format") == 0) format_name = argv[i + 1];
        else if (strcmp(argv[i], "--frames") == 0) frames = strtol(argv[i + 1], NULL, 10);
    }
    static const char *const names[] = {"", "bgrx", "bgra", "rgbx", "rgba", "nv12", "i420"};
    uint32_t format = 0;
    for (uint32_t k = 1; k <= 6; k++)
        if (strcmp(format_name, names[k]) == 0) format = k;
    if (format == 0 || frames < 1) {
        fprintf(stderr, "usage: colour-bars-helper --group NAME --format bgrx|bgra|rgbx|rgba|nv12|i420 [--frames N]\n");
        return 2;
    }
    lpc_helper_options options = LPC_HELPER_OPTIONS_INIT;
    options.helper_name = "colour-bars-helper";
    options.pixel_formats = LPC_FORMAT_BIT(format);
    options.format = format;
    options.max_width = WIDTH;
    options.max_height = HEIGHT;
    lpc_helper *h;
    if (lpc_helper_connect(&h, group, &options) < 0) {
        fprintf(stderr, "colour-bars-helper: %s\n", lpc_helper_error(h));
        lpc_helper_close(h);
        return 1;
    }
    long sent = 0;
    while (sent < frames) {
        if (lpc_helper_wait_frame(h) < 0)
            break;
        lpc_slot slot;
        if (lpc_helper_acquire(h, &slot) < 0)
            continue;
        draw(&slot);
        if (lpc_helper_submit(h, &slot) < 0)
            break;
        sent++;
    }
    if (sent < frames) { /* the session ended first: 0 after STOP (SPEC §12.9), else 1 */
        int status = lpc_helper_exit_status(h);
        if (status != 0)
            fprintf(stderr, "colour-bars-helper: %s\n", lpc_helper_error(h));
        lpc_helper_close(h);
        return status;
    }
    lpc_helper_finish(h, LPC_FINISH_DONE, "sent the colour bars");
    int status = lpc_helper_exit_status(h);
    lpc_helper_close(h);
    return status;
}
