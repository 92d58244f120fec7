/*
 * x11-paint.c: put known pixels on an X display, so that screen-capture tests can assert the
 * captured frame's pixels exactly.  C11 and xcb only.
 *
 *   cc -std=c11 -Wall -Wextra -Werror -O2 tools/testclients/x11-paint.c -o x11-paint -lxcb
 *
 *   x11-paint [--display :N] --geometry WxH+X+Y [--name TEXT] [--override-redirect] PATTERN
 *
 *   solid RRGGBB                     the whole window one colour
 *   checker N RRGGBB RRGGBB          N-pixel squares; the one holding (0,0) has the first colour
 *   square RRGGBB RRGGBB SIZE SPEED  first colour, and a SIZE x SIZE square of the second, top edge
 *                                    (H - SIZE) / 2, left edge 0 in frame 0 then SPEED px further
 *                                    right each frame (30 fps) modulo W; what passes the right edge
 *                                    is drawn wrapped round at the left
 *   bars                             8 equal vertical bars ffffff ffff00 00ffff 00ff00 ff00ff ff0000
 *                                    0000ff 000000; the last one also takes the remainder
 *   timecode RRGGBB RRGGBB SIZE SPEED   (push benchmark) the square pattern stepped at 60 Hz, SPEED px
 *                                    a step, plus a time code redrawn at 240 Hz: see "Time code" below
 *   scroll                           (push benchmark, hard content) the whole window scrolls 2 px a step
 *                                    at 60 Hz: a gradient with light noise and moving blocks, plus the
 *                                    time code (x11-paint-scroll.h)
 *
 * Display: --display, else $DISPLAY; its root visual must be 24-bit TrueColor RGB888 (pixel =
 * 0xRRGGBB), as on Xvfb -screen 0 1920x1080x24.  X, Y may be negative ("+-10+20").  The name
 * (default livepush-test) goes to WM_NAME and _NET_WM_NAME.
 *
 * stdin, one command a line: move X Y | resize W H | pattern PATTERN | quit.  EOF on stdin,
 * SIGTERM and SIGINT also end it: the window is destroyed, exit status 0.
 *
 * stdout, one flushed line each, always after a round trip (what it announces is on screen);
 * positions and sizes are queried from the server, not echoed:
 *   ready window=0x<hex id> x=<X> y=<Y> width=<W> height=<H>   first line, once
 *   moved x=<X> y=<Y> | resized width=<W> height=<H> | painted  after move | resize | pattern
 *   frame <n> x=<left edge>   square only: every 30 fps step, and after ready/resized/painted
 *   error <what>              a bad stdin command (also on stderr); nothing else changes
 *
 * Time code (pattern timecode; the push benchmark's glass-to-receiver clock, decoded by
 * Sources/livepush-bench/TimeCode.swift): a row of 52 blocks of 32 x 32 px whose top-left corner is
 * (32, 32), white (ffffff) = 1, black (000000) = 0: guard 1 0, then the 40 low bits of
 * CLOCK_MONOTONIC in milliseconds taken as it is drawn (most significant first), then CRC-8
 * (polynomial 0x07, initial value 0) of those 40 bits as 5 big-endian bytes, then guard 0 1.  A
 * reader samples each block's centre, thresholds at mid-grey and drops a row whose guards or CRC
 * do not match.  stdout: "timecode x=32 y=32 block=32 blocks=52" after ready/resized/painted; no
 * line per step.  The square moves in the band it occupies; only that band and the code row are
 * copied to the window at each step.
 *
 * Each paint goes to an off-screen pixmap first, then to the window in one CopyArea, so a capture
 * never sees half a frame; Expose repaints from the pixmap.  Exit status: 0 normal end; 1 display
 * cannot be opened, unsuitable visual, X error or lost connection; 2 bad command-line argument.
 * Diagnostics go to stderr, prefixed "x11-paint: ".
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xcb/xcb.h>

#define FRAME_NS (1000000000LL / 30)   /* square animation period */
#define TC_SCENE_NS (1000000000LL / 60)   /* timecode: square step period */
#define TC_CODE_NS (1000000000LL / 240)   /* timecode: code redraw period */
#define TC_X 32                           /* timecode: the row's top-left corner ... */
#define TC_Y 32
#define TC_BLOCK 32                       /* ... the side of a block ... */
#define TC_BITS 40                        /* ... and its content: guard 1 0, 40 bits, CRC-8, guard 0 1 */
#define TC_BLOCKS (2 + TC_BITS + 8 + 2)
#define MAX_DIM 32767                  /* X sizes and coordinates are 16-bit */

