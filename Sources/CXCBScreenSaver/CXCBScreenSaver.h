// The MIT-SCREEN-SAVER extension through xcb, for livepush-capture's --on-lock: a screen saver or
// locker that turns the X screen saver on is the X11 sign that the screen is locked.
// Its own module so that CXCB's module map stays as it is.
#ifndef LIVEPUSH_CXCBSCREENSAVER_H
#define LIVEPUSH_CXCBSCREENSAVER_H
#include <stdlib.h>
#include <xcb/xcb.h>
#include <xcb/screensaver.h>

// The extension id is a global of an incomplete type, which Swift cannot import.
static inline xcb_extension_t *CXCB_screensaver_id(void) { return &xcb_screensaver_id; }
#endif
