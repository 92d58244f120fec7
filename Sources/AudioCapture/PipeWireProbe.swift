import CPipeWire

#if canImport(Glibc)
import Glibc
#endif

/// What a PipeWire daemon says about itself.
public struct PipeWireServerInfo: Equatable, Sendable {
    /// The daemon's name, as `pipewire-0`.
    public let name: String
    /// The daemon's version, as `0.3.65`.
    public let version: String
    /// The version of the libpipewire this process is linked with.
    public let libraryVersion: String
}

/// Why PipeWire could not be reached. Each case says what to do about it.
public enum PipeWireError: Error, Equatable, CustomStringConvertible {
    case cannotCreate(String)
    case cannotConnect(socket: String, socketExists: Bool)
    case noAnswer(timeoutMs: Int)
    case daemonError(String)

    public var description: String {
        switch self {
        case .cannotCreate(let what):
            return "cannot create the PipeWire \(what)"
        case .cannotConnect(let socket, let socketExists):
            let why = socketExists ? "the socket exists but refused the connection" : "no socket there"
            return "no PipeWire daemon at \(socket) (\(why)); "
                + "start pipewire, or set PIPEWIRE_REMOTE / XDG_RUNTIME_DIR to where it runs"
        case .noAnswer(let timeoutMs):
            return "the PipeWire daemon did not answer within \(timeoutMs) ms"
        case .daemonError(let message):
            return "the PipeWire daemon reported an error: \(message)"
        }
    }
}

/// Connects to the PipeWire daemon once, asks it who it is, and disconnects.
/// `livepush doctor` uses it; audio capture uses the same connection steps.
public enum PipeWireProbe {
    /// - Parameters:
    ///   - remote: the daemon's socket, a name in the runtime directory (`pipewire-0`) or an
    ///     absolute path; nil for libpipewire's default (`PIPEWIRE_REMOTE`, else `pipewire-0`).
    ///   - timeoutMs: how long to wait for the daemon's answer.
    public static func serverInfo(remote: String? = nil, timeoutMs: Int = 2000) throws(PipeWireError)
        -> PipeWireServerInfo
    {
        PipeWireLibrary.initialize()
        let session = ProbeSession()
        return try session.run(remote: remote, timeoutMs: timeoutMs)
    }

    /// Where libpipewire looks for the daemon, for error messages.
    static func socketPath(remote: String?) -> String {
        let remote = remote ?? getenv("PIPEWIRE_REMOTE").map { String(cString: $0) } ?? "pipewire-0"
        if remote.hasPrefix("/") { return remote }
        let variables = ["PIPEWIRE_RUNTIME_DIR", "XDG_RUNTIME_DIR"]
        let directory = variables.lazy.compactMap { name in getenv(name).map { String(cString: $0) } }.first
            ?? "$XDG_RUNTIME_DIR"
        return directory + "/" + remote
    }
}

/// `pw_init` once per process.
enum PipeWireLibrary {
    private static let initialized: Void = { pw_init(nil, nil) }()
    static func initialize() { _ = initialized }
}

/// The state of one probe: a thread loop, a context, a core, and what the core's
/// events said. Reached from PipeWire's thread through `Unmanaged`; every field the
/// callbacks touch is read and written under the thread loop's lock.
private final class ProbeSession {
    var threadLoop: OpaquePointer?
    var info: PipeWireServerInfo?
    var daemonError: String?
    var syncSequence: Int32 = -1
    var synced = false

    func run(remote: String?, timeoutMs: Int) throws(PipeWireError) -> PipeWireServerInfo {
        guard let loop = pw_thread_loop_new("livepush-probe", nil) else { throw .cannotCreate("thread loop") }
        defer { pw_thread_loop_destroy(loop) }
        threadLoop = loop
        guard let context = pw_context_new(pw_thread_loop_get_loop(loop), nil, 0) else {
            throw .cannotCreate("context")
        }
        defer { pw_context_destroy(context) }
        guard pw_thread_loop_start(loop) == 0 else { throw .cannotCreate("loop thread") }
        defer { pw_thread_loop_stop(loop) }

        pw_thread_loop_lock(loop)
        defer { pw_thread_loop_unlock(loop) }
        var properties: UnsafeMutablePointer<pw_properties>?
        if let remote {
            properties = CPipeWire_pw_properties_new_empty()
            pw_properties_set(properties, PW_KEY_REMOTE_NAME, remote)
        }
        // pw_context_connect takes ownership of the properties, whether it succeeds or not.
        guard let core = pw_context_connect(context, properties, 0) else {
            let socket = PipeWireProbe.socketPath(remote: remote)
            throw .cannotConnect(socket: socket, socketExists: access(socket, F_OK) == 0)
        }
        defer { pw_core_disconnect(core) }

        var events = pw_core_events()
        events.version = UInt32(PW_VERSION_CORE_EVENTS)
        events.info = probeCoreInfo
        events.done = probeCoreDone
        events.error = probeCoreError
        var listener = spa_hook()
        let unmanagedSelf = Unmanaged.passRetained(self)
        defer { unmanagedSelf.release() }
        _ = CPipeWire_pw_core_add_listener(core, &listener, &events, unmanagedSelf.toOpaque())
        defer { spa_hook_remove(&listener) }
        syncSequence = CPipeWire_pw_core_sync(core, 0)

        // Each signal from a callback wakes us; wait until the sync answer or an error arrives.
        let deadline = Monotonic.nowMs() + timeoutMs
        while !synced && daemonError == nil {
            let remainingMs = deadline - Monotonic.nowMs()
            if remainingMs <= 0 { throw .noAnswer(timeoutMs: timeoutMs) }
            _ = pw_thread_loop_timed_wait(loop, Int32(max(1, (remainingMs + 999) / 1000)))
        }
        if let daemonError { throw .daemonError(daemonError) }
        guard let info else { throw .noAnswer(timeoutMs: timeoutMs) }
        return info
    }

    /// Wakes `run`, which waits on the thread loop; called from PipeWire's thread.
    func wake() {
        pw_thread_loop_signal(threadLoop, false)
    }
}

private func probeSession(_ data: UnsafeMutableRawPointer?) -> ProbeSession {
    Unmanaged<ProbeSession>.fromOpaque(data!).takeUnretainedValue()
}

private func probeCoreInfo(_ data: UnsafeMutableRawPointer?, _ info: UnsafePointer<pw_core_info>?) {
    guard let info else { return }
    let session = probeSession(data)
    session.info = PipeWireServerInfo(
        name: info.pointee.name.map { String(cString: $0) } ?? "",
        version: info.pointee.version.map { String(cString: $0) } ?? "",
        libraryVersion: String(cString: pw_get_library_version()))
    session.wake()
}

private func probeCoreDone(_ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32) {
    let session = probeSession(data)
    if id == CPipeWire_PW_ID_CORE() && sequence == session.syncSequence {
        session.synced = true
        session.wake()
    }
}

private func probeCoreError(
    _ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32, _ result: Int32,
    _ message: UnsafePointer<CChar>?
) {
    let session = probeSession(data)
    if id == CPipeWire_PW_ID_CORE() {
        session.daemonError = message.map { String(cString: $0) } ?? "error \(result)"
        session.wake()
    }
}

enum Monotonic {
    /// CLOCK_MONOTONIC in milliseconds.
    static func nowMs() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
    }
}
