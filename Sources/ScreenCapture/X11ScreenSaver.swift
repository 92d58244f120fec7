import CXCB
import CXCBScreenSaver

#if canImport(Glibc)
import Glibc
#endif

/// Whether the X screen saver is on, through the MIT-SCREEN-SAVER extension: what X11 has for "the
/// screen is locked" (xscreensaver, light-locker, xss-lock and `xset s activate` all turn it on).
///
/// Asked on the display's own connection, so it belongs to the thread that owns the `X11Display`.
public final class X11ScreenSaver {
    private let display: X11Display

    /// Nil when the X server has no MIT-SCREEN-SAVER extension.
    public init?(display: X11Display) {
        guard let extensionData = xcb_get_extension_data(display.connection, CXCB_screensaver_id()),
              extensionData.pointee.present != 0
        else { return nil }
        self.display = display
    }

    /// True while the screen saver is on (state On or Cycle); nil when the server did not answer.
    /// One round trip.
    public func isActive() -> Bool? {
        let connection = display.connection
        let cookie = xcb_screensaver_query_info(connection, display.root)
        guard let reply = xcb_screensaver_query_info_reply(connection, cookie, nil) else { return nil }
        defer { free(reply) }
        let state = UInt32(reply.pointee.state)
        return state == XCB_SCREENSAVER_STATE_ON.rawValue || state == XCB_SCREENSAVER_STATE_CYCLE.rawValue
    }
}
