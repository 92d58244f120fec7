/* pw-camera-source: a camera on PipeWire for LivePush's tests and benchmarks: a Video/Source node
 * with the Camera role (what WirePlumber makes of a V4L2 webcam, and what xdg-desktop-portal's
 * Camera interface counts), offering the modes a webcam offers, one EnumFormat param per format and
 * size with its frame rates, in YUY2, MJPEG (encoded with libjpeg-turbo), NV12 and I420.
 *
 *   cc -std=c11 -O2 pw-camera-source.c -o pw-camera-source $(pkg-config --cflags --libs libpipewire-0.3) -ljpeg
 *   pw-camera-source --name NAME [--description TEXT] [--modes LIST] [--color RRGGBB | --bars]
 *                    [--moving] [--stamp] [--quality Q] [--no-huffman-tables] [--no-role]
 *
 * --modes  what it offers, comma-separated FORMAT:WxH@FPS[/FPS...] (the first rate is the default);
 *          default: a typical USB webcam, YUY2 slow at its larger size, MJPEG fast:
 *          YUY2:640x480@30/15,YUY2:1280x720@10/5,MJPEG:1280x720@30/15,MJPEG:640x480@30,
 *          MJPEG:1920x1080@30,NV12:640x480@30,I420:640x480@30
 * Pictures (YUV in BT.601 limited range, as webcams send; MJPEG in JPEG's full range, 4:2:2):
 *   --color RRGGBB  every pixel that colour (default 0000ff)
 *   --bars          8 vertical bars, left to right: white, yellow, cyan, green, magenta, red, blue, black
 *   --moving        a white column 1/16 of the width wide moves right by 1/64 of the width each frame
 *   --no-huffman-tables  MJPEG frames without their DHT segments, as many webcams send them
 *   --stamp         the send time, CLOCK_MONOTONIC in ms modulo 2^32, as 32 blocks of 16x16 pixels along
 *                   the top edge (most significant bit first; white 1, black 0): what the camera
 *                   benchmark reads back to measure latency
 * It drives its own graph (PW_STREAM_FLAG_DRIVER, a timer at the negotiated rate) and fills buffers
 * PipeWire allocates in shared memory; each buffer carries SPA_META_Header with its CLOCK_MONOTONIC
 * pts, as the V4L2 source does.
 * Commands on stdin, one per line: "color RRGGBB" (answered "color RRGGBB"), "bars", "quit".
 * The loop, commands, node announcement and buffer header are tools/testclients/pw-test-client.h.
 * On start it prints "node ID" once the node exists and "format F WxH@N/D" after each negotiation;
 * stdout is line buffered. */
#define _GNU_SOURCE
#include "pw-test-client.h"

#include <jpeglib.h>
#include <spa/param/video/format-utils.h>
#include <spa/debug/types.h>

#define MAX_MODES 16
#define MAX_RATES 8

struct mode {
    uint32_t subtype;  /* SPA_MEDIA_SUBTYPE_raw or _mjpg */
    uint32_t format;   /* raw: SPA_VIDEO_FORMAT_*; 0 for MJPEG */
    uint32_t width, height;
    uint32_t rates[MAX_RATES];
    int rate_count;
};

struct state {
    struct test_client client;
    struct spa_hook listener;
    struct mode modes[MAX_MODES];
    int mode_count;
    /* what was negotiated */
    uint32_t subtype, format, width, height, rate_num, rate_denom;
    int negotiated;
    uint32_t color;
    int bars, moving, stamp, quality, no_huffman_tables;
    uint64_t frame, skipped, generation, encoded_generation;
    uint8_t *rgb;           /* the distinct rows of the picture (draw_row), RGB 3 bytes a pixel */
    uint32_t stamp_ms;      /* the --stamp time of the frame being filled */
    uint8_t *jpeg;          /* the last JPEG encoded, for a picture that did not change */
    unsigned long jpeg_size, jpeg_room;
};

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Row y of this frame's picture, RGB, into `rgb`: every row is the same (bars, a colour, the moving
 * column) but the top 16 of a --stamp picture, so a frame costs a row's conversion and copies. */
