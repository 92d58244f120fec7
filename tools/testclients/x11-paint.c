/*
 * x11-paint.c: put known pixels on an X display so that screen-capture tests can
 * assert the captured frame's pixels exactly.  C11, xcb only.
 *
 *     cc -std=c11 -Wall -Wextra -Werror -O2 tools/testclients/x11-paint.c -o x11-paint -lxcb
 *
 * Usage:
 *
 *     x11-paint [--display :N] --geometry WxH+X+Y [--name TEXT] [--override-redirect] PATTERN
 *
 *     PATTERN  solid RRGGBB                       the whole window one colour
 *              checker N RRGGBB RRGGBB            N-pixel squares; the one holding (0,0) is the first
 *              square RRGGBB RRGGBB SIZE SPEED    background, and a SIZE x SIZE square whose left edge
 *                                                 is x = (n * SPEED) mod W in frame n (30 fps), top edge
 *                                                 y = (H - SIZE) / 2; the part past the right edge is
 *                                                 drawn wrapped round at the left
 *              bars                               8 equal vertical bars, white yellow cyan green
 *                                                 magenta red blue black; the last takes the remainder
 *
 * The display is --display, else $DISPLAY.  Window X and Y may be negative ("+-10+20").
 * The root visual must be 24-bit TrueColor (pixel value = 0xRRGGBB), as on Xvfb ...x24.
 *
 * stdin, one command a line:  move X Y | resize W H | pattern PATTERN | quit
 * EOF on stdin, SIGTERM and SIGINT also end it (window destroyed, exit 0).
 *
 * stdout, one line each, flushed; every line is printed only after a round trip to the
 * server, so the pixels it announces are in the framebuffer:
 *
 *     ready window=0x<hex id> x=<X> y=<Y> width=<W> height=<H>   once, after the first paint
 *     moved x=<X> y=<Y>                                           after "move"
 *     resized width=<W> height=<H>                                after "resize" (repainted)
 *     painted                                                     after "pattern"
 *     frame <n> x=<left edge>      square only: after each 30 fps step, and right after
 *                                  ready/painted/resized (frame 0 is the first)
 *     error <what>                 a bad stdin command (also on stderr); nothing else happens
 *
 * Positions in ready/moved are where the window really is on the root (queried, not echoed).
 * Every pattern is drawn into an off-screen pixmap and copied to the window in one request,
 * so a capture never sees a half-drawn frame.
 *
 * Exit status: 0 normal end; 1 display cannot be opened, unsuitable visual, X error or lost
 * connection; 2 bad command-line argument.  Diagnostics go to stderr, prefixed "x11-paint: ".
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#define MAX_DIM 32767                  /* X window sizes and coordinates are 16-bit */

enum kind { SOLID, CHECKER, SQUARE, BARS };

struct pattern {
    enum kind kind;
    uint32_t c1, c2;    /* 0xRRGGBB */
    int cell;           /* checker: square size */
    int size, speed;    /* square */
};

struct app {
    xcb_connection_t *c;
    xcb_screen_t *screen;
    xcb_window_t win;
    xcb_pixmap_t pix;   /* off-screen copy of the window's contents, w x h */
    xcb_gcontext_t gc;
    int w, h;
    struct pattern pat;
    long frame;         /* square: frame number n ... */
    int sq_x;           /* ... and the square's left edge in it */
    int64_t next_frame; /* square: CLOCK_MONOTONIC ns of the next step */
    bool quit;
};

static int sig_pipe[2] = { -1, -1 };   /* self-pipe: the signal handler wakes poll() */

/* ---------------------------------------------------------------- small helpers */

