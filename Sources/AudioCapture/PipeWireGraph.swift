import CPipeWire

#if canImport(Glibc)
import Glibc
#endif

/// A PipeWire node as the registry announced it.
struct PipeWireNode: Equatable {
    enum Kind: Equatable {
        case source  // Audio/Source (and Audio/Source/Virtual)
        case sink    // Audio/Sink
    }

    let id: UInt32
    let name: String
    let description: String
    let kind: Kind
    let prioritySession: Int
}

/// One connection to the PipeWire daemon: a thread loop, a context, a core, the registry and
/// the "default" metadata, and what they said about the audio nodes of the graph.
///
/// Every field is read and written on the thread loop, or elsewhere under its lock
/// (`withLock`). C callbacks reach the graph through `Unmanaged` (it outlives its listeners:
/// `close()` removes them before anything is freed). Teardown is the reverse of setup.
final class PipeWireGraph {
    private(set) var threadLoop: OpaquePointer!
    private(set) var core: OpaquePointer?
    private var context: OpaquePointer?
    private var registry: OpaquePointer?
    private var metadata: OpaquePointer?
    // Hooks and event tables must not move while registered: they live on the heap.
    private let coreListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let registryListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let metadataListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let coreEvents = UnsafeMutablePointer<pw_core_events>.allocate(capacity: 1)
    private let registryEvents = UnsafeMutablePointer<pw_registry_events>.allocate(capacity: 1)
    private let metadataEvents = UnsafeMutablePointer<pw_metadata_events>.allocate(capacity: 1)
    private var started = false
    private var closed = false

    /// Audio nodes by global id.
    private(set) var nodes: [UInt32: PipeWireNode] = [:]
    /// `default.audio.source` / `default.audio.sink` of the "default" metadata (WirePlumber sets them).
    private(set) var defaultSourceName: String?
    private(set) var defaultSinkName: String?
    /// Called on the loop thread when an audio node appears or goes away (after the first roundtrip).
    var onNodeAdded: ((PipeWireNode) -> Void)?
    var onNodeRemoved: ((PipeWireNode) -> Void)?
    /// The last error the daemon reported on the core (the connection is then unusable).
    private(set) var daemonError: String?

    private var syncSequence: Int32 = -1
    private var synced = false

