import CLinuxShim
import CXCB
import CXCBRender
import CYUV

#if canImport(Glibc)
import Glibc
#endif

/// How an X11 grab is made smaller to fit the pusher's CONFIG maximum (Capture Link
/// `LPC_CAP_SCALE`, SPEC clarification 28).
public enum X11ScaleMethod: String, Sendable, CaseIterable {
    /// The X server scales (RENDER: the root as a Picture with a scale transform, composited into
    /// a pixmap of the small size), and MIT-SHM GetImage of that pixmap writes into the ring slot.
    case render
    /// A full-size MIT-SHM grab into a private segment, scaled by libyuv ARGBScale into the slot.
    case yuv
}

/// The size `width` x `height` scaled down to fit within `maxWidth` x `maxHeight`, keeping the
/// aspect ratio (never up, never below 1x1).
public func fittedSize(width: Int, height: Int, maxWidth: Int, maxHeight: Int) -> (width: Int, height: Int) {
    guard width > maxWidth || height > maxHeight else { return (width, height) }
    let maxWidth = max(1, maxWidth), maxHeight = max(1, maxHeight)
    // Compare width/maxWidth with height/maxHeight without floating point.
    if width * maxHeight >= height * maxWidth {
        return (maxWidth, max(1, min(maxHeight, (height * maxWidth + width / 2) / width)))
    }
    return (max(1, min(maxWidth, (width * maxHeight + height / 2) / height)), maxHeight)
}

/// Server-side scaling with RENDER. Use from the capture thread.
final class X11RenderScaler {
    private let display: X11Display
    private let source: UInt32
    private var pixmap: UInt32 = 0
    private var target: UInt32 = 0
    private var targetSize = (width: 0, height: 0)
    private let format: UInt32

    /// Nil when the server has no RENDER or no picture format for the root visual.
    init?(display: X11Display) {
        let connection = display.connection
        guard let extensionData = xcb_get_extension_data(connection, CXCB_render_id()),
              extensionData.pointee.present != 0,
              let formats = xcb_render_query_pict_formats_reply(connection, xcb_render_query_pict_formats(connection),
                                                                nil)
        else { return nil }
        defer { free(formats) }
        guard let format = Self.format(of: display.rootVisual, in: formats) else { return nil }
        self.display = display
        self.format = format
        source = xcb_generate_id(connection)
        // Pad: the edge pixels repeat, so the bilinear filter does not darken the last row and column.
        // IncludeInferiors: the windows on the screen, not only the root's own background.
        var values: [UInt32] = [UInt32(XCB_RENDER_REPEAT_PAD.rawValue),
                                UInt32(XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS.rawValue)]
        let mask = UInt32(XCB_RENDER_CP_REPEAT.rawValue | XCB_RENDER_CP_SUBWINDOW_MODE.rawValue)
        xcb_render_create_picture(connection, source, display.root, format, mask, &values)
        let filter = Array("bilinear".utf8)
        xcb_render_set_picture_filter(connection, source, UInt16(filter.count), filter, 0, nil)
    }

    deinit {
        let connection = display.connection
        if target != 0 {
            xcb_render_free_picture(connection, target)
            xcb_free_pixmap(connection, pixmap)
        }
        xcb_render_free_picture(connection, source)
        xcb_flush(connection)
    }

