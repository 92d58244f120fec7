import CPipeWire

#if canImport(Glibc)
import Glibc
#endif

/// Why a connection to PipeWire could not be made, for every PipeWire user (audio, screen,
/// cameras, the probe), which wrap it in their own errors rather than restate it. Each
/// description says what to do.
public enum PipeWireConnectionError: Error, Equatable, CustomStringConvertible {
    /// A thread loop, context or the loop's thread could not be created.
    case cannotCreate(String)
    /// Nothing answered at the daemon's socket.
    case noDaemon(socket: String, socketExists: Bool)
    /// The descriptor (a portal's OpenPipeWireRemote) was refused.
    case descriptorRefused(descriptor: Int32)
    /// The daemon did not answer the first round trip in time.
    case noAnswer(timeoutMs: Int)
    /// The daemon reported an error on the core.
    case daemonError(String)

    public var description: String {
        switch self {
        case .cannotCreate(let what): return "cannot create a PipeWire \(what)"
        case .noDaemon(let socket, let socketExists):
            return "no PipeWire daemon at \(socket) (\(socketExists ? "the socket exists but refused the connection" : "no socket there")); "
                + "start pipewire and wireplumber, or set XDG_RUNTIME_DIR (or PIPEWIRE_REMOTE) to where they run"
        case .descriptorRefused(let descriptor):
            return "PipeWire refused the connection on the descriptor \(descriptor) the portal gave; start the session again"
        case .noAnswer(let timeoutMs):
            return "the PipeWire daemon did not answer within \(timeoutMs) ms; it is hung or overloaded "
                + "(systemctl --user restart pipewire)"
        case .daemonError(let message): return "the PipeWire daemon reported an error: \(message)"
        }
    }
}

/// One connection to the PipeWire daemon, shared by every PipeWire user in LivePush (the
/// microphone and desktop audio, ear monitoring's playback, the screen stream): a thread loop,
/// a context, a core with its error and round-trip events, and the registry, whose globals go
/// to `onGlobal` / `onGlobalRemove`.
///
/// **Threads.** Every field is read and written on the loop's thread or under its lock
/// (`withLock`, or the `...Locked` methods with the lock held). The handlers run on the loop's
/// thread with the lock held. C callbacks reach the connection through `Unmanaged`; it outlives
/// its listeners (`close()` removes them before anything is freed).
///
/// **Lifecycle.** `init` starts the loop; the owner sets its handlers, then `connectLocked`
/// connects and lists the registry (so no global is missed); `close()` (never on the loop's
/// thread) tears down in reverse. The owner destroys its own streams and proxies first.
public final class PipeWireConnection: @unchecked Sendable {
    /// Where to connect.
    public enum Remote: Sendable, Equatable {
        /// libpipewire's default (`PIPEWIRE_REMOTE`, else `pipewire-0` in the runtime directory),
        /// or a socket name or absolute path.
        case daemon(String?)
        /// A connected socket (the portal's OpenPipeWireRemote); the connection takes it.
        case descriptor(Int32)
    }

    package let threadLoop: OpaquePointer
    package private(set) var core: OpaquePointer?
    package private(set) var registry: OpaquePointer?
    /// The daemon's last error on the core, if any.
    public private(set) var daemonError: String?
    /// Whether the daemon went away (its socket broke: the core reported EPIPE).
    public private(set) var daemonLost = false
    /// What the daemon said about itself (the core's info event): its name and version.
    public private(set) var serverName: String?
    public private(set) var serverVersion: String?
    /// A global appeared: id, interface type, properties.
    package var onGlobal: ((UInt32, String, UnsafePointer<spa_dict>?) -> Void)?
    public var onGlobalRemove: ((UInt32) -> Void)?
    /// The daemon reported an error on the core (`lost`: it went away).
    public var onDaemonError: ((String, _ lost: Bool) -> Void)?

    private var context: OpaquePointer?
    private let coreListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let registryListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let coreEvents = UnsafeMutablePointer<pw_core_events>.allocate(capacity: 1)
    private let registryEvents = UnsafeMutablePointer<pw_registry_events>.allocate(capacity: 1)
    private var syncSequence: Int32 = -1
    private var synced = false
    private var started = false
    private var closed = false

    /// `pw_init` once per process.
    public static func initializeLibrary() { _ = initialized }
    private static let initialized: Void = { pw_init(nil, nil) }()

