// Measures the MJPEG decoders a camera helper could use, on a 1280x720 4:2:2 JPEG like a webcam's
// (colour gradients and a checkerboard, quality 85, encoded here by libjpeg-turbo), each into a
// BGRx picture as the ring slot wants it: CPU time per frame (CLOCK_PROCESS_CPUTIME_ID, median of
// 5 rounds of 100 frames) and the colour of one pixel against the source's. Then what linking
// libavcodec costs a process that does nothing else: its resident set and start time (this file
// built a second time with -DPLAIN, without libavcodec, to compare).
// Build and run: tools/mjpeg-compare/run
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void print_rss(const char *what) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) printf("%s %s", what, line);
    if (f) fclose(f);
}

#ifdef PLAIN
int main(void) {
    print_rss("without libavcodec:");
    return 0;
}
#else
#include <jpeglib.h>
#include <libavcodec/avcodec.h>
#include <libyuv.h>

enum { W = 1280, H = 720, FRAMES = 100, ROUNDS = 5 };

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned char rgb[W * H * 3], bgrx[W * H * 4];

static void source_pixel(int x, int y, unsigned char *p) {
    p[0] = (unsigned char)(x * 255 / W);
    p[1] = (unsigned char)(y * 255 / H);
    p[2] = (unsigned char)(((x / 16 + y / 16) & 1) * 200);
}

static void decode_libjpeg(const unsigned char *jpg, unsigned long size) {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr e;
    d.err = jpeg_std_error(&e);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, jpg, size);
    jpeg_read_header(&d, TRUE);
    d.out_color_space = JCS_EXT_BGRX;
    jpeg_start_decompress(&d);
    while (d.output_scanline < d.output_height) {
        JSAMPROW row = bgrx + (size_t)d.output_scanline * W * 4;
        jpeg_read_scanlines(&d, &row, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
}

static AVCodecContext *context;
static AVPacket *packet;
static AVFrame *frame;

static void decode_libavcodec(const unsigned char *jpg, unsigned long size) {
    packet->data = (uint8_t *)jpg;
    packet->size = (int)size;
    avcodec_send_packet(context, packet);
    avcodec_receive_frame(context, frame);
    /* yuvj422p: JPEG's full range, so libyuv's J (JPEG) conversion */
    J422ToARGB(frame->data[0], frame->linesize[0], frame->data[1], frame->linesize[1], frame->data[2],
               frame->linesize[2], bgrx, W * 4, W, H);
}

static void decode_libyuv(const unsigned char *jpg, unsigned long size) { MJPGToARGB(jpg, size, bgrx, W * 4, W, H, W, H); }

static void measure(const char *name, void (*decode)(const unsigned char *, unsigned long), const unsigned char *jpg,
                    unsigned long size) {
    double rounds[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double start = cpu_ms();
        for (int i = 0; i < FRAMES; i++) decode(jpg, size);
        rounds[r] = (cpu_ms() - start) / FRAMES;
    }
    qsort(rounds, ROUNDS, sizeof(double), compare_doubles);
    int x = 900, y = 500;
    unsigned char expected[3];
    source_pixel(x, y, expected);
    const unsigned char *p = bgrx + ((size_t)y * W + x) * 4;
    printf("%-38s cpu_ms_per_frame=%.2f pixel=%u,%u,%u (source %u,%u,%u)\n", name, rounds[ROUNDS / 2], p[2], p[1], p[0],
           expected[0], expected[1], expected[2]);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--rss-only-avcodec") == 0) {
        if (avcodec_find_decoder(AV_CODEC_ID_MJPEG) == NULL) return 1;
        print_rss("with libavcodec:   ");
        return 0;
    }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) source_pixel(x, y, rgb + ((size_t)y * W + x) * 3);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *jpg = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &jpg, &size);
    c.image_width = W;
    c.image_height = H;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 85, TRUE);
    c.comp_info[0].h_samp_factor = 2;  /* 4:2:2 */
    c.comp_info[0].v_samp_factor = 1;
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < H) {
        JSAMPROW row = rgb + (size_t)c.next_scanline * W * 3;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    printf("1280x720 4:2:2 JPEG of %lu bytes\n", size);
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG);
    context = avcodec_alloc_context3(codec);
    context->thread_count = 1;
    avcodec_open2(context, codec, NULL);
    packet = av_packet_alloc();
    frame = av_frame_alloc();
    measure("libjpeg-turbo to BGRx", decode_libjpeg, jpg, size);
    measure("libavcodec mjpeg + libyuv J422ToARGB", decode_libavcodec, jpg, size);
    measure("libyuv MJPGToARGB", decode_libyuv, jpg, size);
    return 0;
}
#endif