static void draw_row(struct state *s, uint32_t y, uint8_t *rgb) {
    uint32_t w = s->width;
    uint32_t column = w / 16, left = s->moving ? (uint32_t)((s->frame * (w / 64 ? w / 64 : 1)) % (w - column + 1)) : 0;
    for (uint32_t x = 0; x < w; x++) {
        uint32_t c = s->bars ? bar_colors[(uint64_t)x * 8 / w] : s->color;
        if (s->moving && x >= left && x < left + column) c = 0xffffff;
        if (s->stamp && y < 16 && x < 512) c = (s->stamp_ms >> (31 - x / 16)) & 1 ? 0xffffff : 0x000000;
        uint8_t *p = rgb + x * 3;
        p[0] = c >> 16; p[1] = c >> 8; p[2] = c;
    }
}

/* How many leading rows differ from the rows below them. */
static uint32_t distinct_rows(struct state *s) { return s->stamp && s->width >= 512 && s->height > 16 ? 17 : 1; }

/* BT.601 limited range, what a webcam's YUV is. */
static void rgb_to_yuv(const uint8_t *p, int *y, int *u, int *v) {
    double r = p[0], g = p[1], b = p[2];
    *y = (int)(16.5 + 0.257 * r + 0.504 * g + 0.098 * b);
    *u = (int)(128.5 - 0.148 * r - 0.291 * g + 0.439 * b);
    *v = (int)(128.5 + 0.439 * r - 0.368 * g - 0.071 * b);
}

static int encode_jpeg(struct state *s) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr errors;
    c.err = jpeg_std_error(&errors);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &out, &size);
    c.image_width = s->width;
    c.image_height = s->height;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, s->quality, TRUE);
    c.comp_info[0].h_samp_factor = 2;  /* 4:2:2, as webcams send */
    c.comp_info[0].v_samp_factor = 1;
    jpeg_start_compress(&c, TRUE);
    uint32_t distinct = distinct_rows(s);
    while (c.next_scanline < c.image_height) {
        uint32_t y = c.next_scanline < distinct ? c.next_scanline : distinct - 1;
        JSAMPROW row = s->rgb + (size_t)y * s->width * 3;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    if (size > s->jpeg_room) {
        free(s->jpeg);
        s->jpeg = malloc(size);
        s->jpeg_room = s->jpeg ? size : 0;
        if (!s->jpeg) { free(out); return -1; }
    }
    if (s->no_huffman_tables) {
        /* Webcams often leave the standard Huffman tables out of their frames (the AVI1 Motion-JPEG
         * convention): drop the DHT segments before the scan, as they do. */
        unsigned long from = 0, to = 0;
        while (from + 3 < size && !(out[from] == 0xFF && out[from + 1] == 0xDA)) {
            if (out[from] == 0xFF && out[from + 1] == 0xC4) {
                from += 2 + (((unsigned long)out[from + 2] << 8) | out[from + 3]);
                continue;
            }
            s->jpeg[to++] = out[from++];
        }
        memcpy(s->jpeg + to, out + from, size - from);
        size = to + size - from;
    } else {
        memcpy(s->jpeg, out, size);
    }
    s->jpeg_size = size;
    free(out);
    return 0;
}

