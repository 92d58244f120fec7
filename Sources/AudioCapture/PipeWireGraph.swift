import CPipeWire
import PipeWireCore

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

/// The audio side of a PipeWire connection (`PipeWireCore.PipeWireConnection`, shared with the
/// screen stream and ear monitoring): the audio nodes the registry announces and the "default"
/// metadata's default source and sink.
///
/// Every field is read and written on the thread loop, or elsewhere under its lock
/// (`withLock`). C callbacks (the metadata's) reach the graph through `Unmanaged` (it outlives
/// its listeners: `close()` removes them before anything is freed).
final class PipeWireGraph {
    let connection: PipeWireConnection
    var threadLoop: OpaquePointer { connection.threadLoop }
    var core: OpaquePointer? { connection.core }
    private var metadata: OpaquePointer?
    private let metadataListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let metadataEvents = UnsafeMutablePointer<pw_metadata_events>.allocate(capacity: 1)
    private var closed = false

    /// Audio nodes by global id.
    private(set) var nodes: [UInt32: PipeWireNode] = [:]
    /// The session manager's defaults, from the "default" metadata (nil until it says).
    private(set) var defaultSourceName: String?
    private(set) var defaultSinkName: String?

    var onNodeAdded: ((PipeWireNode) -> Void)?
    var onNodeRemoved: ((PipeWireNode) -> Void)?
    /// The daemon went away (its socket broke); every stream on this graph is dead.
    var onDaemonLost: ((String) -> Void)?
    /// The daemon's last error on the core, if any.
    var daemonError: String? { connection.daemonError }

    /// Connects and waits for the registry's first listing (and the default metadata's values).
    /// `realtime`: the data loop runs real-time (`PipeWireConnection(realtime:)`); only for
    /// streams whose `process` runs there and does no more than copy (the capture's
    /// `SampleHandoff`): a stream processed on the thread loop loses more behind a real-time data
    /// loop, which keeps cycling while the thread loop waits.
    init(name: String, remote: String? = nil, timeoutMs: Int = 3000, realtime: Bool = false) throws(AudioCaptureError) {
        metadataListener.initialize(to: spa_hook())
        metadataEvents.initialize(to: pw_metadata_events())
        do throws(PipeWireConnectionError) {
            connection = try PipeWireConnection(name: name, realtime: realtime)
        } catch {
            metadataListener.deallocate()
            metadataEvents.deallocate()
            throw .pipeWire(error)
        }
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
        try connection.withLock { () throws(AudioCaptureError) in
            let unmanagedSelf = Unmanaged.passUnretained(self)
            connection.onGlobal = { id, type, props in unmanagedSelf.takeUnretainedValue().global(id: id, type: type, props: props) }
            connection.onGlobalRemove = { id in unmanagedSelf.takeUnretainedValue().globalRemove(id: id) }
            connection.onDaemonError = { message, lost in
                if lost { unmanagedSelf.takeUnretainedValue().onDaemonLost?(message) }
            }
            // The first roundtrip lists the globals (and binds the metadata); the second brings
            // the metadata's properties.
            do throws(PipeWireConnectionError) {
                try connection.connectLocked(remote: .daemon(remote), timeoutMs: timeoutMs)
            } catch {
                throw .pipeWire(error)
            }
            if metadata != nil { try roundtripLocked(timeoutMs: timeoutMs) }
        }
    }

    /// Sends a sync and waits for its answer; the caller holds the loop lock.
    func roundtripLocked(timeoutMs: Int) throws(AudioCaptureError) {
        do throws(PipeWireConnectionError) {
            try connection.roundtripLocked(timeoutMs: timeoutMs)
        } catch {
            throw .pipeWire(error)
        }
    }

    func withLock<T>(_ body: () throws(AudioCaptureError) -> T) throws(AudioCaptureError) -> T {
        try connection.withLock(body)
    }

    /// Wakes a thread waiting on the loop (`roundtripLocked`, a capture waiting for its format).
    func signal() { connection.signal() }

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

    /// Removes the metadata's listener and proxy, then closes the connection: the reverse of
    /// `init`. Idempotent. Must not be called on the loop thread.
    func close() {
        guard !closed else { return }
        closed = true
        connection.withLock {
            onNodeAdded = nil
            onNodeRemoved = nil
            onDaemonLost = nil
            if let metadata {
                spa_hook_remove(metadataListener)
                pw_proxy_destroy(metadata)
                self.metadata = nil
            }
        }
        connection.close()
        metadataListener.deallocate()
        metadataEvents.deallocate()
    }

    // MARK: Callbacks (loop thread)

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
                  metadata == nil, property(PW_KEY_METADATA_NAME) == "default", let registry = connection.registry
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
        let graph = try PipeWireGraph(name: "livepush-devs", remote: remote)
        defer { graph.close() }
        return try graph.withLock { () throws(AudioCaptureError) in graph.sourcesLocked() }
    }
}