static void fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("x11-paint: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

/* One line to stdout, flushed at once: the tests read it through a pipe. */
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Whole-string decimal integer in [min, max]. */
static bool parse_int(const char *s, long min, long max, int *out)
{
    char *end;
    if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return false;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}

/* Exactly six hex digits, RRGGBB. */
static bool parse_colour(const char *s, uint32_t *out)
{
    if (strlen(s) != 6)
        return false;
    for (int i = 0; i < 6; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    *out = (uint32_t)strtoul(s, NULL, 16);
    return true;
}

/* WxH+X+Y; X and Y may carry a minus sign after the plus. */
static bool parse_geometry(const char *s, int *w, int *h, int *x, int *y)
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return false;
    strcpy(buf, s);
    char *px = strchr(buf, 'x'), *p1 = strchr(buf, '+'), *p2 = p1 ? strchr(p1 + 1, '+') : NULL;
    if (!px || !p1 || !p2 || px > p1)
        return false;
    *px = *p1 = *p2 = '\0';
    return parse_int(buf, 1, MAX_DIM, w) && parse_int(px + 1, 1, MAX_DIM, h) &&
           parse_int(p1 + 1, -MAX_DIM, MAX_DIM, x) && parse_int(p2 + 1, -MAX_DIM, MAX_DIM, y);
}

/* PATTERN from words a[0..n-1]; on failure a message naming the bad word goes to err. */
static bool parse_pattern(int n, char **a, struct pattern *p, char *err, size_t errlen)
{
    static const char *names[] = { "solid", "checker", "square", "bars" };
    static const int nwords[] = { 2, 4, 5, 1 };
    struct pattern q = { 0 };
    int k;

    if (n < 1) {
        snprintf(err, errlen, "missing PATTERN (solid, checker, square or bars)");
        return false;
    }
    for (k = 0; k < 4 && strcmp(a[0], names[k]) != 0; k++)
        ;
    if (k == 4) {
        snprintf(err, errlen, "unknown pattern '%s' (want solid, checker, square or bars)", a[0]);
        return false;
    }
    if (n != nwords[k]) {
        snprintf(err, errlen, "pattern '%s' takes %d argument(s), got %d", a[0], nwords[k] - 1, n - 1);
        return false;
    }
    q.kind = (enum kind)k;
    const char *bad = NULL, *want = NULL;
    if (k == SOLID) {
        if (!parse_colour(a[1], &q.c1)) bad = a[1], want = "RRGGBB hex colour";
    } else if (k == CHECKER) {
        if (!parse_int(a[1], 1, MAX_DIM, &q.cell)) bad = a[1], want = "square size 1..32767";
        else if (!parse_colour(a[2], &q.c1)) bad = a[2], want = "RRGGBB hex colour";
        else if (!parse_colour(a[3], &q.c2)) bad = a[3], want = "RRGGBB hex colour";
    } else if (k == SQUARE) {
        if (!parse_colour(a[1], &q.c1)) bad = a[1], want = "RRGGBB hex colour";
        else if (!parse_colour(a[2], &q.c2)) bad = a[2], want = "RRGGBB hex colour";
        else if (!parse_int(a[3], 1, MAX_DIM, &q.size)) bad = a[3], want = "SIZE 1..32767";
        else if (!parse_int(a[4], 0, MAX_DIM, &q.speed)) bad = a[4], want = "SPEED 0..32767";
    }
    if (bad) {
        snprintf(err, errlen, "pattern '%s': bad argument '%s' (want %s)", a[0], bad, want);
        return false;
    }
    *p = q;
    return true;
}

/* ---------------------------------------------------------------- drawing */

static void fill(struct app *a, uint32_t colour, const xcb_rectangle_t *r, uint32_t n)
{
    xcb_change_gc(a->c, a->gc, XCB_GC_FOREGROUND, &colour);
    xcb_poly_fill_rectangle(a->c, a->pix, a->gc, n, r);
}

/* Draw the current pattern into the pixmap (not yet on screen). */
static void render(struct app *a)
{
    const struct pattern *p = &a->pat;
    const xcb_rectangle_t all = { 0, 0, (uint16_t)a->w, (uint16_t)a->h };

    switch (p->kind) {
    case SOLID:
        fill(a, p->c1, &all, 1);
        break;
    case BARS: {
        static const uint32_t colours[8] = { 0xffffff, 0xffff00, 0x00ffff, 0x00ff00,
                                             0xff00ff, 0xff0000, 0x0000ff, 0x000000 };
        int bw = a->w / 8;
        for (int i = 0; i < 8; i++) {
            xcb_rectangle_t r = { (int16_t)(i * bw), 0, (uint16_t)(i == 7 ? a->w - 7 * bw : bw),
                                  (uint16_t)a->h };
            if (r.width)
                fill(a, colours[i], &r, 1);
        }
        break;
    }
    case CHECKER: {
        /* Second colour everywhere, then the first-colour squares in batches. */
        xcb_rectangle_t buf[512];
        uint32_t nb = 0;
        int n = p->cell;
        fill(a, p->c2, &all, 1);
        for (int y = 0; y < a->h; y += n) {
            for (int x = ((y / n) & 1) * n; x < a->w; x += 2 * n) {
                buf[nb++] = (xcb_rectangle_t){ (int16_t)x, (int16_t)y, (uint16_t)n, (uint16_t)n };
                if (nb == sizeof buf / sizeof buf[0]) {
                    fill(a, p->c1, buf, nb);
                    nb = 0;
                }
            }
        }
        if (nb)
            fill(a, p->c1, buf, nb);
        break;
    }
    case SQUARE: {
        int top = (a->h - p->size) / 2, x = a->sq_x;
        int first = p->size < a->w - x ? p->size : a->w - x;   /* part left of the right edge */
        xcb_rectangle_t r[2] = {
            { (int16_t)x, (int16_t)top, (uint16_t)first, (uint16_t)p->size },
            { 0, (int16_t)top, (uint16_t)(p->size - first), (uint16_t)p->size },   /* wrapped */
        };
        fill(a, p->c1, &all, 1);
        fill(a, p->c2, r, r[1].width ? 2 : 1);
        break;
    }
    }
}

/* Copy the pixmap onto the window: one request, so never a half-drawn frame. */
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

/* Where the window really is on the root, and its size (also a round trip). */
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
}

