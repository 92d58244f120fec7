import CXCB

#if canImport(Glibc)
import Glibc
#endif

/// How frames reach memory: the X server writing into our shared memory, or copies through
/// the X socket when it cannot (a remote display, some containers).
public enum GrabPath: Equatable, Sendable {
    case sharedMemory
    case socketCopy(reason: String)
}

/// Why a grab failed.
public enum X11GrabError: Error, Equatable, CustomStringConvertible {
    case serverGone(String)
    case requestFailed(request: String, errorCode: UInt8)
    case destinationTooSmall(neededBytes: Int, haveBytes: Int)
    /// The full-size buffer that `--scale yuv` grabs into could not be made.
    case scaleBuffer(call: String, errno: Int32, bytes: Int)

    public var description: String {
        switch self {
        case .serverGone(let reason): return "the X server connection broke: \(reason)"
        case .requestFailed(let request, let code): return "\(request) failed with X error \(code)"
        case .destinationTooSmall(let needed, let have): return "a grab needs \(needed) bytes, the slot has \(have)"
        case .scaleBuffer(let call, let code, let bytes):
            return "the \(bytes)-byte buffer for scaling with libyuv: \(call) failed: \(String(cString: strerror(code))) "
                + "(free memory, or use --scale render)"
        }
    }
}

/// Grabs rectangles of the root window into a shared-memory file (a Capture Link ring).
///
/// With MIT-SHM 1.2 the file is attached to the X server once (`xcb_shm_attach_fd` with a
/// duplicate of the descriptor, because xcb closes what it is given) and each grab is an
/// `xcb_shm_get_image` that has the server write straight to an offset in it: no copy in
/// this process. Without MIT-SHM each grab is an `xcb_get_image` whose reply is copied in.
final class X11Grabber {
    let path: GrabPath
    private let display: X11Display
    private let segment: UInt32

    init(display: X11Display, memoryDescriptor: Int32) {
        self.display = display
        let connection = display.connection
        guard let version = display.sharedMemoryVersion() else {
            path = .socketCopy(reason: "the X server offers no MIT-SHM (a remote display or a container without "
                + "shared memory), so every frame is copied through the X socket")
            segment = 0
            return
        }
        guard version.supportsFileDescriptors else {
            path = .socketCopy(reason: "the X server's MIT-SHM \(version) cannot take a memfd (1.2 needed), so every "
                + "frame is copied through the X socket")
            segment = 0
            return
        }
        let segment = xcb_generate_id(connection)
        let duplicate = dup(memoryDescriptor)  // xcb closes the descriptor it sends
        let cookie = xcb_shm_attach_fd_checked(connection, segment, duplicate, 0)
        if let error = xcb_request_check(connection, cookie) {
            let code = error.pointee.error_code
            free(error)
            path = .socketCopy(reason: "the X server refused our shared memory (X error \(code)); it may run in "
                + "another container or as another user, so every frame is copied through the X socket")
            self.segment = 0
            return
        }
        path = .sharedMemory
        self.segment = segment
    }

    deinit {
        if path == .sharedMemory {
            xcb_shm_detach(display.connection, segment)
            xcb_flush(display.connection)
        }
    }

    /// Grabs `rect` (inside the screen) as 32-bit BGRx into `destination`, which starts
    /// `offset` bytes into the shared memory. Returns the stride in bytes (width x 4).
    /// `drawable` is the root by default; a pixmap (RENDER's scaled picture) works the same way.
    func grab(_ rect: ScreenRect, offset: UInt64, destination: UnsafeMutableRawBufferPointer, drawable: UInt32? = nil)
        throws(X11GrabError) -> Int
    {
        let drawable = drawable ?? display.root
        let stride = rect.width * 4
        let neededBytes = stride * rect.height
        guard neededBytes <= destination.count else {
            throw .destinationTooSmall(neededBytes: neededBytes, haveBytes: destination.count)
        }
        let connection = display.connection
        let zPixmap = UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue)
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        switch path {
        case .sharedMemory:
            let cookie = xcb_shm_get_image(connection, drawable, Int16(rect.x), Int16(rect.y), UInt16(rect.width),
                                           UInt16(rect.height), ~0, zPixmap, segment, UInt32(offset))
            guard let reply = xcb_shm_get_image_reply(connection, cookie, &error) else {
                throw failure("xcb_shm_get_image", error)
            }
            free(reply)
        case .socketCopy:
            let cookie = xcb_get_image(connection, zPixmap, drawable, Int16(rect.x), Int16(rect.y),
                                       UInt16(rect.width), UInt16(rect.height), ~0)
            guard let reply = xcb_get_image_reply(connection, cookie, &error) else {
                throw failure("xcb_get_image", error)
            }
            defer { free(reply) }
            let length = min(Int(xcb_get_image_data_length(reply)), neededBytes)
            if let data = xcb_get_image_data(reply) {
                destination.baseAddress!.copyMemory(from: data, byteCount: length)
            }
        }
        return stride
    }

    private func failure(_ request: String, _ error: UnsafeMutablePointer<xcb_generic_error_t>?) -> X11GrabError {
        if let error {
            defer { free(error) }
            return .requestFailed(request: request, errorCode: error.pointee.error_code)
        }
        return .serverGone(display.connectionError ?? "no reply to \(request)")
    }
}
