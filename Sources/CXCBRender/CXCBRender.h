// X RENDER through xcb, for livepush-capture's server-side scaling (Capture Link LPC_CAP_SCALE):
// the root as a Picture with a scale transform, composited into a pixmap of the smaller size.
// Its own module so that CXCB's module map stays as it is.
#ifndef LIVEPUSH_CXCBRENDER_H
#define LIVEPUSH_CXCBRENDER_H
#include <stdlib.h>
#include <xcb/xcb.h>
#include <xcb/render.h>

// The extension id is a global of an incomplete type, which Swift cannot import.
static inline xcb_extension_t *CXCB_render_id(void) { return &xcb_render_id; }
#endif