/* (Re)create the pixmap at the window's size. */
static void new_pixmap(struct app *a)
{
    if (a->pix)
        xcb_free_pixmap(a->c, a->pix);
    a->pix = xcb_generate_id(a->c);
    xcb_create_pixmap(a->c, a->screen->root_depth, a->pix, a->win, (uint16_t)a->w, (uint16_t)a->h);
}

/* Start the pattern afresh (square: frame 0, x = 0) and put it on screen. */
static void restart_pattern(struct app *a)
{
    a->frame = 0;
    a->sq_x = 0;
    a->next_frame = now_ns() + FRAME_NS;
    render(a);
    present(a);
}

/* ---------------------------------------------------------------- events and commands */

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
        /* Repaint once the last rectangle of a series has arrived; the pixmap holds it all. */
        if (type == XCB_EXPOSE && ((xcb_expose_event_t *)ev)->count == 0) {
            present(a);
            xcb_flush(a->c);
        }
        free(ev);
    }
    if (xcb_connection_has_error(a->c))
        fail(1, "lost the connection to the X server");
}

static void command(struct app *a, char *line)
{
    char *w[16], err[256];
    int n = 0, x, y;
    for (char *t = strtok(line, " \t\r"); t && n < 16; t = strtok(NULL, " \t\r"))
        w[n++] = t;
    if (n == 0)
        return;

    if (!strcmp(w[0], "quit") && n == 1) {
        a->quit = true;
        return;
    }
    if (!strcmp(w[0], "move") && n == 3 && parse_int(w[1], -MAX_DIM, MAX_DIM, &x) &&
        parse_int(w[2], -MAX_DIM, MAX_DIM, &y)) {
        uint32_t v[2] = { (uint32_t)x, (uint32_t)y };
        int ww, hh;
        xcb_configure_window(a->c, a->win, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, v);
        present(a);   /* cover any part that was off screen before the move */
        where(a, &x, &y, &ww, &hh);
        say("moved x=%d y=%d", x, y);
        return;
    }
    if (!strcmp(w[0], "resize") && n == 3 && parse_int(w[1], 1, MAX_DIM, &x) &&
        parse_int(w[2], 1, MAX_DIM, &y)) {
        uint32_t v[2] = { (uint32_t)x, (uint32_t)y };
        int xx, yy;
        xcb_configure_window(a->c, a->win, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, v);
        a->w = x, a->h = y;
        a->sq_x %= a->w;
        new_pixmap(a);
        render(a);
        present(a);
        where(a, &xx, &yy, &x, &y);
        say("resized width=%d height=%d", x, y);
        say_frame(a);
        return;
    }
    if (!strcmp(w[0], "pattern")) {
        if (!parse_pattern(n - 1, w + 1, &a->pat, err, sizeof err)) {
            fprintf(stderr, "x11-paint: %s\n", err);
            say("error %s", err);
            return;
        }
        restart_pattern(a);
        sync_server(a);
        say("painted");
        say_frame(a);
        return;
    }
    fprintf(stderr, "x11-paint: bad command '%s' (want move X Y, resize W H, pattern ..., quit)\n", w[0]);
    say("error bad command '%s'", w[0]);
}

