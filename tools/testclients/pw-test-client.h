/* pw-test-client.h: what LivePush's PipeWire test producers (pw-video-source.c, pw-camera-source.c)
 * share: the colour bars, RRGGBB parsing, the main loop with its signals, a timer and commands read
 * from stdin line by line, the "node ID" announcement, the state changes that start and stop the
 * frame timer, and the SPA_META_Header each buffer carries. Static functions: include it once, in
 * the producer's single C file. */
#ifndef LIVEPUSH_PW_TEST_CLIENT_H
#define LIVEPUSH_PW_TEST_CLIENT_H
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>

/* 8 vertical bars, left to right: white, yellow, cyan, green, magenta, red, blue, black. */
static const uint32_t bar_colors[8] = {0xffffff, 0xffff00, 0x00ffff, 0x00ff00, 0xff00ff, 0xff0000, 0x0000ff, 0x000000};

struct test_client {
    struct pw_main_loop *loop;
    struct pw_stream *stream;
    struct spa_source *timer;
    struct spa_source *input;
    int announced_node;
    char line[256];
    size_t line_length;
    /* the producer's own: its command handler (one line, without the newline) and state */
    void (*command)(void *owner, char *line);
    void *owner;
};

/* "RRGGBB" into 0xRRGGBB; 0, or -1 when it is not six hex digits. */
static int parse_color(const char *text, uint32_t *out) {
    char *end;
    unsigned long value = strtoul(text, &end, 16);
    if (*end != '\0' || strlen(text) != 6) return -1;
    *out = (uint32_t)value;
    return 0;
}

static void test_client_on_input(void *data, int fd, uint32_t mask) {
    struct test_client *c = data;
    (void)mask;
    char chunk[256];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0) {  /* stdin closed: keep producing until a signal (tests may not keep stdin open) */
        pw_loop_destroy_source(pw_main_loop_get_loop(c->loop), c->input);
        c->input = NULL;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (chunk[i] == '\n' || c->line_length == sizeof(c->line) - 1) {
            c->line[c->line_length] = '\0';
            if (strncmp(c->line, "quit", 4) == 0) pw_main_loop_quit(c->loop);
            else c->command(c->owner, c->line);
            c->line_length = 0;
        } else {
            c->line[c->line_length++] = chunk[i];
        }
    }
}

static void test_client_on_signal(void *data, int signal_number) {
    struct test_client *c = data;
    (void)signal_number;
    pw_main_loop_quit(c->loop);
}

/* The loop, SIGINT/SIGTERM quitting it, the frame timer (`on_timeout`, armed by
 * test_client_state_changed) and stdin's commands ("quit" is handled here). Line-buffered stdout. */
static void test_client_init(struct test_client *c, int *argc, char ***argv, spa_source_timer_func_t on_timeout,
                             void *owner, void (*command)(void *owner, char *line)) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    pw_init(argc, argv);
    c->loop = pw_main_loop_new(NULL);
    c->owner = owner;
    c->command = command;
    struct pw_loop *loop = pw_main_loop_get_loop(c->loop);
    pw_loop_add_signal(loop, SIGINT, test_client_on_signal, c);
    pw_loop_add_signal(loop, SIGTERM, test_client_on_signal, c);
    c->timer = pw_loop_add_timer(loop, on_timeout, owner);
    c->input = pw_loop_add_io(loop, STDIN_FILENO, SPA_IO_IN, false, test_client_on_input, c);
}

/* A stream state change: prints "node ID" once the node exists, quits on an error, and runs the
 * frame timer every `interval_ns` while streaming (stopped otherwise). */
static void test_client_state_changed(struct test_client *c, const char *program, enum pw_stream_state state,
                                      const char *error, uint64_t interval_ns) {
    if (!c->announced_node && pw_stream_get_node_id(c->stream) != SPA_ID_INVALID) {
        printf("node %u\n", pw_stream_get_node_id(c->stream));
        c->announced_node = 1;
    }
    if (state == PW_STREAM_STATE_ERROR) {
        fprintf(stderr, "%s: stream error: %s\n", program, error ? error : "?");
        pw_main_loop_quit(c->loop);
    }
    struct pw_loop *loop = pw_main_loop_get_loop(c->loop);
    if (state == PW_STREAM_STATE_STREAMING) {
        struct timespec interval = {(time_t)(interval_ns / 1000000000ULL), (long)(interval_ns % 1000000000ULL)};
        struct timespec start = {0, 1};
        pw_loop_update_timer(loop, c->timer, &start, &interval, false);
    } else {
        pw_loop_update_timer(loop, c->timer, NULL, NULL, false);
    }
}

/* The next free buffer for a frame, or NULL when the consumer holds every buffer (the frame is
 * skipped, counted in *skipped, which the producer prints on exit). */
static struct pw_buffer *test_client_dequeue(struct test_client *c, uint64_t *skipped) {
    struct pw_buffer *b = pw_stream_dequeue_buffer(c->stream);
    if (b == NULL) (*skipped)++;
    return b;
}

/* The buffer's SPA_META_Header, if it has one: pts now (CLOCK_MONOTONIC ns, as a V4L2 source's), `seq`. */
static void test_client_stamp(struct spa_buffer *buf, uint64_t seq) {
    struct spa_meta_header *header = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*header));
    if (header == NULL) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    header->pts = SPA_TIMESPEC_TO_NSEC(&now);
    header->flags = 0;
    header->seq = seq;
    header->dts_offset = 0;
}

/* Stops the stream and the loop, in the reverse order of their making. */
static void test_client_destroy(struct test_client *c) {
    pw_stream_destroy(c->stream);
    pw_main_loop_destroy(c->loop);
    pw_deinit();
}

#endif