enum kind { SOLID, CHECKER, SQUARE, BARS, TIMECODE, SCROLL };

struct pattern {
    enum kind kind;
    uint32_t c1, c2;            /* 0xRRGGBB */
    int cell, size, speed;      /* checker square size; square SIZE and SPEED */
};

struct app {
    xcb_connection_t *c;
    xcb_screen_t *screen;
    xcb_window_t win;
    xcb_pixmap_t pix;           /* the window's contents, w x h */
    xcb_pixmap_t tex;           /* scroll: the texture, twice, tex_w x 2 tex_h */
    int tex_w, tex_h;
    xcb_gcontext_t gc;
    int w, h;
    struct pattern pat;
    long frame;                 /* square: frame number ... */
    int sq_x;                   /* ... and the square's left edge */
    int64_t next_frame;         /* square: CLOCK_MONOTONIC ns of the next step */
    int64_t next_code;          /* timecode: CLOCK_MONOTONIC ns of the next code redraw */
    bool quit;
};

static int sig_pipe[2];         /* self-pipe: the signal handler wakes poll() */

#include "x11-paint-args.h"

/* ------------------------------------------------------------------ drawing */

static void fill(struct app *a, uint32_t colour, const xcb_rectangle_t *r, uint32_t n)
{
    xcb_change_gc(a->c, a->gc, XCB_GC_FOREGROUND, &colour);   /* TrueColor: pixel = 0xRRGGBB */
    xcb_poly_fill_rectangle(a->c, a->pix, a->gc, n, r);
}

/* ---- time code (pattern timecode) */

/* CRC-8, polynomial x^8 + x^2 + x + 1 (0x07), initial value 0, no reflection, no final xor. */
static uint8_t crc8(const uint8_t *p, size_t n)
{
    uint8_t crc = 0;
    while (n--) {
        crc ^= *p++;
        for (int i = 0; i < 8; i++)
            crc = (uint8_t)(crc & 0x80 ? (crc << 1) ^ 0x07 : crc << 1);
    }
    return crc;
}

static void fill(struct app *a, uint32_t colour, const xcb_rectangle_t *r, uint32_t n);

/* The code row for CLOCK_MONOTONIC now, into the pixmap; returns the row's rectangle. */
static xcb_rectangle_t render_code(struct app *a)
{
    uint64_t ms = (uint64_t)(now_ns() / 1000000) & ((1ULL << TC_BITS) - 1);
    uint8_t bytes[5];
    for (int i = 0; i < 5; i++)
        bytes[i] = (uint8_t)(ms >> (8 * (4 - i)));
    uint8_t crc = crc8(bytes, sizeof bytes);
    bool bit[TC_BLOCKS];
    bit[0] = true, bit[1] = false, bit[TC_BLOCKS - 2] = false, bit[TC_BLOCKS - 1] = true;
    for (int i = 0; i < TC_BITS; i++)
        bit[2 + i] = (ms >> (TC_BITS - 1 - i)) & 1;
    for (int i = 0; i < 8; i++)
        bit[2 + TC_BITS + i] = (crc >> (7 - i)) & 1;
    xcb_rectangle_t white[TC_BLOCKS], black[TC_BLOCKS];
    uint32_t nw = 0, nb = 0;
    for (int i = 0; i < TC_BLOCKS; i++) {
        xcb_rectangle_t r = { (int16_t)(TC_X + i * TC_BLOCK), TC_Y, TC_BLOCK, TC_BLOCK };
        if (bit[i])
            white[nw++] = r;
        else
            black[nb++] = r;
    }
    fill(a, 0xffffff, white, nw);
    fill(a, 0x000000, black, nb);
    return (xcb_rectangle_t){ TC_X, TC_Y, TC_BLOCKS * TC_BLOCK, TC_BLOCK };
}