/* Read what stdin has; run each complete line.  EOF ends the program. */
static void read_stdin(struct app *a)
{
    static char buf[4096];
    static size_t len;
    ssize_t r = read(STDIN_FILENO, buf + len, sizeof buf - 1 - len);
    if (r < 0 && errno == EINTR)
        return;
    if (r <= 0) {             /* EOF (or a dead stdin): run any unterminated last line, then end */
        buf[len] = '\0';
        command(a, buf);
        len = 0;
        a->quit = true;
        return;
    }
    len += (size_t)r;
    char *nl;
    while (!a->quit && (nl = memchr(buf, '\n', len))) {
        *nl = '\0';
        command(a, buf);
        len -= (size_t)(nl + 1 - buf);
        memmove(buf, nl + 1, len);
    }
    if (len == sizeof buf - 1) {
        fprintf(stderr, "x11-paint: stdin line too long, dropped\n");
        say("error line too long");
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

/* ---------------------------------------------------------------- setup and main loop */

static void usage(void)
{
    fprintf(stderr,
            "usage: x11-paint [--display :N] --geometry WxH+X+Y [--name TEXT] [--override-redirect] PATTERN\n"
            "PATTERN: solid RRGGBB | checker N RRGGBB RRGGBB | square RRGGBB RRGGBB SIZE SPEED | bars\n");
}

static xcb_atom_t atom(xcb_connection_t *c, const char *name)
{
    xcb_intern_atom_reply_t *r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, (uint16_t)strlen(name), name), NULL);
    if (!r)
        fail(1, "cannot intern atom %s", name);
    xcb_atom_t at = r->atom;
    free(r);
    return at;
}