/* Fills one buffer with this frame's picture; returns 0, or -1 if it does not fit. */
static int fill(struct state *s, struct spa_data *d) {
    uint32_t w = s->width, h = s->height, distinct = distinct_rows(s);
    uint8_t *base = d->data;
    if (base == NULL) return -1;
    s->stamp_ms = (uint32_t)now_ms();
    for (uint32_t y = 0; y < distinct; y++) draw_row(s, y == distinct - 1 ? 16 : y, s->rgb + (size_t)y * w * 3);
    if (s->subtype == SPA_MEDIA_SUBTYPE_mjpg) {
        if (s->encoded_generation != s->generation || s->moving || s->stamp) {
            if (encode_jpeg(s) < 0) return -1;
            s->encoded_generation = s->generation;
        }
        if (s->jpeg_size > d->maxsize) return -1;
        memcpy(base, s->jpeg, s->jpeg_size);
        d->chunk->offset = 0;
        d->chunk->stride = 0;
        d->chunk->size = s->jpeg_size;
        return 0;
    }
    if (s->format == SPA_VIDEO_FORMAT_YUY2) {
        uint32_t stride = ((w + 1) / 2) * 4;
        if ((uint64_t)stride * h > d->maxsize) return -1;
        for (uint32_t y = 0; y < h; y++) {
            uint8_t *out = base + (size_t)y * stride;
            if (y >= distinct) { memcpy(out, base + (size_t)(distinct - 1) * stride, stride); continue; }
            const uint8_t *row = s->rgb + (size_t)y * w * 3;
            for (uint32_t x = 0; x < w; x += 2) {
                int y0, u0, v0, y1, u1, v1;
                rgb_to_yuv(row + x * 3, &y0, &u0, &v0);
                rgb_to_yuv(row + (x + 1 < w ? x + 1 : x) * 3, &y1, &u1, &v1);
                out[x * 2] = y0; out[x * 2 + 1] = (u0 + u1) / 2; out[x * 2 + 2] = y1; out[x * 2 + 3] = (v0 + v1) / 2;
            }
        }
        d->chunk->offset = 0;
        d->chunk->stride = stride;
        d->chunk->size = stride * h;
        return 0;
    }
    /* NV12 or I420: the planes one after the other in the first data, tightly packed. */
    uint32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
    size_t y_size = (size_t)w * h, c_size = (size_t)cw * ch * 2;
    if (y_size + c_size > d->maxsize) return -1;
    uint8_t *u_plane = base + y_size, *v_plane = u_plane + (size_t)cw * ch;
    size_t c_stride = s->format == SPA_VIDEO_FORMAT_NV12 ? (size_t)cw * 2 : cw;
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *luma = base + (size_t)y * w;
        int chroma_row = y % 2 == 0;
        uint8_t *uv = u_plane + (size_t)(y / 2) * c_stride, *v = v_plane + (size_t)(y / 2) * cw;
        if (y >= distinct + 1) {  /* rows past the distinct ones (and their chroma row) repeat the last */
            memcpy(luma, base + (size_t)distinct * w, w);
            if (chroma_row) {
                memcpy(uv, u_plane + (size_t)(distinct / 2) * c_stride, c_stride);
                if (s->format == SPA_VIDEO_FORMAT_I420) memcpy(v, v_plane + (size_t)(distinct / 2) * cw, cw);
            }
            continue;
        }
        const uint8_t *row = s->rgb + (size_t)(y < distinct ? y : distinct - 1) * w * 3;
        for (uint32_t x = 0; x < w; x++) {
            int yy, uu, vv;
            rgb_to_yuv(row + x * 3, &yy, &uu, &vv);
            luma[x] = yy;
            if (x % 2 || !chroma_row) continue;
            if (s->format == SPA_VIDEO_FORMAT_NV12) { uv[x] = uu; uv[x + 1] = vv; }
            else { uv[x / 2] = uu; v[x / 2] = vv; }
        }
    }
    d->chunk->offset = 0;
    d->chunk->stride = w;
    d->chunk->size = y_size + c_size;
    return 0;
}

static void on_timeout(void *data, uint64_t expirations) {
    struct state *s = data;
    (void)expirations;
    if (!s->negotiated) return;
    struct pw_buffer *b = test_client_dequeue(&s->client, &s->skipped);
    if (b == NULL) return;
    struct spa_buffer *buf = b->buffer;
    if (fill(s, &buf->datas[0]) < 0) {
        fprintf(stderr, "pw-camera-source: the picture does not fit the buffer (%u bytes)\n", buf->datas[0].maxsize);
        buf->datas[0].chunk->size = 0;
    }
    test_client_stamp(buf, s->frame);
    s->frame++;
    pw_stream_queue_buffer(s->client.stream, b);
}

