/* pw-video-source: a PipeWire video producer (Video/Source node) for LivePush's tests and
 * benchmarks, with the metadata a screen-cast producer sends and commands on stdin.
 *
 *   cc -std=c11 -O2 pw-video-source.c -o pw-video-source $(pkg-config --cflags --libs libpipewire-0.3)
 *   pw-video-source --name NAME [--size WxH] [--format BGRx|BGRA|RGBx|RGBA|NV12|I420] [--fps N]
 *                   [--color RRGGBB | --bars] [--cursor] [--damage] [--moving]
 *
 * It drives its own graph (PW_STREAM_FLAG_DRIVER, a timer at --fps) and fills buffers PipeWire
 * allocates in shared memory (MemFd/MemPtr). Pictures:
 *   --color RRGGBB  every pixel that colour (default 0000ff)
 *   --bars          8 vertical bars, left to right: white, yellow, cyan, green, magenta, red, blue, black
 *   --moving        a 64-pixel-wide white column moves right by 8 pixels per frame (each frame differs)
 * Metadata:
 *   --cursor        SPA_META_Cursor: a 16x16 opaque white square pointer, hotspot (0,0), at (cx,cy)
 *   --damage        SPA_META_VideoDamage: the whole frame when the picture changed, no region when not
 * Commands on stdin, one per line (each answered on stdout once applied):
 *   color RRGGBB    new solid colour                         -> "color RRGGBB"
 *   resize W H      new size (renegotiates the format)       -> "format F WxH" when negotiated
 *   corrupt N       the next N frames are filled magenta and flagged SPA_CHUNK_FLAG_CORRUPTED -> "corrupt N"
 *   cursor X Y      move the pointer                         -> "cursor X Y"
 *   quit            disconnect and exit 0
 * On start it prints "node ID" once the node exists and "format F WxH" after each negotiation.
 * The loop, commands, node announcement and buffer header are tools/testclients/pw-test-client.h.
 * Output is line buffered so a test can wait for each line. */
#define _GNU_SOURCE
#include "pw-test-client.h"

#include <errno.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/video/type-info.h>
#include <spa/debug/types.h>

#define CURSOR_SIDE 16
#define CURSOR_META_BYTES(w, h) (sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + (w) * (h) * 4)
#define MAX_BUFFERS 16

struct state {
    struct test_client client;  /* loop, stream, timer, stdin: pw-test-client.h */
    struct spa_hook listener;
    uint32_t spa_format;
    uint32_t width, height, fps;
    uint32_t color;            /* 0xRRGGBB */
    int bars, moving, cursor, damage;
    int cursor_x, cursor_y, cursor_shape_sent;
    uint32_t corrupt_left;
    uint64_t generation;       /* bumped whenever the picture changes */
    uint64_t frame;
    uint64_t skipped;          /* timer ticks with no free buffer */
    struct pw_buffer *buffers[MAX_BUFFERS];
    uint64_t filled_generation[MAX_BUFFERS];
    int negotiated;
};

static void rgb_to_yuv(uint32_t rgb, uint8_t *y, uint8_t *u, uint8_t *v) {
    /* BT.709 limited range, as Capture Link's NV12/I420 */
    double r = (rgb >> 16) & 0xff, g = (rgb >> 8) & 0xff, b = rgb & 0xff;
    *y = (uint8_t)(16.5 + 0.1826 * r + 0.6142 * g + 0.0620 * b);
    *u = (uint8_t)(128.5 - 0.1006 * r - 0.3386 * g + 0.4392 * b);
    *v = (uint8_t)(128.5 + 0.4392 * r - 0.3989 * g - 0.0403 * b);
}


static uint32_t color_at(struct state *s, uint32_t x, uint32_t corrupt) {
    if (corrupt) return 0xff00ff;
    if (s->moving) {
        uint32_t left = (uint32_t)((s->frame * 8) % (s->width > 64 ? s->width - 64 : 1));
        if (x >= left && x < left + 64) return 0xffffff;
    }
    if (s->bars) return bar_colors[(uint64_t)x * 8 / s->width];
    return s->color;
}

static void put_packed(struct state *s, uint8_t *p, uint32_t rgb) {
    uint8_t r = rgb >> 16, g = rgb >> 8, b = rgb;
    switch (s->spa_format) {
    case SPA_VIDEO_FORMAT_BGRx: case SPA_VIDEO_FORMAT_BGRA: p[0] = b; p[1] = g; p[2] = r; p[3] = 0xff; break;
    default: p[0] = r; p[1] = g; p[2] = b; p[3] = 0xff; break;
    }
}