    /// Composites `rect` of the root scaled to `size` into the pixmap; returns the pixmap to read.
    func scale(_ rect: ScreenRect, to size: (width: Int, height: Int)) -> UInt32 {
        let connection = display.connection
        if targetSize != size {
            if target != 0 {
                xcb_render_free_picture(connection, target)
                xcb_free_pixmap(connection, pixmap)
            }
            pixmap = xcb_generate_id(connection)
            xcb_create_pixmap(connection, UInt8(display.rootDepth), pixmap, display.root, UInt16(size.width),
                              UInt16(size.height))
            target = xcb_generate_id(connection)
            xcb_render_create_picture(connection, target, pixmap, format, 0, nil)
            targetSize = size
        }
        // Destination (x, y) samples the source at (x * sx + rect.x, y * sy + rect.y), 16.16 fixed point.
        func fixed(_ value: Double) -> Int32 { Int32((value * 65536).rounded()) }
        let transform = xcb_render_transform_t(
            matrix11: fixed(Double(rect.width) / Double(size.width)), matrix12: 0, matrix13: fixed(Double(rect.x)),
            matrix21: 0, matrix22: fixed(Double(rect.height) / Double(size.height)), matrix23: fixed(Double(rect.y)),
            matrix31: 0, matrix32: 0, matrix33: fixed(1))
        xcb_render_set_picture_transform(connection, source, transform)
        xcb_render_composite(connection, UInt8(XCB_RENDER_PICT_OP_SRC.rawValue), source, 0, target, 0, 0, 0, 0, 0, 0,
                             UInt16(size.width), UInt16(size.height))
        return pixmap
    }

    private static func format(of visual: UInt32, in reply: UnsafeMutablePointer<xcb_render_query_pict_formats_reply_t>)
        -> UInt32?
    {
        var screens = xcb_render_query_pict_formats_screens_iterator(reply)
        while screens.rem > 0 {
            var depths = xcb_render_pictscreen_depths_iterator(screens.data)
            while depths.rem > 0 {
                var visuals = xcb_render_pictdepth_visuals_iterator(depths.data)
                while visuals.rem > 0 {
                    if visuals.data.pointee.visual == visual { return visuals.data.pointee.format }
                    xcb_render_pictvisual_next(&visuals)
                }
                xcb_render_pictdepth_next(&depths)
            }
            xcb_render_pictscreen_next(&screens)
        }
        return nil
    }
}

/// Client-side scaling with libyuv: a full-size grab into a private shared-memory segment, then
/// ARGBScale into the slot. Use from the capture thread.
final class X11YUVScaler {
    private let display: X11Display
    private var grabber: X11Grabber?
    private var memory: UnsafeMutableRawPointer?
    private var memoryBytes = 0

    init(display: X11Display) { self.display = display }

    deinit { unmap() }

    /// The full-size grab's memory for `rect`, attached to the X server (grown when needed).
    func grab(_ rect: ScreenRect) throws(X11GrabError) -> (pixels: UnsafeMutableRawBufferPointer, strideBytes: Int) {
        let bytes = rect.width * rect.height * 4
        if bytes > memoryBytes {
            unmap()
            let descriptor = CLinuxShim_memfd_create("livepush-capture-scale", CLinuxShim_MFD_CLOEXEC)
            guard descriptor >= 0 else { throw .scaleBuffer(call: "memfd_create", errno: errno, bytes: bytes) }
            defer { close(descriptor) }
            guard ftruncate(descriptor, off_t(bytes)) == 0 else {
                throw .scaleBuffer(call: "ftruncate", errno: errno, bytes: bytes)
            }
            guard let mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED
            else { throw .scaleBuffer(call: "mmap", errno: errno, bytes: bytes) }
            memory = mapped
            memoryBytes = bytes
            grabber = X11Grabber(display: display, memoryDescriptor: descriptor)
        }
        let pixels = UnsafeMutableRawBufferPointer(start: memory, count: memoryBytes)
        let stride = try grabber!.grab(rect, offset: 0, destination: pixels)
        return (pixels, stride)
    }

    /// Scales the last grab (`width` x `height`) into `destination` at `size`; returns its stride.
    func scale(_ grabbed: (pixels: UnsafeMutableRawBufferPointer, strideBytes: Int), width: Int, height: Int,
               to size: (width: Int, height: Int), destination: UnsafeMutableRawBufferPointer) -> Int {
        let stride = size.width * 4
        ARGBScale(grabbed.pixels.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(grabbed.strideBytes),
                  Int32(width), Int32(height), destination.baseAddress!.assumingMemoryBound(to: UInt8.self),
                  Int32(stride), Int32(size.width), Int32(size.height), kFilterBilinear)
        return stride
    }

    private func unmap() {
        grabber = nil
        if let memory { munmap(memory, memoryBytes) }
        memory = nil
        memoryBytes = 0
    }
}