int main(int argc, char **argv)
{
    const char *display = NULL, *name = "livepush-test", *geometry = NULL;
    bool override = false;
    int i, x = 0, y = 0;
    char err[256];
    struct app a = { 0 };

    for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        bool has_value = i + 1 < argc;
        if (!strcmp(argv[i], "--help")) {
            usage();
            return 0;
        } else if (!strcmp(argv[i], "--override-redirect")) {
            override = true;
        } else if (!strcmp(argv[i], "--display") && has_value) {
            display = argv[++i];
        } else if (!strcmp(argv[i], "--geometry") && has_value) {
            geometry = argv[++i];
        } else if (!strcmp(argv[i], "--name") && has_value) {
            name = argv[++i];
        } else if (!strcmp(argv[i], "--display") || !strcmp(argv[i], "--geometry") ||
                   !strcmp(argv[i], "--name")) {
            fail(2, "option '%s' needs a value", argv[i]);
        } else {
            usage();
            fail(2, "unknown option '%s'", argv[i]);
        }
    }
    if (!geometry)
        fail(2, "--geometry WxH+X+Y is required");
    if (!parse_geometry(geometry, &a.w, &a.h, &x, &y))
        fail(2, "bad --geometry '%s' (want WxH+X+Y, e.g. 640x480+100+50)", geometry);
    if (!parse_pattern(argc - i, argv + i, &a.pat, err, sizeof err))
        fail(2, "%s", err);

    /* If fd 0 is closed, xcb's socket could land on it and be mistaken for stdin. */
    if (fcntl(STDIN_FILENO, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != STDIN_FILENO)
        fail(1, "cannot open /dev/null as stdin");

    int screen_num;
    a.c = xcb_connect(display, &screen_num);
    if (xcb_connection_has_error(a.c)) {
        const char *env = getenv("DISPLAY");
        fail(1, "cannot open display '%s'", display ? display : env ? env : "(DISPLAY unset)");
    }
    xcb_screen_iterator_t it = xcb_setup_roots_iterator(xcb_get_setup(a.c));
    for (; it.rem && screen_num > 0; screen_num--)
        xcb_screen_next(&it);
    a.screen = it.data;

    /* pixel = 0xRRGGBB only holds for a 24-bit TrueColor visual with the usual masks. */
    xcb_visualtype_t *vis = NULL;
    for (xcb_depth_iterator_t d = xcb_screen_allowed_depths_iterator(a.screen); d.rem && !vis; xcb_depth_next(&d))
        for (xcb_visualtype_iterator_t v = xcb_depth_visuals_iterator(d.data); v.rem; xcb_visualtype_next(&v))
            if (v.data->visual_id == a.screen->root_visual)
                vis = v.data;
    if (a.screen->root_depth != 24 || !vis || vis->_class != XCB_VISUAL_CLASS_TRUE_COLOR ||
        vis->red_mask != 0xff0000 || vis->green_mask != 0x00ff00 || vis->blue_mask != 0x0000ff)
        fail(1, "root visual is not 24-bit TrueColor RGB888 (run Xvfb with -screen 0 WxHx24)");

    /* The window: no background (we paint every pixel), exposure and map events. */
    a.win = xcb_generate_id(a.c);
    uint32_t values[3] = { XCB_BACK_PIXMAP_NONE, override ? 1u : 0u,
                           XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY };
    xcb_create_window(a.c, XCB_COPY_FROM_PARENT, a.win, a.screen->root, (int16_t)x, (int16_t)y,
                      (uint16_t)a.w, (uint16_t)a.h, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT, a.screen->root_visual,
                      XCB_CW_BACK_PIXMAP | XCB_CW_OVERRIDE_REDIRECT | XCB_CW_EVENT_MASK, values);

    /* Names, and WM_NORMAL_HINTS asking a window manager (if any) to keep the geometry:
     * flags USPosition|USSize|PPosition|PSize, then x, y, width, height; 18 CARD32 in all. */
    xcb_change_property(a.c, XCB_PROP_MODE_REPLACE, a.win, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8,
                        (uint32_t)strlen(name), name);
    xcb_change_property(a.c, XCB_PROP_MODE_REPLACE, a.win, atom(a.c, "_NET_WM_NAME"),
                        atom(a.c, "UTF8_STRING"), 8, (uint32_t)strlen(name), name);
    uint32_t hints[18] = { 1 | 2 | 4 | 8, (uint32_t)x, (uint32_t)y, (uint32_t)a.w, (uint32_t)a.h };
    xcb_change_property(a.c, XCB_PROP_MODE_REPLACE, a.win, XCB_ATOM_WM_NORMAL_HINTS,
                        XCB_ATOM_WM_SIZE_HINTS, 32, 18, hints);

    a.gc = xcb_generate_id(a.c);
    uint32_t gcv[1] = { 0 };   /* no GraphicsExpose/NoExpose events from copy_area */
    xcb_create_gc(a.c, a.gc, a.win, XCB_GC_GRAPHICS_EXPOSURES, gcv);
    new_pixmap(&a);

    /* Map, and wait until the server says the window is mapped (hence viewable: root is). */
    xcb_map_window(a.c, a.win);
    xcb_flush(a.c);
    for (bool mapped = false; !mapped;) {
        xcb_generic_event_t *ev = xcb_wait_for_event(a.c);
        if (!ev)
            fail(1, "lost the connection to the X server");
        if ((ev->response_type & 0x7f) == 0)
            fail(1, "X error %u while creating the window", ((xcb_generic_error_t *)ev)->error_code);
        mapped = (ev->response_type & 0x7f) == XCB_MAP_NOTIFY;
        free(ev);
    }

    /* First paint, round trip, and only then announce it. */
    restart_pattern(&a);
    int wx, wy, ww, wh;
    where(&a, &wx, &wy, &ww, &wh);
    say("ready window=0x%x x=%d y=%d width=%d height=%d", a.win, wx, wy, ww, wh);
    say_frame(&a);

    /* Signals only write to a pipe that poll() watches, so none is lost between checks. */
    if (pipe(sig_pipe) < 0)
        fail(1, "pipe: %s", strerror(errno));
    for (int k = 0; k < 2; k++)
        fcntl(sig_pipe[k], F_SETFL, O_NONBLOCK), fcntl(sig_pipe[k], F_SETFD, FD_CLOEXEC);
    struct sigaction sa = { 0 };
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);   /* a reader that went away must not kill us mid-cleanup */

    while (!a.quit) {
        handle_x_events(&a);   /* includes events queued by xcb during round trips */
        xcb_flush(a.c);
        struct pollfd fds[3] = { { xcb_get_file_descriptor(a.c), POLLIN, 0 },
                                 { STDIN_FILENO, POLLIN, 0 },
                                 { sig_pipe[0], POLLIN, 0 } };
        int timeout = -1;
        if (a.pat.kind == SQUARE) {
            int64_t left = a.next_frame - now_ns();
            timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
            if (timeout > 33)
                timeout = 33;
        }
        if (poll(fds, 3, timeout) < 0 && errno != EINTR)
            fail(1, "poll: %s", strerror(errno));
        if (fds[2].revents)
            break;
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
    }

    /* Tidy end: the window is gone from the screen before we exit. */
    xcb_free_pixmap(a.c, a.pix);
    xcb_free_gc(a.c, a.gc);
    xcb_destroy_window(a.c, a.win);
    sync_server(&a);
    xcb_disconnect(a.c);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    return 0;
}