/* Fills the planes of one buffer; returns 0, or -1 if the buffer is too small. */
static int fill(struct state *s, struct spa_buffer *buf, uint32_t corrupt) {
    uint32_t w = s->width, h = s->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    int packed = s->spa_format != SPA_VIDEO_FORMAT_NV12 && s->spa_format != SPA_VIDEO_FORMAT_I420;
    struct spa_data *d = &buf->datas[0];
    if (d->data == NULL) return -1;
    uint8_t *base = d->data;
    if (packed) {
        uint32_t stride = SPA_ROUND_UP_N(w * 4, 4);
        if ((uint64_t)stride * h > d->maxsize) return -1;
        uint8_t row[w * 4];
        for (uint32_t x = 0; x < w; x++) put_packed(s, row + x * 4, color_at(s, x, corrupt));
        for (uint32_t y = 0; y < h; y++) memcpy(base + (size_t)y * stride, row, w * 4);
        d->chunk->offset = 0;
        d->chunk->stride = stride;
        d->chunk->size = stride * h;
    } else {
        /* All planes one after the other in the first data, tightly packed. */
        uint32_t y_size = w * h, c_size = s->spa_format == SPA_VIDEO_FORMAT_NV12 ? cw * 2 * ch : cw * ch * 2;
        if (y_size + c_size > d->maxsize) return -1;
        uint8_t yrow[w], urow[cw], vrow[cw];
        for (uint32_t x = 0; x < w; x++) {
            uint8_t u, v;
            rgb_to_yuv(color_at(s, x, corrupt), &yrow[x], &u, &v);
            if (x % 2 == 0) { urow[x / 2] = u; vrow[x / 2] = v; }
        }
        for (uint32_t y = 0; y < h; y++) memcpy(base + (size_t)y * w, yrow, w);
        uint8_t *c = base + y_size;
        for (uint32_t y = 0; y < ch; y++) {
            if (s->spa_format == SPA_VIDEO_FORMAT_NV12) {
                for (uint32_t x = 0; x < cw; x++) { c[y * cw * 2 + x * 2] = urow[x]; c[y * cw * 2 + x * 2 + 1] = vrow[x]; }
            } else {
                memcpy(c + (size_t)y * cw, urow, cw);
                memcpy(c + (size_t)cw * ch + (size_t)y * cw, vrow, cw);
            }
        }
        d->chunk->offset = 0;
        d->chunk->stride = w;
        d->chunk->size = y_size + c_size;
    }
    return 0;
}

static int buffer_index(struct state *s, struct pw_buffer *b) {
    for (int i = 0; i < MAX_BUFFERS; i++) if (s->buffers[i] == b) return i;
    for (int i = 0; i < MAX_BUFFERS; i++) if (s->buffers[i] == NULL) { s->buffers[i] = b; s->filled_generation[i] = 0; return i; }
    return 0;
}

static void on_timeout(void *data, uint64_t expirations) {
    struct state *s = data;
    (void)expirations;
    if (!s->negotiated) return;
    struct pw_buffer *b = test_client_dequeue(&s->client, &s->skipped);
    if (b == NULL) return;
    struct spa_buffer *buf = b->buffer;
    int index = buffer_index(s, b);
    uint32_t corrupt = s->corrupt_left > 0;
    int changed = 0;
    if (corrupt || s->moving || s->filled_generation[index] != s->generation) {
        if (fill(s, buf, corrupt) < 0) { pw_stream_queue_buffer(s->client.stream, b); return; }
        s->filled_generation[index] = corrupt || s->moving ? 0 : s->generation;
        changed = 1;
    }
    /* "changed" for damage: a new picture since the previous frame sent */
    static uint64_t last_sent_generation = 0;
    if (!corrupt && !s->moving) {
        changed = last_sent_generation != s->generation;
        last_sent_generation = s->generation;
    } else {
        changed = 1;
        last_sent_generation = 0;
    }
    buf->datas[0].chunk->flags = corrupt ? SPA_CHUNK_FLAG_CORRUPTED : SPA_CHUNK_FLAG_NONE;
    if (corrupt) s->corrupt_left--;

    test_client_stamp(buf, s->frame);
    struct spa_meta *damage = spa_buffer_find_meta(buf, SPA_META_VideoDamage);
    if (damage && s->damage) {
        struct spa_meta_region *r = spa_meta_first(damage);
        size_t count = damage->size / sizeof(*r);
        memset(damage->data, 0, damage->size);
        if (changed && count > 0) r[0].region = SPA_REGION(0, 0, s->width, s->height);
    }
    struct spa_meta_cursor *mc = spa_buffer_find_meta_data(buf, SPA_META_Cursor, sizeof(*mc));
    if (mc && s->cursor) {
        mc->id = 1;
        mc->flags = 0;
        mc->position.x = s->cursor_x;
        mc->position.y = s->cursor_y;
        mc->hotspot.x = 0;
        mc->hotspot.y = 0;
        mc->bitmap_offset = 0;
        /* The shape goes in every buffer until each has carried it once (a consumer may skip some). */
        if (s->cursor_shape_sent < MAX_BUFFERS) {
            mc->bitmap_offset = sizeof(struct spa_meta_cursor);
            struct spa_meta_bitmap *bm = SPA_PTROFF(mc, mc->bitmap_offset, struct spa_meta_bitmap);
            bm->format = SPA_VIDEO_FORMAT_BGRA;
            bm->size.width = CURSOR_SIDE;
            bm->size.height = CURSOR_SIDE;
            bm->stride = CURSOR_SIDE * 4;
            bm->offset = sizeof(struct spa_meta_bitmap);
            uint32_t *pixels = SPA_PTROFF(bm, bm->offset, uint32_t);
            for (int i = 0; i < CURSOR_SIDE * CURSOR_SIDE; i++) pixels[i] = 0xffffffff;
            s->cursor_shape_sent++;
        }
    }
    s->frame++;
    pw_stream_queue_buffer(s->client.stream, b);
}

