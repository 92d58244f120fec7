import CXCB

#if canImport(Glibc)
import Glibc
#endif

/// The pointer drawn into frames, from XFixes: the shape is fetched again only when its
/// serial changes (XFixes CursorNotify), the position is read every frame.
final class X11Cursor {
    private let display: X11Display
    private var pixels: [UInt32] = []  // ARGB, premultiplied alpha
    private var width = 0
    private var height = 0
    private var hotX = 0
    private var hotY = 0
    private(set) var serial: UInt32 = 0
    private var shapeIsStale = true
    /// The first event code of XFixes, to recognise its CursorNotify.
    let firstEvent: UInt8

    /// Nil when the server has no XFixes 2 or later.
    init?(display: X11Display) {
        let connection = display.connection
        guard let extensionData = xcb_get_extension_data(connection, CXCB_xfixes_id()),
              extensionData.pointee.present != 0,
              let version = xcb_xfixes_query_version_reply(connection, xcb_xfixes_query_version(connection, 4, 0), nil)
        else { return nil }
        let major = version.pointee.major_version
        free(version)
        guard major >= 2 else { return nil }
        self.display = display
        firstEvent = extensionData.pointee.first_event
        xcb_xfixes_select_cursor_input(connection, display.root,
                                       UInt32(XCB_XFIXES_CURSOR_NOTIFY_MASK_DISPLAY_CURSOR.rawValue))
    }

    /// Handles an event if it is XFixes' CursorNotify; returns whether it was.
    func handle(_ event: UnsafeMutablePointer<xcb_generic_event_t>) -> Bool {
        guard event.pointee.response_type & 0x7F == firstEvent &+ UInt8(XCB_XFIXES_CURSOR_NOTIFY) else { return false }
        let notify = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_xfixes_cursor_notify_event_t.self)
        if notify.pointee.cursor_serial != serial { shapeIsStale = true }
        return true
    }

    /// Draws the pointer into a BGRx frame showing `rect` of the screen; returns whether any
    /// of it was inside.
    /// With `outputWidth`/`outputHeight` smaller than `rect` (a scaled frame) the pointer is drawn
    /// at its scaled position, at its own size.
    func composite(into frame: UnsafeMutableRawBufferPointer, strideBytes: Int, rect: ScreenRect,
                   outputWidth: Int? = nil, outputHeight: Int? = nil) -> Bool {
        let outputWidth = outputWidth ?? rect.width, outputHeight = outputHeight ?? rect.height
        if shapeIsStale { refreshShape() }
        let connection = display.connection
        guard !pixels.isEmpty,
              let pointer = xcb_query_pointer_reply(connection, xcb_query_pointer(connection, display.root), nil)
        else { return false }
        let pointerX = Int(pointer.pointee.root_x), pointerY = Int(pointer.pointee.root_y)
        free(pointer)
        // The cursor image's top-left corner, in frame coordinates.
        let left = (pointerX - rect.x) * outputWidth / max(1, rect.width) - hotX
        let top = (pointerY - rect.y) * outputHeight / max(1, rect.height) - hotY
        let visible = ScreenRect(x: left, y: top, width: width, height: height)
            .clamped(to: ScreenRect(x: 0, y: 0, width: outputWidth, height: outputHeight))
        guard visible.width > 0, visible.height > 0 else { return false }
        let base = frame.baseAddress!
        for y in visible.y..<(visible.y + visible.height) {
            let row = base + y * strideBytes
            let sourceRow = (y - top) * width
            for x in visible.x..<(visible.x + visible.width) {
                let argb = pixels[sourceRow + x - left]
                let alpha = argb >> 24
                if alpha == 0 { continue }
                let pixel = (row + x * 4).assumingMemoryBound(to: UInt8.self)
                let inverse = 255 - alpha
                // Premultiplied "over": out = source + destination x (1 - alpha), per channel.
                pixel[0] = blend(argb & 0xFF, pixel[0], inverse)
                pixel[1] = blend((argb >> 8) & 0xFF, pixel[1], inverse)
                pixel[2] = blend((argb >> 16) & 0xFF, pixel[2], inverse)
            }
        }
        return true
    }

    private func blend(_ source: UInt32, _ destination: UInt8, _ inverseAlpha: UInt32) -> UInt8 {
        UInt8(min(255, source + (UInt32(destination) * inverseAlpha + 127) / 255))
    }

    private func refreshShape() {
        shapeIsStale = false
        let connection = display.connection
        guard let reply = xcb_xfixes_get_cursor_image_reply(connection, xcb_xfixes_get_cursor_image(connection), nil)
        else { return }
        defer { free(reply) }
        width = Int(reply.pointee.width)
        height = Int(reply.pointee.height)
        hotX = Int(reply.pointee.xhot)
        hotY = Int(reply.pointee.yhot)
        serial = reply.pointee.cursor_serial
        let count = Int(xcb_xfixes_get_cursor_image_cursor_image_length(reply))
        guard let image = xcb_xfixes_get_cursor_image_cursor_image(reply), count == width * height else {
            pixels = []
            return
        }
        pixels = Array(UnsafeBufferPointer(start: image, count: count))
    }
}