static void present(struct app *a);
#include "x11-paint-scroll.h"

/* Draw the current pattern (and square frame) into the pixmap; nothing on screen yet. */
static void render(struct app *a)
{
    static const uint32_t bar_colours[8] = { 0xffffff, 0xffff00, 0x00ffff, 0x00ff00,
                                             0xff00ff, 0xff0000, 0x0000ff, 0x000000 };
    const struct pattern *p = &a->pat;
    const xcb_rectangle_t all = { 0, 0, (uint16_t)a->w, (uint16_t)a->h };
    xcb_rectangle_t r[512];
    uint32_t n = 0;

    switch (p->kind) {
    case SOLID:
        fill(a, p->c1, &all, 1);
        break;
    case BARS:
        for (int i = 0, bw = a->w / 8; i < 8; i++) {
            r[0] = (xcb_rectangle_t){ (int16_t)(i * bw), 0, (uint16_t)(i == 7 ? a->w - 7 * bw : bw), (uint16_t)a->h };
            if (r[0].width)
                fill(a, bar_colours[i], r, 1);
        }
        break;
    case CHECKER:   /* second colour everywhere, then the first colour's squares in batches */
        fill(a, p->c2, &all, 1);
        for (int y = 0, c = p->cell; y < a->h; y += c)
            for (int x = (y / c % 2) * c; x < a->w; x += 2 * c) {
                r[n++] = (xcb_rectangle_t){ (int16_t)x, (int16_t)y, (uint16_t)c, (uint16_t)c };
                if (n == sizeof r / sizeof r[0])
                    fill(a, p->c1, r, n), n = 0;
            }
        if (n)
            fill(a, p->c1, r, n);
        break;
    case SQUARE:
    case TIMECODE: {
        int top = (a->h - p->size) / 2, x = a->sq_x;
        int first = p->size < a->w - x ? p->size : a->w - x;   /* the part left of the right edge */
        r[0] = (xcb_rectangle_t){ (int16_t)x, (int16_t)top, (uint16_t)first, (uint16_t)p->size };
        r[1] = (xcb_rectangle_t){ 0, (int16_t)top, (uint16_t)(p->size - first), (uint16_t)p->size };
        fill(a, p->c1, &all, 1);
        fill(a, p->c2, r, r[1].width ? 2 : 1);
        if (p->kind == TIMECODE)
            render_code(a);
        break;
    }
    case SCROLL:
        scroll_render(a);
        break;
    }
}

/* Part of the pixmap to the window, in one request. */
static void present_rect(struct app *a, xcb_rectangle_t r)
{
    xcb_copy_area(a->c, a->pix, a->win, a->gc, r.x, r.y, r.x, r.y, r.width, r.height);
}

/* timecode: one 60 Hz step of the square, redrawing only the band it moves in. */
static void step_timecode_square(struct app *a)
{
    const struct pattern *p = &a->pat;
    int top = (a->h - p->size) / 2, x = a->sq_x;
    int first = p->size < a->w - x ? p->size : a->w - x;
    xcb_rectangle_t band = { 0, (int16_t)top, (uint16_t)a->w, (uint16_t)p->size }, r[2];
    r[0] = (xcb_rectangle_t){ (int16_t)x, (int16_t)top, (uint16_t)first, (uint16_t)p->size };
    r[1] = (xcb_rectangle_t){ 0, (int16_t)top, (uint16_t)(p->size - first), (uint16_t)p->size };
    fill(a, p->c1, &band, 1);
    fill(a, p->c2, r, r[1].width ? 2 : 1);
    present_rect(a, band);
}