    /// Connects and waits for the registry's first listing (and the default metadata's values).
    init(name: String, remote: String? = nil, timeoutMs: Int = 3000) throws(AudioCaptureError) {
        PipeWireLibrary.initialize()
        for hook in [coreListener, registryListener, metadataListener] { hook.initialize(to: spa_hook()) }
        coreEvents.initialize(to: pw_core_events())
        registryEvents.initialize(to: pw_registry_events())
        metadataEvents.initialize(to: pw_metadata_events())
        guard let loop = pw_thread_loop_new(name, nil) else {
            closed = true  // nothing to tear down; deinit must not try
            Self.freeStorage(self)
            throw .streamFailed("cannot create a PipeWire thread loop")
        }
        threadLoop = loop
        do throws(AudioCaptureError) {
            try setUp(remote: remote, timeoutMs: timeoutMs)
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
    }

    private func setUp(remote: String?, timeoutMs: Int) throws(AudioCaptureError) {
        guard let context = pw_context_new(pw_thread_loop_get_loop(threadLoop), nil, 0) else {
            throw .streamFailed("cannot create a PipeWire context")
        }
        self.context = context
        guard pw_thread_loop_start(threadLoop) == 0 else { throw .streamFailed("cannot start the PipeWire thread") }
        started = true

        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        var properties: UnsafeMutablePointer<pw_properties>?
        if let remote {
            properties = CPipeWire_pw_properties_new_empty()
            pw_properties_set(properties, PW_KEY_REMOTE_NAME, remote)
        }
        // pw_context_connect takes ownership of the properties, whether it succeeds or not.
        guard let core = pw_context_connect(context, properties, 0) else {
            let socket = PipeWireProbe.socketPath(remote: remote)
            let why = access(socket, F_OK) == 0 ? "the socket exists but refused the connection" : "no socket there"
            throw .noDaemon(detail: "no PipeWire daemon at \(socket) (\(why)); start pipewire and wireplumber, "
                + "or set XDG_RUNTIME_DIR (or PIPEWIRE_REMOTE) to where they run")
        }
        self.core = core
        let unmanagedSelf = Unmanaged.passUnretained(self).toOpaque()
        coreEvents.pointee.version = UInt32(PW_VERSION_CORE_EVENTS)
        coreEvents.pointee.done = graphCoreDone
        coreEvents.pointee.error = graphCoreError
        _ = CPipeWire_pw_core_add_listener(core, coreListener, coreEvents, unmanagedSelf)

        guard let registry = CPipeWire_pw_core_get_registry(core) else {
            throw .streamFailed("cannot get the PipeWire registry")
        }
        self.registry = registry
        registryEvents.pointee.version = UInt32(PW_VERSION_REGISTRY_EVENTS)
        registryEvents.pointee.global = graphRegistryGlobal
        registryEvents.pointee.global_remove = graphRegistryGlobalRemove
        _ = CPipeWire_pw_registry_add_listener(registry, registryListener, registryEvents, unmanagedSelf)

        // The first roundtrip lists the globals (and binds the metadata); the second brings the
        // metadata's properties.
        try roundtripLocked(timeoutMs: timeoutMs)
        if metadata != nil { try roundtripLocked(timeoutMs: timeoutMs) }
    }

    /// Sends a sync and waits for its answer; the caller holds the loop lock.
    func roundtripLocked(timeoutMs: Int) throws(AudioCaptureError) {
        guard let core else { return }
        synced = false
        syncSequence = CPipeWire_pw_core_sync(core, 0)
        let deadlineMs = Monotonic.nowMs() + timeoutMs
        while !synced && daemonError == nil {
            let remainingMs = deadlineMs - Monotonic.nowMs()
            if remainingMs <= 0 {
                throw .noDaemon(detail: "the PipeWire daemon did not answer within \(timeoutMs) ms; "
                    + "it is hung or overloaded (restart pipewire)")
            }
            _ = pw_thread_loop_timed_wait(threadLoop, Int32(max(1, (remainingMs + 999) / 1000)))
        }
        if let daemonError { throw .streamFailed("the PipeWire daemon reported an error: \(daemonError)") }
    }

    func withLock<T>(_ body: () throws(AudioCaptureError) -> T) throws(AudioCaptureError) -> T {
        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        return try body()
    }

    /// Wakes a thread waiting on the loop (`roundtripLocked`, a capture waiting for its format).
    func signal() { pw_thread_loop_signal(threadLoop, false) }

    /// Waits on the loop's condition for up to `timeoutMs`; the caller holds the lock.
    func waitLocked(timeoutMs: Int) {
        _ = pw_thread_loop_timed_wait(threadLoop, Int32(max(1, (timeoutMs + 999) / 1000)))
    }

    /// The sources, then the sink monitors, as `AudioDevices.listSources` reports them.
    func sourcesLocked() -> [AudioSourceInfo] {
        let ordered = nodes.values.sorted { $0.id < $1.id }
        let defaultSource = defaultSourceName ?? ordered.filter { $0.kind == .source }
            .max { $0.prioritySession < $1.prioritySession }?.name
        let defaultSink = defaultSinkName ?? ordered.filter { $0.kind == .sink }
            .max { $0.prioritySession < $1.prioritySession }?.name
        let sources = ordered.filter { $0.kind == .source }.map {
            AudioSourceInfo(id: $0.id, name: $0.name, description: $0.description,
                            isDefault: $0.name == defaultSource, isMonitor: false)
        }
        let monitors = ordered.filter { $0.kind == .sink }.map {
            AudioSourceInfo(id: $0.id, name: $0.name, description: "Monitor of " + $0.description,
                            isDefault: $0.name == defaultSink, isMonitor: true)
        }
        return sources + monitors
    }

    /// The default sink's name: the metadata's, else the sink with the highest priority.
    func defaultSinkLocked() -> String? {
        defaultSinkName ?? nodes.values.filter { $0.kind == .sink }
            .max { ($0.prioritySession, $1.id) < ($1.prioritySession, $0.id) }?.name
    }

    /// Removes every listener, destroys the proxies, disconnects, stops the thread, frees: the
    /// reverse of `init`. Idempotent. Must not be called on the loop thread.
    func close() {
        guard !closed else { return }
        closed = true
        if started { pw_thread_loop_lock(threadLoop) }
        onNodeAdded = nil
        onNodeRemoved = nil
        if let metadata {
            spa_hook_remove(metadataListener)
            pw_proxy_destroy(metadata)
            self.metadata = nil
        }
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
        Self.freeStorage(self)
    }

    private static func freeStorage(_ graph: PipeWireGraph) {
        graph.coreListener.deallocate()
        graph.registryListener.deallocate()
        graph.metadataListener.deallocate()
        graph.coreEvents.deallocate()
        graph.registryEvents.deallocate()
        graph.metadataEvents.deallocate()
    }

    // MARK: Callbacks (loop thread)

    fileprivate func coreDone(id: UInt32, sequence: Int32) {
        if id == CPipeWire_PW_ID_CORE() && sequence == syncSequence {
            synced = true
            signal()
        }
    }

    fileprivate func coreError(id: UInt32, result: Int32, message: String) {
        // Errors on other objects (a stream's node, a link) are reported to their own listeners.
        if id == CPipeWire_PW_ID_CORE() {
            daemonError = message.isEmpty ? "error \(result)" : message
            signal()
        }
    }

    fileprivate func global(id: UInt32, type: String, props: UnsafePointer<spa_dict>?) {
        func property(_ key: String) -> String? {
            CPipeWire_spa_dict_lookup(props, key).map { String(cString: $0) }
        }
        if type == String(cString: CPipeWire_PW_TYPE_INTERFACE_Node()) {
            let kind: PipeWireNode.Kind
            switch property(PW_KEY_MEDIA_CLASS) {
            case "Audio/Source", "Audio/Source/Virtual": kind = .source
            case "Audio/Sink": kind = .sink
            default: return
            }
            guard let name = property(PW_KEY_NODE_NAME) else { return }
            let node = PipeWireNode(
                id: id, name: name, description: property(PW_KEY_NODE_DESCRIPTION) ?? property(PW_KEY_NODE_NICK) ?? name,
                kind: kind, prioritySession: property(PW_KEY_PRIORITY_SESSION).flatMap { Int($0) } ?? 0)
            nodes[id] = node
            onNodeAdded?(node)
        } else if type == String(cString: CPipeWire_PW_TYPE_INTERFACE_Metadata()),
                  metadata == nil, property(PW_KEY_METADATA_NAME) == "default", let registry
        {
            guard let bound = CPipeWire_pw_registry_bind_metadata(registry, id) else { return }
            metadata = bound
            metadataEvents.pointee.version = UInt32(PW_VERSION_METADATA_EVENTS)
            metadataEvents.pointee.property = graphMetadataProperty
            _ = CPipeWire_pw_metadata_add_listener(bound, metadataListener, metadataEvents,
                                                   Unmanaged.passUnretained(self).toOpaque())
        }
    }

    fileprivate func globalRemove(id: UInt32) {
        guard let node = nodes.removeValue(forKey: id) else { return }
        onNodeRemoved?(node)
    }

    fileprivate func metadataProperty(subject: UInt32, key: String?, value: String?) {
        guard subject == CPipeWire_PW_ID_CORE() else { return }
        switch key {
        case "default.audio.source": defaultSourceName = value.flatMap(Self.jsonName)
        case "default.audio.sink": defaultSinkName = value.flatMap(Self.jsonName)
        case nil:  // all properties cleared
            defaultSourceName = nil
            defaultSinkName = nil
        default: break
        }
    }

    /// The `name` of a metadata value such as `{ "name": "alsa_input.pci-0000_00_1f.3" }`.
    static func jsonName(_ json: String) -> String? {
        let characters = Array(json)
        let key = Array("\"name\"")
        guard let start = (0...max(0, characters.count - key.count)).first(where: {
            $0 + key.count <= characters.count && Array(characters[$0..<($0 + key.count)]) == key
        }) else { return nil }
        let rest = characters[(start + key.count)...].drop { $0 == " " || $0 == ":" || $0 == "\t" }
        guard rest.first == "\"" else { return nil }
        var name = ""
        var escaped = false
        for character in rest.dropFirst() {
            if escaped {
                name.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                return name
            } else {
                name.append(character)
            }
        }
        return nil
    }
}

private func graph(_ data: UnsafeMutableRawPointer?) -> PipeWireGraph {
    Unmanaged<PipeWireGraph>.fromOpaque(data!).takeUnretainedValue()
}

private func graphCoreDone(_ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32) {
    graph(data).coreDone(id: id, sequence: sequence)
}

private func graphCoreError(
    _ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32, _ result: Int32,
    _ message: UnsafePointer<CChar>?
) {
    graph(data).coreError(id: id, result: result, message: message.map { String(cString: $0) } ?? "")
}

private func graphRegistryGlobal(
    _ data: UnsafeMutableRawPointer?, _ id: UInt32, _ permissions: UInt32, _ type: UnsafePointer<CChar>?,
    _ version: UInt32, _ props: UnsafePointer<spa_dict>?
) {
    guard let type else { return }
    graph(data).global(id: id, type: String(cString: type), props: props)
}

private func graphRegistryGlobalRemove(_ data: UnsafeMutableRawPointer?, _ id: UInt32) {
    graph(data).globalRemove(id: id)
}

private func graphMetadataProperty(
    _ data: UnsafeMutableRawPointer?, _ subject: UInt32, _ key: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> Int32 {
    graph(data).metadataProperty(subject: subject, key: key.map { String(cString: $0) },
                                 value: value.map { String(cString: $0) })
    return 0
}

/// Lists the audio sources PipeWire offers.
public enum AudioDevices {
    /// Every `Audio/Source` node, then the monitor of every `Audio/Sink` (`isMonitor`), each
    /// with the session manager's default marked. Connects, reads the registry, disconnects.
    public static func listSources() throws(AudioCaptureError) -> [AudioSourceInfo] {
        try listSources(remote: nil)
    }

    /// The same, from the daemon at `remote` (a socket name in the runtime directory or a path).
    public static func listSources(remote: String?) throws(AudioCaptureError) -> [AudioSourceInfo] {
        let graph = try PipeWireGraph(name: "livepush-devices", remote: remote)
        defer { graph.close() }
        return try graph.withLock { () throws(AudioCaptureError) in graph.sourcesLocked() }
    }
}