    /// A thread loop named `name` (the loop's thread's name: at most 15 bytes, the kernel's limit,
    /// or the thread goes unnamed), running, with a context; not connected yet.
    ///
    /// `realtime` (audio streams) reads PipeWire's `client-rt.conf`, as pw-cat and PipeWire's ALSA
    /// and JACK clients do: its module-rt raises the context's data loop, which answers the graph's
    /// every cycle, to real-time priority (directly where the process may, through RTKit on a
    /// desktop, or else a lower nice level; without either it only warns). Without it the data
    /// loop runs at the priority of everything else, and on a busy machine it misses cycles: the
    /// daemon then hands the stream nothing for them, and their samples are lost (under two busy
    /// loops on 2 cores, 0.5 to 0.8 s of every 30 s of the microphone; issue 29).
    public init(name: String, realtime: Bool = false) throws(PipeWireConnectionError) {
        assert(name.utf8.count <= 15, "PipeWire loop name '\(name)' is longer than 15 bytes")
        Self.initializeLibrary()
        for hook in [coreListener, registryListener] { hook.initialize(to: spa_hook()) }
        coreEvents.initialize(to: pw_core_events())
        registryEvents.initialize(to: pw_registry_events())
        guard let loop = pw_thread_loop_new(name, nil) else {
            coreListener.deallocate()
            registryListener.deallocate()
            coreEvents.deallocate()
            registryEvents.deallocate()
            throw .cannotCreate("thread loop")
        }
        threadLoop = loop
        var contextProperties: UnsafeMutablePointer<pw_properties>?
        if realtime {
            contextProperties = CPipeWire_pw_properties_new_empty()
            pw_properties_set(contextProperties, PW_KEY_CONFIG_NAME, "client-rt.conf")
        }
        // pw_context_new takes ownership of the properties.
        guard let context = pw_context_new(pw_thread_loop_get_loop(loop), contextProperties, 0) else {
            close()
            throw .cannotCreate("context")
        }
        self.context = context
        guard pw_thread_loop_start(loop) == 0 else {
            close()
            throw .cannotCreate("loop thread")
        }
        started = true
    }

    deinit { close() }

    /// Connects the core to `remote`, listens to the registry and waits for the first round
    /// trip (the registry's listing); the caller holds the lock.
    public func connectLocked(remote: Remote, timeoutMs: Int) throws(PipeWireConnectionError) {
        switch remote {
        case .daemon(let name):
            var properties: UnsafeMutablePointer<pw_properties>?
            if let name {
                properties = CPipeWire_pw_properties_new_empty()
                pw_properties_set(properties, PW_KEY_REMOTE_NAME, name)
            }
            // pw_context_connect takes ownership of the properties, whether it succeeds or not.
            core = pw_context_connect(context, properties, 0)
            if core == nil {
                let socket = Self.socketPath(remote: name)
                throw .noDaemon(socket: socket, socketExists: access(socket, F_OK) == 0)
            }
        case .descriptor(let descriptor):
            core = pw_context_connect_fd(context, descriptor, nil, 0)
            if core == nil { throw .descriptorRefused(descriptor: descriptor) }
        }
        let data = Unmanaged.passUnretained(self).toOpaque()
        coreEvents.pointee.version = UInt32(PW_VERSION_CORE_EVENTS)
        coreEvents.pointee.info = connectionCoreInfo
        coreEvents.pointee.done = connectionCoreDone
        coreEvents.pointee.error = connectionCoreError
        _ = CPipeWire_pw_core_add_listener(core, coreListener, coreEvents, data)
        guard let registry = CPipeWire_pw_core_get_registry(core) else { throw .cannotCreate("registry") }
        self.registry = registry
        registryEvents.pointee.version = UInt32(PW_VERSION_REGISTRY_EVENTS)
        registryEvents.pointee.global = connectionRegistryGlobal
        registryEvents.pointee.global_remove = connectionRegistryGlobalRemove
        _ = CPipeWire_pw_registry_add_listener(registry, registryListener, registryEvents, data)
        try roundtripLocked(timeoutMs: timeoutMs)
    }