/* Pixmap to window in one request, so never a half-drawn frame on screen. */
static void present(struct app *a)
{
    xcb_copy_area(a->c, a->pix, a->win, a->gc, 0, 0, 0, 0, (uint16_t)a->w, (uint16_t)a->h);
}

/* A round trip: once its reply is back, every earlier request has been carried out. */
static void sync_server(struct app *a)
{
    xcb_get_input_focus_reply_t *r = xcb_get_input_focus_reply(a->c, xcb_get_input_focus(a->c), NULL);
    if (!r)
        fail(1, "lost the connection to the X server");
    free(r);
}

/* Where the window really is on the root, and its size; a round trip as well. */
static void where(struct app *a, int *x, int *y, int *w, int *h)
{
    xcb_get_geometry_cookie_t gc = xcb_get_geometry(a->c, a->win);
    xcb_translate_coordinates_cookie_t tc = xcb_translate_coordinates(a->c, a->win, a->screen->root, 0, 0);
    xcb_get_geometry_reply_t *g = xcb_get_geometry_reply(a->c, gc, NULL);
    xcb_translate_coordinates_reply_t *t = xcb_translate_coordinates_reply(a->c, tc, NULL);
    if (!g || !t)
        fail(1, "lost the connection to the X server");
    *x = t->dst_x, *y = t->dst_y, *w = g->width, *h = g->height;
    free(g);
    free(t);
}

static void say_frame(struct app *a)
{
    if (a->pat.kind == SQUARE)
        say("frame %ld x=%d", a->frame, a->sq_x);
    else if (a->pat.kind == TIMECODE || a->pat.kind == SCROLL)
        say("timecode x=%d y=%d block=%d blocks=%d", TC_X, TC_Y, TC_BLOCK, TC_BLOCKS);
}

/* (Re)create the pixmap at the window's current size. */
static void new_pixmap(struct app *a)
{
    if (a->pix)
        xcb_free_pixmap(a->c, a->pix);
    a->pix = xcb_generate_id(a->c);
    xcb_create_pixmap(a->c, a->screen->root_depth, a->pix, a->win, (uint16_t)a->w, (uint16_t)a->h);
}

/* Put the current pattern on screen from its start (square: frame 0, x = 0). */
static void restart_pattern(struct app *a)
{
    a->frame = 0;
    a->sq_x = 0;
    a->next_frame = now_ns() + (a->pat.kind == TIMECODE || a->pat.kind == SCROLL ? TC_SCENE_NS : FRAME_NS);
    a->next_code = now_ns() + TC_CODE_NS;
    render(a);
    present(a);
}

/* ------------------------------------------------------------------ events and commands */

static void handle_x_events(struct app *a)
{
    xcb_generic_event_t *ev;
    while ((ev = xcb_poll_for_event(a->c))) {
        uint8_t type = ev->response_type & 0x7f;
        if (type == 0) {
            xcb_generic_error_t *e = (xcb_generic_error_t *)ev;
            fail(1, "X error %u (request %u.%u, resource 0x%x)", e->error_code, e->major_code,
                 e->minor_code, e->resource_id);
        }
        if (type == XCB_EXPOSE && ((xcb_expose_event_t *)ev)->count == 0)
            present(a);   /* last of a series: repaint everything from the pixmap */
        free(ev);
    }
    if (xcb_connection_has_error(a->c))
        fail(1, "lost the connection to the X server");
}

