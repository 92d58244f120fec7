#if canImport(Glibc)
import Glibc
#endif

/// Whether the Wayland compositor of this session still runs: a portal's stream also goes away
/// when the user stops sharing (a planned end), but when the compositor itself is gone the
/// capture was lost and a restart may get it back.
enum WaylandCompositor {
    /// The compositor's socket (`$WAYLAND_DISPLAY`, relative to `$XDG_RUNTIME_DIR` unless absolute),
    /// or nil outside a Wayland session.
    static var socketPath: String? {
        guard let display = getenv("WAYLAND_DISPLAY").map({ String(cString: $0) }), !display.isEmpty else { return nil }
        if display.hasPrefix("/") { return display }
        guard let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty else { return nil }
        return runtime + "/" + display
    }

    /// False when `socketPath` accepts no connection (the compositor exited); nil outside Wayland.
    static func answers() -> Bool? {
        guard let path = socketPath else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return connected == 0
    }

    /// Whether the compositor stops answering within `withinMs` (polled every 20 ms): a compositor
    /// that dies closes its PipeWire connection and its Wayland socket one after the other, so the
    /// stream may end a moment before the socket refuses. False outside Wayland.
    static func exited(withinMs: Int) -> Bool {
        for attempt in 0...(withinMs / 20) {
            guard let answering = answers() else { return false }
            if !answering { return true }
            if attempt < withinMs / 20 { usleep(20_000) }
        }
        return false
    }
}