    /// Sends a sync and waits for its answer (every earlier request handled, every event
    /// before it delivered); the caller holds the lock.
    public func roundtripLocked(timeoutMs: Int) throws(PipeWireConnectionError) {
        guard let core else { return }
        synced = false
        syncSequence = CPipeWire_pw_core_sync(core, 0)
        let answered = waitLocked(timeoutMs: timeoutMs) { synced || daemonError != nil }
        if let daemonError { throw .daemonError(daemonError) }
        if !answered { throw .noAnswer(timeoutMs: timeoutMs) }
    }

    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        return try body()
    }

    /// Wakes a thread waiting in `waitLocked`.
    public func signal() { pw_thread_loop_signal(threadLoop, false) }

    /// Waits, with the lock held, until `done` holds or `timeoutMs` passes; returns whether it held.
    @discardableResult
    public func waitLocked(timeoutMs: Int, until done: () -> Bool) -> Bool {
        var deadline = timespec()
        pw_thread_loop_get_time(threadLoop, &deadline, Int64(max(0, timeoutMs)) * 1_000_000)
        while !done() {
            if pw_thread_loop_timed_wait_full(threadLoop, &deadline) != 0 { return done() }
        }
        return true
    }

    /// Whether the caller runs on the loop's thread (where `close` cannot be called).
    public var isLoopThread: Bool { pw_thread_loop_in_thread(threadLoop) }

    /// Removes the listeners, destroys the registry, disconnects, stops the thread, frees: the
    /// reverse of `init` and `connectLocked`. Idempotent. Not on the loop's thread.
    public func close() {
        guard !closed else { return }
        closed = true
        if started { pw_thread_loop_lock(threadLoop) }
        onGlobal = nil
        onGlobalRemove = nil
        onDaemonError = nil
        if let registry {
            spa_hook_remove(registryListener)
            pw_proxy_destroy(registry)
            self.registry = nil
        }
        if let core {
            spa_hook_remove(coreListener)
            pw_core_disconnect(core)
            self.core = nil
        }
        if started {
            pw_thread_loop_unlock(threadLoop)
            pw_thread_loop_stop(threadLoop)
        }
        if let context {
            pw_context_destroy(context)
            self.context = nil
        }
        pw_thread_loop_destroy(threadLoop)
        freeStorage()
    }

    private func freeStorage() {
        coreListener.deallocate()
        registryListener.deallocate()
        coreEvents.deallocate()
        registryEvents.deallocate()
    }

    /// The socket libpipewire connects to for `remote` (for messages).
    public static func socketPath(remote: String?) -> String {
        let remote = remote ?? getenv("PIPEWIRE_REMOTE").map { String(cString: $0) } ?? "pipewire-0"
        if remote.hasPrefix("/") { return remote }
        let variables = ["PIPEWIRE_RUNTIME_DIR", "XDG_RUNTIME_DIR"]
        let directory = variables.lazy.compactMap { name in getenv(name).map { String(cString: $0) } }.first
            ?? "$XDG_RUNTIME_DIR"
        return directory + "/" + remote
    }

    // MARK: Callbacks (loop thread)

    fileprivate func coreDone(id: UInt32, sequence: Int32) {
        if id == CPipeWire_PW_ID_CORE() && sequence == syncSequence {
            synced = true
            signal()
        }
    }

    fileprivate func coreInfo(name: String?, version: String?) {
        serverName = name
        serverVersion = version
    }

    fileprivate func coreError(id: UInt32, result: Int32, message: String) {
        // Errors on other objects (a stream's node, a link) are reported to their own listeners.
        guard id == CPipeWire_PW_ID_CORE() else { return }
        let lost = result == -EPIPE
        daemonError = message.isEmpty ? String(cString: strerror(-result)) : message
        if lost { daemonLost = true }
        onDaemonError?(daemonError ?? "", lost)
        signal()
    }

    fileprivate func global(id: UInt32, type: String, props: UnsafePointer<spa_dict>?) { onGlobal?(id, type, props) }
    fileprivate func globalRemove(id: UInt32) { onGlobalRemove?(id) }
}

private func connection(_ data: UnsafeMutableRawPointer?) -> PipeWireConnection {
    Unmanaged<PipeWireConnection>.fromOpaque(data!).takeUnretainedValue()
}

private func connectionCoreDone(_ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32) {
    connection(data).coreDone(id: id, sequence: sequence)
}

private func connectionCoreInfo(_ data: UnsafeMutableRawPointer?, _ info: UnsafePointer<pw_core_info>?) {
    guard let info else { return }
    connection(data).coreInfo(name: info.pointee.name.map { String(cString: $0) },
                              version: info.pointee.version.map { String(cString: $0) })
}

private func connectionCoreError(
    _ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32, _ result: Int32, _ message: UnsafePointer<CChar>?
) {
    connection(data).coreError(id: id, result: result, message: message.map { String(cString: $0) } ?? "")
}

private func connectionRegistryGlobal(
    _ data: UnsafeMutableRawPointer?, _ id: UInt32, _ permissions: UInt32, _ type: UnsafePointer<CChar>?,
    _ version: UInt32, _ props: UnsafePointer<spa_dict>?
) {
    guard let type else { return }
    connection(data).global(id: id, type: String(cString: type), props: props)
}

private func connectionRegistryGlobalRemove(_ data: UnsafeMutableRawPointer?, _ id: UInt32) {
    connection(data).globalRemove(id: id)
}
