import CPipeWire

// MARK: Naming a node's formats

/// Binds a node and collects the video formats of its EnumFormat params (for errors only).
final class NodeFormatQuery {
    var names: [String] = []
    var done = false
    var sequence: Int32 = 0
    var threadLoop: OpaquePointer?

    func run(registry: OpaquePointer?, core: OpaquePointer?, threadLoop: OpaquePointer?, nodeID: UInt32, timeoutMs: Int)
        -> [String]
    {
        guard let registry, let core, let threadLoop else { return [] }
        self.threadLoop = threadLoop
        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        guard let node = CPipeWire_pw_registry_bind_node(registry, nodeID) else { return [] }
        defer { pw_proxy_destroy(node) }
        var events = pw_node_events()
        events.version = UInt32(PW_VERSION_NODE_EVENTS)
        events.param = nodeQueryParam
        var listener = spa_hook()
        let unmanaged = Unmanaged.passRetained(self)
        defer { unmanaged.release() }
        _ = CPipeWire_pw_node_add_listener(node, &listener, &events, unmanaged.toOpaque())
        defer { spa_hook_remove(&listener) }
        var coreEvents = pw_core_events()
        coreEvents.version = UInt32(PW_VERSION_CORE_EVENTS)
        coreEvents.done = nodeQueryDone
        var coreListener = spa_hook()
        _ = CPipeWire_pw_core_add_listener(core, &coreListener, &coreEvents, unmanaged.toOpaque())
        defer { spa_hook_remove(&coreListener) }
        _ = CPipeWire_pw_node_enum_formats(node, 0)
        sequence = CPipeWire_pw_core_sync(core, 0)
        var deadline = timespec()
        pw_thread_loop_get_time(threadLoop, &deadline, Int64(timeoutMs) * 1_000_000)
        while !done {
            if pw_thread_loop_timed_wait_full(threadLoop, &deadline) != 0 { break }
        }
        return names
    }
}

private func nodeQuery(_ data: UnsafeMutableRawPointer?) -> NodeFormatQuery {
    Unmanaged<NodeFormatQuery>.fromOpaque(data!).takeUnretainedValue()
}

private func nodeQueryParam(
    _ data: UnsafeMutableRawPointer?, _ sequence: Int32, _ id: UInt32, _ index: UInt32, _ next: UInt32,
    _ param: UnsafePointer<spa_pod>?
) {
    let query = nodeQuery(data)
    var values = [UInt32](repeating: 0, count: 64)
    var subtype: UInt32 = 0
    let count = Int(values.withUnsafeMutableBufferPointer {
        CPipeWire_video_offered_formats(param, $0.baseAddress, 64, &subtype)
    })
    let suffix = subtype == SPA_MEDIA_SUBTYPE_raw.rawValue ? "" : " (not raw video)"
    for value in values.prefix(count) {
        let name = spaFormatName(value) + suffix
        if !query.names.contains(name) { query.names.append(name) }
    }
}

private func nodeQueryDone(_ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32) {
    let query = nodeQuery(data)
    // Node params arrive before the answer to a core sync sent after the request.
    if id == CPipeWire_PW_ID_CORE() && sequence == query.sequence {
        query.done = true
        pw_thread_loop_signal(query.threadLoop, false)
    }
}
