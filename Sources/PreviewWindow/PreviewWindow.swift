import CLinuxShim
import CXCB

#if canImport(Glibc)
import Glibc
#endif

/// Why a preview window could not be opened. Each case says what to do about it.
public enum PreviewWindowError: Error, Equatable, CustomStringConvertible {
    case noDisplay
    case cannotConnect(display: String, reason: String)
    /// The X server has no MIT-SHM 1.2 (a memfd passed to the server).
    case noSharedMemory(display: String)
    case sharedMemory(call: String, errno: Int32)

    public var description: String {
        switch self {
        case .noDisplay: "no X display for the preview: DISPLAY is not set; run inside an X session or set DISPLAY"
        case .cannotConnect(let display, let reason): "cannot open X display '\(display)' for the preview: \(reason)"
        case .noSharedMemory(let display):
            "the X server on '\(display)' has no MIT-SHM 1.2 (shared memory passed as a file); the preview needs it"
        case .sharedMemory(let call, let code): "the preview's shared memory: \(call) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// An X11 window that shows B G R X pictures, put with MIT-SHM (`xcb_shm_put_image` from a memfd
/// attached to the server): the preview of what viewers get. Closing it (the window manager's
/// close button, WM_DELETE_WINDOW) or losing the X server ends only the window. xcb's types stay
/// inside this module.
///
/// Not thread-safe: use it from one thread.
public final class PreviewWindow {
    public let windowID: UInt32
    /// The window's size now (it follows resizes).
    public private(set) var width: Int
    public private(set) var height: Int
    public private(set) var isOpen = true
    private var closed = false
    private let connection: OpaquePointer
    private let graphics: UInt32
    private let deleteAtom: UInt32
    private let depth: UInt8
    private var segment: UInt32 = 0
    private var memory: UnsafeMutableRawPointer?
    private var memoryBytes = 0
    private var memoryWidth = 0
    private var memoryHeight = 0

    /// Opens a `width` x `height` window at (`x`, `y`) titled `title` on `displayName` (or `DISPLAY`).
    public init(title: String, width: Int, height: Int, x: Int = 0, y: Int = 0, displayName: String? = nil)
        throws(PreviewWindowError)
    {
        let environmentName = getenv("DISPLAY").map { String(cString: $0) }
        guard let name = displayName ?? environmentName, !name.isEmpty else { throw .noDisplay }
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(name, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw .cannotConnect(display: name, reason: "xcb_connect failed (is the X server running? is DISPLAY right?)")
        }
        var screens = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber where screens.rem > 0 { xcb_screen_next(&screens) }
        guard let screen = screens.data, screen.pointee.root_depth == 24 || screen.pointee.root_depth == 32 else {
            xcb_disconnect(connection)
            throw .cannotConnect(display: name, reason: "the screen is not 24 or 32 bits deep")
        }
        let version = xcb_shm_query_version_reply(connection, xcb_shm_query_version(connection), nil)
        let shmOK = version.map { ($0.pointee.major_version, $0.pointee.minor_version) >= (1, 2) } ?? false
        free(version)
        guard shmOK else {
            xcb_disconnect(connection)
            throw .noSharedMemory(display: name)
        }
        self.connection = connection
        self.width = width
        self.height = height
        depth = screen.pointee.root_depth
        windowID = xcb_generate_id(connection)
        let mask = XCB_CW_BACK_PIXEL.rawValue | XCB_CW_EVENT_MASK.rawValue
        var values: [UInt32] = [screen.pointee.black_pixel,
                                XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue | XCB_EVENT_MASK_EXPOSURE.rawValue]
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), windowID, screen.pointee.root, Int16(x), Int16(y),
                          UInt16(width), UInt16(height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
                          screen.pointee.root_visual, mask, &values)
        let titleBytes = Array(title.utf8)
        xcb_change_property(connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), windowID, XCB_ATOM_WM_NAME.rawValue,
                            XCB_ATOM_STRING.rawValue, 8, UInt32(titleBytes.count), titleBytes)
        // WM_DELETE_WINDOW: the close button sends a message instead of killing the connection.
        func atom(_ text: String) -> UInt32 {
            let reply = xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 0, UInt16(text.utf8.count), text), nil)
            defer { free(reply) }
            return reply?.pointee.atom ?? 0
        }
        let protocols = atom("WM_PROTOCOLS")
        var delete = atom("WM_DELETE_WINDOW")
        deleteAtom = delete
        xcb_change_property(connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), windowID, protocols, XCB_ATOM_ATOM.rawValue,
                            32, 1, &delete)
        graphics = xcb_generate_id(connection)
        xcb_create_gc(connection, graphics, windowID, 0, nil)
        xcb_map_window(connection, windowID)
        _ = xcb_flush(connection)
    }

    deinit {
        close()
        xcb_disconnect(connection)
    }

    /// Takes the window off the screen (once); the object can then only be released.
    public func close() {
        guard !closed else { return }
        closed = true
        isOpen = false
        if memory != nil { detachMemory() }
        xcb_free_gc(connection, graphics)
        xcb_destroy_window(connection, windowID)
        _ = xcb_flush(connection)
    }

    /// Handles what the X server sent (resizes, the close button); false once the window is closed.
    @discardableResult
    public func handleEvents() -> Bool {
        guard isOpen else { return false }
        if xcb_connection_has_error(connection) != 0 { isOpen = false }
        while isOpen, let event = xcb_poll_for_event(connection) {
            defer { free(event) }
            switch Int32(event.pointee.response_type & 0x7F) {
            case XCB_CONFIGURE_NOTIFY:
                let configure = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_configure_notify_event_t.self)
                width = Int(configure.pointee.width)
                height = Int(configure.pointee.height)
            case XCB_CLIENT_MESSAGE:
                let message = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_client_message_event_t.self)
                if message.pointee.data.data32.0 == deleteAtom { isOpen = false }
            case XCB_DESTROY_NOTIFY:
                isOpen = false
            default:
                break
            }
        }
        return isOpen
    }

    /// Draws a picture of the window's size: `body` writes B G R X bytes (`stride` bytes a row)
    /// for `width` x `height` pixels, then the picture is put into the window. False once closed.
    @discardableResult
    public func draw(_ body: (_ pixels: UnsafeMutableRawPointer, _ width: Int, _ height: Int, _ stride: Int) -> Void) -> Bool {
        guard handleEvents(), width > 0, height > 0 else { return isOpen }
        if memory == nil || memoryWidth != width || memoryHeight != height {
            if memory != nil { detachMemory() }
            do { try attachMemory(width: width, height: height) } catch { isOpen = false; return false }
        }
        guard let memory else { return false }
        body(memory, width, height, width * 4)
        xcb_shm_put_image(connection, windowID, graphics, UInt16(width), UInt16(height), 0, 0, UInt16(width),
                          UInt16(height), 0, 0, depth, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), 0, segment, 0)
        // A round trip: the server has read the memory before the next picture is written into it.
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), nil))
        return handleEvents()
    }

    private func attachMemory(width: Int, height: Int) throws(PreviewWindowError) {
        let bytes = width * height * 4
        let descriptor = CLinuxShim_memfd_create("livepush-preview", CLinuxShim_MFD_CLOEXEC)
        guard descriptor >= 0 else { throw .sharedMemory(call: "memfd_create", errno: errno) }
        defer { Glibc.close(descriptor) }
        guard ftruncate(descriptor, off_t(bytes)) == 0 else { throw .sharedMemory(call: "ftruncate", errno: errno) }
        guard let mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED else {
            throw .sharedMemory(call: "mmap", errno: errno)
        }
        segment = xcb_generate_id(connection)
        // xcb closes the descriptor it sends: give it a duplicate.
        xcb_shm_attach_fd(connection, segment, dup(descriptor), 0)
        memory = mapped
        memoryBytes = bytes
        memoryWidth = width
        memoryHeight = height
    }

    private func detachMemory() {
        xcb_shm_detach(connection, segment)
        if let memory { munmap(memory, memoryBytes) }
        memory = nil
    }
}