static const struct spa_pod *build_mode(struct spa_pod_builder *b, const struct mode *m) {
    struct spa_pod_frame f[2];
    spa_pod_builder_push_object(b, &f[0], SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
    spa_pod_builder_add(b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
                        SPA_FORMAT_mediaSubtype, SPA_POD_Id(m->subtype), 0);
    if (m->subtype == SPA_MEDIA_SUBTYPE_raw) spa_pod_builder_add(b, SPA_FORMAT_VIDEO_format, SPA_POD_Id(m->format), 0);
    spa_pod_builder_add(b, SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(m->width, m->height)), 0);
    spa_pod_builder_prop(b, SPA_FORMAT_VIDEO_framerate, 0);
    if (m->rate_count == 1) {
        spa_pod_builder_fraction(b, m->rates[0], 1);
    } else {
        spa_pod_builder_push_choice(b, &f[1], SPA_CHOICE_Enum, 0);
        spa_pod_builder_fraction(b, m->rates[0], 1);  /* the default */
        for (int i = 0; i < m->rate_count; i++) spa_pod_builder_fraction(b, m->rates[i], 1);
        spa_pod_builder_pop(b, &f[1]);
    }
    return spa_pod_builder_pop(b, &f[0]);
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct state *s = data;
    if (id != SPA_PARAM_Format || param == NULL) return;
    uint32_t media_type = 0, subtype = 0;
    if (spa_format_parse(param, &media_type, &subtype) < 0) return;
    struct spa_rectangle size = {0, 0};
    struct spa_fraction rate = {0, 1};
    if (subtype == SPA_MEDIA_SUBTYPE_raw) {
        struct spa_video_info_raw info;
        spa_zero(info);
        if (spa_format_video_raw_parse(param, &info) < 0) return;
        s->format = info.format;
        size = info.size;
        rate = info.framerate;
    } else if (subtype == SPA_MEDIA_SUBTYPE_mjpg) {
        struct spa_video_info_mjpg info;
        spa_zero(info);
        if (spa_format_video_mjpg_parse(param, &info) < 0) return;
        s->format = 0;
        size = info.size;
        rate = info.framerate;
    } else {
        return;
    }
    s->subtype = subtype;
    s->width = size.width;
    s->height = size.height;
    s->rate_num = rate.num ? rate.num : 30;
    s->rate_denom = rate.denom ? rate.denom : 1;
    free(s->rgb);
    s->rgb = malloc((size_t)s->width * 17 * 3);
    uint32_t bytes, stride;
    if (subtype == SPA_MEDIA_SUBTYPE_mjpg) { bytes = s->width * s->height * 2; stride = 0; }
    else if (s->format == SPA_VIDEO_FORMAT_YUY2) { stride = ((s->width + 1) / 2) * 4; bytes = stride * s->height; }
    else { stride = s->width; bytes = s->width * s->height + 2 * ((s->width + 1) / 2) * ((s->height + 1) / 2); }
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[2];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(8, 2, 16),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_Int(bytes),
        SPA_PARAM_BUFFERS_stride, SPA_POD_Int(stride),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemPtr) | (1 << SPA_DATA_MemFd)));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    pw_stream_update_params(s->client.stream, params, 2);
    s->generation++;
    s->negotiated = 1;
    const char *name = subtype == SPA_MEDIA_SUBTYPE_mjpg ? "MJPEG"
        : spa_debug_type_find_short_name(spa_type_video_format, s->format);
    printf("format %s %ux%u@%u/%u\n", name, s->width, s->height, s->rate_num, s->rate_denom);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct state *s = data;
    (void)old;
    test_client_state_changed(&s->client, "pw-camera-source", state, error,
                              1000000000ULL * s->rate_denom / (s->rate_num ? s->rate_num : 30));
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
};

static void handle_command(void *data, char *line) {
    struct state *s = data;
    char word[32], hex[16];
    if (sscanf(line, "%31s", word) != 1) return;
    if (strcmp(word, "color") == 0 && sscanf(line, "%*s %15s", hex) == 1 && parse_color(hex, &s->color) == 0) {
        s->bars = 0;
        s->generation++;
        printf("color %06x\n", s->color);
    } else if (strcmp(word, "bars") == 0) {
        s->bars = 1;
        s->generation++;
        printf("bars\n");
    }
}

static void usage(void) {
    fprintf(stderr, "usage: pw-camera-source --name NAME [--description TEXT] [--modes FORMAT:WxH@FPS[/FPS...],...] "
                    "[--color RRGGBB | --bars] [--moving] [--stamp] [--quality Q] [--no-huffman-tables] [--no-role]\n");
    exit(2);
}

