/*
 * x11-paint-scroll.h: pattern "scroll" of x11-paint.c (the push benchmark's hard content), kept
 * apart because x11-paint.c is long enough.  Included once, by x11-paint.c only.
 *
 * The whole window moves every step, so every macroblock of every frame changes:
 *   - a texture T(x, y), periodic in y with the window's height H: red rises left to right
 *     (x * 255 / (W - 1)), green is a triangle top to bottom (0 at the top and bottom, 255 in the
 *     middle), blue 128, plus light noise: each channel + ((hash(x, y) & 15) - 8), clamped, where
 *     hash(x, y) = h ^ (h >> 16), h = (x * 374761393 + y * 668265263) ^ ... (scroll_hash below);
 *   - scrolled up by 2 px a step, 60 steps a second: step k shows T(x, (y + 2k) mod H);
 *   - six 128 x 128 blocks of the colours in scroll_colours, block i at
 *     x = 2 * ((50 + 150 i + (3 + i) k) mod ((W - 128) / 2)), y = 2 * ((100 + 65 i + (1 + i) k) mod ((H - 128) / 2));
 *   - the time code row on top (as pattern timecode), redrawn at 240 Hz.
 * Sources/livepush-bench/ScrollContent.swift draws the same frames into memory for the encoder's
 * floor; keep the two in step.  The texture lives in the X server (a pixmap 2H high holding T
 * twice), so a step is server-side copies and fills, not 8 MB through the socket.
 */

#define SCROLL_BLOCKS 6
#define SCROLL_BLOCK 128
#define SCROLL_STEP_PX 2

static const uint32_t scroll_colours[SCROLL_BLOCKS] = { 0xe04040, 0x40e040, 0x4040e0, 0xe0e040, 0x40e0e0, 0xe040e0 };

static uint32_t scroll_hash(uint32_t x, uint32_t y)
{
    uint32_t h = x * 374761393u + y * 668265263u;
    h = (h ^ (h >> 13)) * 1274126177u;
    return h ^ (h >> 16);
}

static uint8_t scroll_clamp(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* T(x, y) as 0xRRGGBB. */
static uint32_t scroll_texel(int x, int y, int w, int h)
{
    int r = w > 1 ? x * 255 / (w - 1) : 0;
    int g = (y < h / 2 ? y : h - 1 - y) * 510 / h;
    int b = 128;
    int n = (int)(scroll_hash((uint32_t)x, (uint32_t)y) & 15) - 8;
    return (uint32_t)scroll_clamp(r + n) << 16 | (uint32_t)scroll_clamp(g + n) << 8 | scroll_clamp(b + n);
}

/* The texture pixmap (T twice, 2H rows), uploaded in strips that fit a request. */
static void scroll_make_texture(struct app *a)
{
    if (a->tex)
        xcb_free_pixmap(a->c, a->tex);
    a->tex = xcb_generate_id(a->c);
    xcb_create_pixmap(a->c, a->screen->root_depth, a->tex, a->win, (uint16_t)a->w, (uint16_t)(2 * a->h));
    int rows = 16;
    uint32_t *strip = malloc((size_t)a->w * (size_t)rows * 4);
    if (!strip)
        fail(1, "out of memory for the scroll texture");
    for (int y0 = 0; y0 < 2 * a->h; y0 += rows) {
        int n = y0 + rows <= 2 * a->h ? rows : 2 * a->h - y0;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < a->w; x++)
                strip[y * a->w + x] = scroll_texel(x, (y0 + y) % a->h, a->w, a->h);
        xcb_put_image(a->c, XCB_IMAGE_FORMAT_Z_PIXMAP, a->tex, a->gc, (uint16_t)a->w, (uint16_t)n, 0,
                      (int16_t)y0, 0, a->screen->root_depth, (uint32_t)(a->w * n * 4), (const uint8_t *)strip);
    }
    free(strip);
    a->tex_w = a->w, a->tex_h = a->h;
}

/* Step a->frame into the pixmap: the scrolled texture, the blocks, the code. */
static void scroll_render(struct app *a)
{
    if (!a->tex || a->tex_w != a->w || a->tex_h != a->h)
        scroll_make_texture(a);
    long k = a->frame;
    int offset = (int)((SCROLL_STEP_PX * k) % a->h);
    xcb_copy_area(a->c, a->tex, a->pix, a->gc, 0, (int16_t)offset, 0, 0, (uint16_t)a->w, (uint16_t)a->h);
    int spanx = (a->w - SCROLL_BLOCK) / 2, spany = (a->h - SCROLL_BLOCK) / 2;
    for (int i = 0; i < SCROLL_BLOCKS && spanx > 0 && spany > 0; i++) {
        xcb_rectangle_t r = { (int16_t)(2 * ((50 + 150 * i + (3 + i) * k) % spanx)),
                              (int16_t)(2 * ((100 + 65 * i + (1 + i) * k) % spany)), SCROLL_BLOCK, SCROLL_BLOCK };
        fill(a, scroll_colours[i], &r, 1);
    }
    render_code(a);
}

/* One 60 Hz step: the whole window changes. */
static void step_scroll(struct app *a)
{
    scroll_render(a);
    present(a);
}