static void command(struct app *a, char *line)
{
    char *w[16], err[256];
    int n = 0, x, y, w2, h2;
    for (char *t = strtok(line, " \t\r"); t && n < 16; t = strtok(NULL, " \t\r"))
        w[n++] = t;

    if (n == 0)
        return;
    else if (!strcmp(w[0], "quit"))
        a->quit = true;
    else if (!strcmp(w[0], "move")) {
        if (n != 3 || !parse_int(w[1], -MAX_DIM, MAX_DIM, &x) || !parse_int(w[2], -MAX_DIM, MAX_DIM, &y)) {
            complain("bad 'move' (want move X Y, integers in -32767..32767)");
            return;
        }
        uint32_t v[2] = { (uint32_t)x, (uint32_t)y };   /* INT16 travels sign-extended */
        xcb_configure_window(a->c, a->win, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, v);
        present(a);   /* whatever was off screen before the move is now painted */
        where(a, &x, &y, &w2, &h2);
        say("moved x=%d y=%d", x, y);
    } else if (!strcmp(w[0], "resize")) {
        if (n != 3 || !parse_int(w[1], 1, MAX_DIM, &w2) || !parse_int(w[2], 1, MAX_DIM, &h2)) {
            complain("bad 'resize' (want resize W H, integers in 1..32767)");
            return;
        }
        uint32_t v[2] = { (uint32_t)w2, (uint32_t)h2 };
        xcb_configure_window(a->c, a->win, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, v);
        a->w = w2, a->h = h2, a->sq_x %= w2;
        new_pixmap(a);
        render(a);
        present(a);
        where(a, &x, &y, &w2, &h2);
        say("resized width=%d height=%d", w2, h2);
        say_frame(a);
    } else if (!strcmp(w[0], "pattern")) {
        if (!parse_pattern(n - 1, w + 1, &a->pat, err, sizeof err)) {
            complain(err);
            return;
        }
        restart_pattern(a);
        sync_server(a);
        say("painted");
        say_frame(a);
    } else {
        snprintf(err, sizeof err, "unknown command '%s' (want move, resize, pattern or quit)", w[0]);
        complain(err);
    }
}

/* Read what stdin has and run each complete line.  EOF ends the program. */
static void read_stdin(struct app *a)
{
    static char buf[4096];
    static size_t len;
    ssize_t r = read(STDIN_FILENO, buf + len, sizeof buf - 1 - len);
    if (r < 0 && errno == EINTR)
        return;
    if (r <= 0) {   /* EOF or a dead stdin: run an unterminated last line, then end */
        buf[len] = '\0';
        command(a, buf);
        a->quit = true;
        return;
    }
    len += (size_t)r;
    for (char *nl; !a->quit && (nl = memchr(buf, '\n', len));) {
        *nl = '\0';
        command(a, buf);
        len -= (size_t)(nl + 1 - buf);
        memmove(buf, nl + 1, len);
    }
    if (len == sizeof buf - 1) {
        complain("stdin line too long, dropped");
        len = 0;
    }
}

static void on_signal(int sig)
{
    int saved = errno;
    ssize_t r = write(sig_pipe[1], "x", 1);
    (void)r, (void)sig;
    errno = saved;
}

/* ------------------------------------------------------------------ setup and main loop */

static xcb_atom_t atom(xcb_connection_t *c, const char *name)
{
    xcb_intern_atom_reply_t *r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, (uint16_t)strlen(name), name), NULL);
    if (!r)
        fail(1, "cannot intern atom %s", name);
    xcb_atom_t at = r->atom;
    free(r);
    return at;
}

/* Connect, and check that pixel values are 0xRRGGBB on this screen. */
static void connect_display(struct app *a, const char *display)
{
    int num;
    a->c = xcb_connect(display, &num);
    if (xcb_connection_has_error(a->c)) {
        const char *env = getenv("DISPLAY");
        fail(1, "cannot open display '%s'", display ? display : env && *env ? env : "(DISPLAY unset)");
    }
    xcb_screen_iterator_t it = xcb_setup_roots_iterator(xcb_get_setup(a->c));
    for (; it.rem > 1 && num > 0; num--)
        xcb_screen_next(&it);
    a->screen = it.data;
    xcb_visualtype_t *vis = NULL;
    for (xcb_depth_iterator_t d = xcb_screen_allowed_depths_iterator(a->screen); d.rem; xcb_depth_next(&d))
        for (xcb_visualtype_iterator_t v = xcb_depth_visuals_iterator(d.data); v.rem; xcb_visualtype_next(&v))
            if (v.data->visual_id == a->screen->root_visual)
                vis = v.data;
    if (a->screen->root_depth != 24 || !vis || vis->_class != XCB_VISUAL_CLASS_TRUE_COLOR ||
        vis->red_mask != 0xff0000 || vis->green_mask != 0x00ff00 || vis->blue_mask != 0x0000ff)
        fail(1, "the root visual is not 24-bit TrueColor RGB888 (start Xvfb with -screen 0 WxHx24)");
}

