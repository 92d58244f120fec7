import CXCB

#if canImport(Glibc)
import Glibc
#endif

/// Why an X display could not be used. Each case says what to do about it.
public enum X11Error: Error, Equatable, CustomStringConvertible {
    /// Neither an explicit display name nor `DISPLAY` was given.
    case noDisplay
    /// xcb could not open the display; `reason` is xcb's error, in words.
    case cannotConnect(display: String, reason: String)

    public var description: String {
        switch self {
        case .noDisplay:
            return "no X display: DISPLAY is not set; run inside an X session or pass --display :N"
        case .cannotConnect(let display, let reason):
            return "cannot open X display '\(display)': \(reason)"
        }
    }
}

/// The MIT-SHM extension's version as the X server reports it.
public struct SharedMemoryVersion: Equatable, Sendable, CustomStringConvertible {
    public let major: Int
    public let minor: Int
    /// Whether the server can also create pixmaps in shared memory.
    public let sharedPixmaps: Bool

    /// Version 1.2 added passing a memfd to the server (`xcb_shm_attach_fd`), which
    /// LivePush's zero-copy capture needs.
    public var supportsFileDescriptors: Bool { (major, minor) >= (1, 2) }

    public var description: String { "\(major).\(minor)" }
}

/// A connection to an X server, with the facts of its default screen.
///
/// Not thread-safe: use one connection from one thread at a time.
public final class X11Display {
    /// The display name that was opened, as `:12`.
    public let name: String
    public private(set) var screenWidth: Int
    public private(set) var screenHeight: Int
    public let rootDepth: Int

    /// The xcb connection; used by the other X11 types of this module, never exposed.
    let connection: OpaquePointer
    /// The root window of the default screen.
    let root: UInt32
    /// The root window's visual (RENDER finds its picture format by it).
    let rootVisual: UInt32

    /// Opens `displayName`, or `DISPLAY` when nil.
    public init(displayName: String? = nil) throws(X11Error) {
        let environmentName = getenv("DISPLAY").map { String(cString: $0) }
        guard let name = displayName ?? environmentName, !name.isEmpty else { throw .noDisplay }
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(name, &screenNumber) else {
            throw .cannotConnect(display: name, reason: "xcb_connect returned no connection")
        }
        let errorCode = xcb_connection_has_error(connection)
        if errorCode != 0 {
            xcb_disconnect(connection)
            throw .cannotConnect(display: name, reason: Self.describeConnectionError(errorCode))
        }
        var screens = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber where screens.rem > 0 { xcb_screen_next(&screens) }
        guard let screen = screens.data else {
            xcb_disconnect(connection)
            throw .cannotConnect(display: name, reason: "the server has no screen \(screenNumber)")
        }
        self.name = name
        self.connection = connection
        self.screenWidth = Int(screen.pointee.width_in_pixels)
        self.screenHeight = Int(screen.pointee.height_in_pixels)
        self.rootDepth = Int(screen.pointee.root_depth)
        self.root = screen.pointee.root
        self.rootVisual = screen.pointee.root_visual
    }

    deinit {
        xcb_disconnect(connection)
    }

    /// The MIT-SHM version, or nil when the server does not offer the extension
    /// (a remote display, some containers): capture then falls back to slower copies.
    public func sharedMemoryVersion() -> SharedMemoryVersion? {
        guard let extensionData = xcb_get_extension_data(connection, CXCB_shm_id()),
              extensionData.pointee.present != 0
        else { return nil }
        let cookie = xcb_shm_query_version(connection)
        guard let reply = xcb_shm_query_version_reply(connection, cookie, nil) else { return nil }
        defer { free(reply) }
        return SharedMemoryVersion(
            major: Int(reply.pointee.major_version),
            minor: Int(reply.pointee.minor_version),
            sharedPixmaps: reply.pointee.shared_pixmaps != 0)
    }

    /// Nil while the connection works; otherwise why it broke (the server went away, ...).
    public var connectionError: String? {
        let code = xcb_connection_has_error(connection)
        return code == 0 ? nil : Self.describeConnectionError(code)
    }

    /// Reads the root window's size again (after a resolution change).
    func refreshScreenSize() {
        guard let reply = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, root), nil) else { return }
        defer { free(reply) }
        screenWidth = Int(reply.pointee.width)
        screenHeight = Int(reply.pointee.height)
    }

    static func describeConnectionError(_ code: Int32) -> String {
        switch code {
        case 1: return "no X server answers there, or it closed the connection (socket error); "
            + "check that the display exists and is running"
        case 2: return "the server lacks a required extension"
        case 3: return "out of memory"
        case 4: return "a request was longer than the server accepts"
        case 5: return "the display name could not be parsed; use the form :N or host:N"
        case 6: return "the server has no such screen"
        case 7: return "passing a file descriptor to the server failed"
        default: return "xcb connection error \(code)"
        }
    }
}