static const uint32_t formats_by_name[][2] = {
    {SPA_VIDEO_FORMAT_BGRx, 0}, {SPA_VIDEO_FORMAT_BGRA, 0}, {SPA_VIDEO_FORMAT_RGBx, 0},
    {SPA_VIDEO_FORMAT_RGBA, 0}, {SPA_VIDEO_FORMAT_NV12, 0}, {SPA_VIDEO_FORMAT_I420, 0},
};

static const struct spa_pod *build_format(struct state *s, struct spa_pod_builder *b) {
    return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_Id(s->spa_format),
        SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(s->width, s->height)),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(s->fps, 1)));
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct state *s = data;
    if (id != SPA_PARAM_Format || param == NULL) return;
    struct spa_video_info_raw info;
    spa_zero(info);
    if (spa_format_video_raw_parse(param, &info) < 0) return;
    s->width = info.size.width;
    s->height = info.size.height;
    int packed = s->spa_format != SPA_VIDEO_FORMAT_NV12 && s->spa_format != SPA_VIDEO_FORMAT_I420;
    uint32_t stride = packed ? s->width * 4 : s->width;
    uint32_t size = packed ? stride * s->height : s->width * s->height + 2 * ((s->width + 1) / 2) * ((s->height + 1) / 2);
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[4];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(8, 2, MAX_BUFFERS),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_Int(size),
        SPA_PARAM_BUFFERS_stride, SPA_POD_Int(stride),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemPtr) | (1 << SPA_DATA_MemFd)));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    params[2] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(sizeof(struct spa_meta_region) * 16,
                                                      sizeof(struct spa_meta_region) * 1,
                                                      sizeof(struct spa_meta_region) * 16));
    params[3] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(CURSOR_META_BYTES(CURSOR_SIDE, CURSOR_SIDE),
                                                      CURSOR_META_BYTES(1, 1),
                                                      CURSOR_META_BYTES(256, 256)));
    pw_stream_update_params(s->client.stream, params, 4);
    memset(s->buffers, 0, sizeof(s->buffers));
    s->cursor_shape_sent = 0;
    s->generation++;
    s->negotiated = 1;
    printf("format %s %ux%u\n", spa_debug_type_find_short_name(spa_type_video_format, s->spa_format), s->width,
           s->height);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct state *s = data;
    (void)old;
    test_client_state_changed(&s->client, "pw-video-source", state, error, 1000000000ULL / s->fps);
}

static void on_add_buffer(void *data, struct pw_buffer *b) {
    struct state *s = data;
    (void)b;
    s->cursor_shape_sent = 0;  /* a new consumer's buffers: send the pointer's shape again */
    s->generation++;           /* and a full picture, damaged */
}

static void on_remove_buffer(void *data, struct pw_buffer *b) {
    struct state *s = data;
    for (int i = 0; i < MAX_BUFFERS; i++) if (s->buffers[i] == b) s->buffers[i] = NULL;
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .add_buffer = on_add_buffer,
    .remove_buffer = on_remove_buffer,
};