int main(int argc, char **argv)
{
    const char *display = NULL, *name = "livepush-test", *geometry = NULL;
    bool override = false;
    int i, x, y;
    char err[256];
    struct app a = { 0 };

    for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
        const char **value = !strcmp(argv[i], "--display") ? &display : !strcmp(argv[i], "--geometry") ? &geometry
                             : !strcmp(argv[i], "--name") ? &name : NULL;
        if (value && i + 1 < argc)
            *value = argv[++i];
        else if (value)
            fail(2, "option '%s' needs a value", argv[i]);
        else if (!strcmp(argv[i], "--override-redirect"))
            override = true;
        else
            fail(2, "unknown option '%s'; usage: x11-paint [--display :N] --geometry WxH+X+Y [--name TEXT] "
                    "[--override-redirect] PATTERN", argv[i]);
    }
    if (!geometry)
        fail(2, "--geometry WxH+X+Y is required");
    if (!parse_geometry(geometry, &a.w, &a.h, &x, &y))
        fail(2, "bad --geometry '%s' (want WxH+X+Y, e.g. 640x480+100+50)", geometry);
    if (!parse_pattern(argc - i, argv + i, &a.pat, err, sizeof err))
        fail(2, "%s", err);

    /* Were fd 0 closed, xcb's socket could land on it and be read as stdin. */
    if (fcntl(STDIN_FILENO, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != STDIN_FILENO)
        fail(1, "cannot open /dev/null as stdin");
    connect_display(&a, display);

    /* The window: no background (every pixel is ours to paint), exposure and map events. */
    a.win = xcb_generate_id(a.c);
    uint32_t values[3] = { XCB_BACK_PIXMAP_NONE, override,
                           XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY };
    xcb_create_window(a.c, XCB_COPY_FROM_PARENT, a.win, a.screen->root, (int16_t)x, (int16_t)y,
                      (uint16_t)a.w, (uint16_t)a.h, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT, a.screen->root_visual,
                      XCB_CW_BACK_PIXMAP | XCB_CW_OVERRIDE_REDIRECT | XCB_CW_EVENT_MASK, values);

    /* Names, and WM_NORMAL_HINTS asking any window manager to keep the geometry: 18 CARD32,
     * flags USPosition|USSize|PPosition|PSize, then x, y, width, height, the rest unused. */
    uint32_t len = (uint32_t)strlen(name), hints[18] = { 1 | 2 | 4 | 8, (uint32_t)x, (uint32_t)y, (uint32_t)a.w, (uint32_t)a.h };
    xcb_change_property(a.c, XCB_PROP_MODE_REPLACE, a.win, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8, len, name);
    xcb_change_property(a.c, XCB_PROP_MODE_REPLACE, a.win, atom(a.c, "_NET_WM_NAME"), atom(a.c, "UTF8_STRING"),
                        8, len, name);
    xcb_change_property(a.c, XCB_PROP_MODE_REPLACE, a.win, XCB_ATOM_WM_NORMAL_HINTS, XCB_ATOM_WM_SIZE_HINTS,
                        32, 18, hints);

    a.gc = xcb_generate_id(a.c);
    uint32_t no_exposures = 0;   /* no GraphicsExpose/NoExpose events from CopyArea */
    xcb_create_gc(a.c, a.gc, a.win, XCB_GC_GRAPHICS_EXPOSURES, &no_exposures);
    new_pixmap(&a);

    /* Map, and wait for MapNotify: the root is mapped, so the window is then viewable. */
    xcb_map_window(a.c, a.win);
    xcb_flush(a.c);
    for (uint8_t type = 0; type != XCB_MAP_NOTIFY;) {
        xcb_generic_event_t *ev = xcb_wait_for_event(a.c);
        if (!ev)
            fail(1, "lost the connection to the X server");
        if ((type = ev->response_type & 0x7f) == 0)
            fail(1, "X error %u while creating the window", ((xcb_generic_error_t *)ev)->error_code);
        free(ev);
    }

    /* First paint, a round trip, and only then the announcement. */
    int rx, ry, rw, rh;
    restart_pattern(&a);
    where(&a, &rx, &ry, &rw, &rh);
    say("ready window=0x%x x=%d y=%d width=%d height=%d", a.win, rx, ry, rw, rh);
    say_frame(&a);

    /* Signal handlers only write to a pipe that poll() watches: none is lost between checks. */
    if (pipe(sig_pipe) < 0)
        fail(1, "pipe: %s", strerror(errno));
    fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);   /* a reader that went away must not kill us before cleanup */

    while (!a.quit) {
        handle_x_events(&a);   /* also the events xcb queued during round trips */
        xcb_flush(a.c);
        struct pollfd fds[3] = { { xcb_get_file_descriptor(a.c), POLLIN, 0 },
                                 { STDIN_FILENO, POLLIN, 0 }, { sig_pipe[0], POLLIN, 0 } };
        int timeout = -1;   /* static patterns: wait for input only */
        if (a.pat.kind == SQUARE) {
            int64_t left = a.next_frame - now_ns();
            timeout = left <= 0 ? 0 : left >= 33000000 ? 33 : (int)((left + 999999) / 1000000);
        } else if (a.pat.kind == TIMECODE || a.pat.kind == SCROLL) {
            int64_t next = a.next_code < a.next_frame ? a.next_code : a.next_frame, left = next - now_ns();
            timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
        }
        if (poll(fds, 3, timeout) < 0 && errno != EINTR)
            fail(1, "poll: %s", strerror(errno));
        if (fds[2].revents)
            break;   /* SIGTERM or SIGINT */
        if (fds[1].revents)
            read_stdin(&a);
        if (!a.quit && a.pat.kind == SQUARE && now_ns() >= a.next_frame) {
            a.frame++;
            a.sq_x = (int)((a.sq_x + (long)a.pat.speed) % a.w);
            a.next_frame += FRAME_NS;
            if (a.next_frame < now_ns())   /* fell behind: no burst of catch-up frames */
                a.next_frame = now_ns() + FRAME_NS;
            render(&a);
            present(&a);
            sync_server(&a);
            say_frame(&a);
        }
        if (!a.quit && (a.pat.kind == TIMECODE || a.pat.kind == SCROLL)) {
            int64_t now = now_ns();
            if (now >= a.next_frame) {   /* the square's step first: the code drawn after it is newer */
                a.frame++;
                a.sq_x = (int)((a.sq_x + (long)a.pat.speed) % a.w);
                a.next_frame = a.next_frame + TC_SCENE_NS < now ? now + TC_SCENE_NS : a.next_frame + TC_SCENE_NS;
                if (a.pat.kind == SCROLL)
                    step_scroll(&a);
                else
                    step_timecode_square(&a);
            }
            if (now >= a.next_code) {
                a.next_code = a.next_code + TC_CODE_NS < now ? now + TC_CODE_NS : a.next_code + TC_CODE_NS;
                present_rect(&a, render_code(&a));
                sync_server(&a);   /* on screen now, so the code it shows is at most one period old */
            }
        }
    }

    /* Tidy end: the window is off the screen before we exit. */
    xcb_free_pixmap(a.c, a.pix);
    if (a.tex)
        xcb_free_pixmap(a.c, a.tex);
    xcb_free_gc(a.c, a.gc);
    xcb_destroy_window(a.c, a.win);
    sync_server(&a);
    xcb_disconnect(a.c);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    return 0;
}
