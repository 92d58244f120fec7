/* wm-close: does what a window manager's close button does: sends WM_PROTOCOLS/WM_DELETE_WINDOW
 * to a window (the preview window test, issue 16; no window manager runs on the test Xvfb).
 *
 *   wm-close DISPLAY WINDOW_ID      (WINDOW_ID as 0x... or decimal)
 *
 * Exit status: 0 sent and processed by the server, 1 the display, the atoms or the window could not be
 * had, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xcb/xcb.h>

static xcb_atom_t atom(xcb_connection_t *c, const char *name)
{
    xcb_intern_atom_reply_t *r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, (uint16_t)strlen(name), name), NULL);
    xcb_atom_t a = r ? r->atom : XCB_ATOM_NONE;
    free(r);
    return a;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: wm-close DISPLAY WINDOW_ID\n");
        return 2;
    }
    xcb_connection_t *c = xcb_connect(argv[1], NULL);
    if (xcb_connection_has_error(c)) {
        fprintf(stderr, "wm-close: cannot open display %s\n", argv[1]);
        return 1;
    }
    xcb_window_t window = (xcb_window_t)strtoul(argv[2], NULL, 0);
    xcb_atom_t protocols = atom(c, "WM_PROTOCOLS"), delete = atom(c, "WM_DELETE_WINDOW");
    if (protocols == XCB_ATOM_NONE || delete == XCB_ATOM_NONE) {
        fprintf(stderr, "wm-close: no WM_PROTOCOLS or WM_DELETE_WINDOW atom\n");
        return 1;
    }
    xcb_client_message_event_t event;
    memset(&event, 0, sizeof event);
    event.response_type = XCB_CLIENT_MESSAGE;
    event.format = 32;
    event.window = window;
    event.type = protocols;
    event.data.data32[0] = delete;
    event.data.data32[1] = XCB_CURRENT_TIME;
    /* Checked, and waited for: a round trip before disconnecting. Sent unchecked and followed at
     * once by xcb_disconnect, the request was lost in 8 runs of 19: the X server saw the hang-up
     * before it read the request and dropped the client with its unread requests, so the window
     * never got the message (a real window manager keeps its connection; the preview was fine). */
    xcb_generic_error_t *error =
        xcb_request_check(c, xcb_send_event_checked(c, 0, window, XCB_EVENT_MASK_NO_EVENT, (const char *)&event));
    if (error) {
        fprintf(stderr, "wm-close: SendEvent to window 0x%x failed with X error %d (no such window?)\n",
                (unsigned)window, error->error_code);
        free(error);
        xcb_disconnect(c);
        return 1;
    }
    xcb_disconnect(c);
    return 0;
}
