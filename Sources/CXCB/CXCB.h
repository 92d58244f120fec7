// The X11 protocol through xcb and the extensions LivePush's X11 capture uses:
// MIT-SHM (zero-copy grabs), XFixes (cursor), RandR (monitors), Damage (skip static frames).
#ifndef LIVEPUSH_CXCB_H
#define LIVEPUSH_CXCB_H
#include <stdlib.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/xfixes.h>
#include <xcb/randr.h>
#include <xcb/damage.h>

// The extension ids are globals of an incomplete type, which Swift cannot import.
static inline xcb_extension_t *CXCB_shm_id(void) { return &xcb_shm_id; }
static inline xcb_extension_t *CXCB_xfixes_id(void) { return &xcb_xfixes_id; }
static inline xcb_extension_t *CXCB_randr_id(void) { return &xcb_randr_id; }
static inline xcb_extension_t *CXCB_damage_id(void) { return &xcb_damage_id; }
#endif