/* "YUY2:640x480@30/15" into a mode; 0, or -1 when it is not one. */
static int parse_mode(const char *text, struct mode *m) {
    char format[16];
    char rates[64];
    memset(m, 0, sizeof(*m));
    if (sscanf(text, "%15[^:]:%ux%u@%63s", format, &m->width, &m->height, rates) != 4) return -1;
    if (m->width == 0 || m->height == 0) return -1;
    if (strcmp(format, "MJPEG") == 0) m->subtype = SPA_MEDIA_SUBTYPE_mjpg;
    else {
        m->subtype = SPA_MEDIA_SUBTYPE_raw;
        if (strcmp(format, "YUY2") == 0) m->format = SPA_VIDEO_FORMAT_YUY2;
        else if (strcmp(format, "NV12") == 0) m->format = SPA_VIDEO_FORMAT_NV12;
        else if (strcmp(format, "I420") == 0) m->format = SPA_VIDEO_FORMAT_I420;
        else return -1;
    }
    for (char *rate = strtok(rates, "/"); rate && m->rate_count < MAX_RATES; rate = strtok(NULL, "/")) {
        int fps = atoi(rate);
        if (fps <= 0) return -1;
        m->rates[m->rate_count++] = (uint32_t)fps;
    }
    return m->rate_count > 0 ? 0 : -1;
}

static int parse_modes(struct state *s, const char *list) {
    char *copy = strdup(list), *saved = NULL;
    s->mode_count = 0;
    for (char *item = strtok_r(copy, ",", &saved); item; item = strtok_r(NULL, ",", &saved)) {
        if (s->mode_count == MAX_MODES || parse_mode(item, &s->modes[s->mode_count]) < 0) { free(copy); return -1; }
        s->mode_count++;
    }
    free(copy);
    return s->mode_count > 0 ? 0 : -1;
}

int main(int argc, char *argv[]) {
    struct state s;
    memset(&s, 0, sizeof(s));
    s.color = 0x0000ff;
    s.quality = 90;
    const char *name = NULL, *description = "LivePush test camera", *modes =
        "YUY2:640x480@30/15,YUY2:1280x720@10/5,MJPEG:1280x720@30/15,MJPEG:640x480@30,MJPEG:1920x1080@30,"
        "NV12:640x480@30,I420:640x480@30";
    int role = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--name") == 0 && value) { name = value; i++; }
        else if (strcmp(a, "--description") == 0 && value) { description = value; i++; }
        else if (strcmp(a, "--modes") == 0 && value) { modes = value; i++; }
        else if (strcmp(a, "--color") == 0 && value) { if (parse_color(value, &s.color) < 0) usage(); i++; }
        else if (strcmp(a, "--quality") == 0 && value) { s.quality = atoi(value); if (s.quality < 1 || s.quality > 100) usage(); i++; }
        else if (strcmp(a, "--bars") == 0) s.bars = 1;
        else if (strcmp(a, "--moving") == 0) s.moving = 1;
        else if (strcmp(a, "--stamp") == 0) s.stamp = 1;
        else if (strcmp(a, "--no-role") == 0) role = 0;
        else if (strcmp(a, "--no-huffman-tables") == 0) s.no_huffman_tables = 1;
        else usage();
    }
    if (name == NULL || parse_modes(&s, modes) < 0) usage();
    test_client_init(&s.client, &argc, &argv, on_timeout, &s, handle_command);
    struct pw_properties *props = pw_properties_new(PW_KEY_MEDIA_CLASS, "Video/Source", PW_KEY_NODE_NAME, name,
                                                    PW_KEY_NODE_DESCRIPTION, description, NULL);
    if (role) pw_properties_set(props, PW_KEY_MEDIA_ROLE, "Camera");
    pw_properties_setf(props, PW_KEY_OBJECT_PATH, "livepush-test:%s", name);
    s.client.stream = pw_stream_new_simple(pw_main_loop_get_loop(s.client.loop), name, props, &stream_events, &s);
    uint8_t buffer[8192];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[MAX_MODES];
    for (int i = 0; i < s.mode_count; i++) params[i] = build_mode(&b, &s.modes[i]);
    if (pw_stream_connect(s.client.stream, PW_DIRECTION_OUTPUT, PW_ID_ANY, PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_MAP_BUFFERS,
                          params, (uint32_t)s.mode_count) < 0) {
        fprintf(stderr, "pw-camera-source: cannot connect the stream (is PipeWire running?)\n");
        return 1;
    }
    pw_main_loop_run(s.client.loop);
    fprintf(stderr, "pw-camera-source: %llu frames sent, %llu ticks skipped (no free buffer)\n",
            (unsigned long long)s.frame, (unsigned long long)s.skipped);
    test_client_destroy(&s.client);
    free(s.rgb);
    free(s.jpeg);
    return 0;
}