static void handle_command(void *data, char *line) {
    struct state *s = data;
    char word[32];
    if (sscanf(line, "%31s", word) != 1) return;
    if (strcmp(word, "color") == 0) {
        char hex[16];
        if (sscanf(line, "%*s %15s", hex) == 1 && parse_color(hex, &s->color) == 0) {
            s->bars = 0;
            s->generation++;
            printf("color %06x\n", s->color);
        }
    } else if (strcmp(word, "resize") == 0) {
        unsigned w, h;
        if (sscanf(line, "%*s %u %u", &w, &h) == 2 && w > 0 && h > 0) {
            s->width = w;
            s->height = h;
            uint8_t buffer[1024];
            struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
            const struct spa_pod *params[1] = {build_format(s, &b)};
            s->negotiated = 0;
            pw_stream_update_params(s->client.stream, params, 1);
        }
    } else if (strcmp(word, "corrupt") == 0) {
        unsigned n;
        if (sscanf(line, "%*s %u", &n) == 1) {
            s->corrupt_left = n;
            printf("corrupt %u\n", n);
        }
    } else if (strcmp(word, "cursor") == 0) {
        int x, y;
        if (sscanf(line, "%*s %d %d", &x, &y) == 2) {
            s->cursor_x = x;
            s->cursor_y = y;
            printf("cursor %d %d\n", x, y);
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: pw-video-source --name NAME [--size WxH] [--format BGRx|BGRA|RGBx|RGBA|NV12|I420] "
                    "[--fps N] [--color RRGGBB | --bars] [--moving] [--cursor] [--damage]\n");
    exit(2);
}

int main(int argc, char *argv[]) {
    struct state s;
    memset(&s, 0, sizeof(s));
    s.spa_format = SPA_VIDEO_FORMAT_BGRx;
    s.width = 640;
    s.height = 480;
    s.fps = 30;
    s.color = 0x0000ff;
    s.cursor_x = 10;
    s.cursor_y = 10;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--name") == 0 && value) { name = value; i++; }
        else if (strcmp(a, "--size") == 0 && value) { if (sscanf(value, "%ux%u", &s.width, &s.height) != 2) usage(); i++; }
        else if (strcmp(a, "--fps") == 0 && value) { s.fps = (uint32_t)atoi(value); if (s.fps == 0) usage(); i++; }
        else if (strcmp(a, "--color") == 0 && value) { if (parse_color(value, &s.color) < 0) usage(); i++; }
        else if (strcmp(a, "--format") == 0 && value) {
            const char *names[] = {"BGRx", "BGRA", "RGBx", "RGBA", "NV12", "I420"};
            int found = 0;
            for (int f = 0; f < 6; f++) if (strcmp(value, names[f]) == 0) { s.spa_format = formats_by_name[f][0]; found = 1; }
            if (!found) {
                /* Any other SPA format by its short name, to test a consumer that cannot take it. */
                for (const struct spa_type_info *t = spa_type_video_format; t->name; t++) {
                    const char *short_name = spa_debug_type_short_name(t->name);
                    if (strcmp(short_name, value) == 0) { s.spa_format = t->type; found = 1; }
                }
            }
            if (!found) usage();
            i++;
        }
        else if (strcmp(a, "--bars") == 0) s.bars = 1;
        else if (strcmp(a, "--moving") == 0) s.moving = 1;
        else if (strcmp(a, "--cursor") == 0) s.cursor = 1;
        else if (strcmp(a, "--damage") == 0) s.damage = 1;
        else usage();
    }
    if (name == NULL) usage();
    test_client_init(&s.client, &argc, &argv, on_timeout, &s, handle_command);
    s.client.stream = pw_stream_new_simple(pw_main_loop_get_loop(s.client.loop), name,
        pw_properties_new(PW_KEY_MEDIA_CLASS, "Video/Source", PW_KEY_NODE_NAME, name,
                          PW_KEY_NODE_DESCRIPTION, "LivePush test video source", NULL),
        &stream_events, &s);
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[1] = {build_format(&s, &b)};
    if (pw_stream_connect(s.client.stream, PW_DIRECTION_OUTPUT, PW_ID_ANY,
                          PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_MAP_BUFFERS, params, 1) < 0) {
        fprintf(stderr, "pw-video-source: cannot connect the stream (is PipeWire running?)\n");
        return 1;
    }
    pw_main_loop_run(s.client.loop);
    fprintf(stderr, "pw-video-source: %llu frames sent, %llu ticks skipped (no free buffer)\n",
            (unsigned long long)s.frame, (unsigned long long)s.skipped);
    test_client_destroy(&s.client);
    return 0;
}
