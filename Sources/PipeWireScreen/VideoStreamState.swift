import CPipeWire
import LinuxSystem
import PipeWireCameras
import PipeWireCore

#if canImport(Glibc)
import Glibc
#endif

private let cursorMetaMaxSide: UInt32 = 256

/// Everything the PipeWire thread and the caller share, for one video stream on one node: a screen
/// (`PipeWireScreenStream`: the six Capture Link formats, copied with the cursor) or a camera
/// (`PipeWireCameraStream`: one chosen mode, converted into BGRx; `VideoStreamState+Camera.swift`).
/// Fields are touched only under the thread loop's lock (the callbacks run with it held).
final class VideoStreamState {
    /// The shared PipeWire connection (loop, context, core, registry): `PipeWireCore`.
    private var connection: PipeWireConnection!
    private var threadLoop: OpaquePointer? { connection?.threadLoop }
    private var core: OpaquePointer? { connection?.core }
    private var registry: OpaquePointer? { connection?.registry }
    private var stream: OpaquePointer?
    private var streamListener = spa_hook()
    private var streamEvents = pw_stream_events()
    private var retainedSelf: Unmanaged<VideoStreamState>?
    private var closed = false
    /// Room for the EnumFormat pod: pods point into it until PipeWire has copied them.
    let formatOffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1024)
    /// Room for the Buffers and Meta pods of `paramChanged`.
    private let bufferParams = UnsafeMutablePointer<UInt8>.allocate(capacity: 4 * 256)

    // Discovery
    var videoNodes: [PipeWireVideoNode] = []
    var allNodes: [UInt32: PipeWireVideoNode] = [:]
    /// Every Video/Source node with the properties that tell a camera apart.
    var sourceNodes: [UInt32: VideoSourceNode] = [:]
    var daemonError: String?
    var targetNode: PipeWireVideoNode?
    var targetRemoved = false

    // Stream
    var options: PipeWireScreenOptions
    var format: ScreenStreamFormat?
    var unsupportedFormat: String?
    var streamState = PW_STREAM_STATE_UNCONNECTED
    var streamError: String?
    var target: (UnsafeMutableRawBufferPointer, Int, Int)?
    var filled: CopiedScreenFrame?
    var unchangedSeen = false
    var wantsDestination = false
    var copiedAny = false
    var missedChange = false
    var producerSendsDamage = false
    var droppedWithoutTarget = 0
    var copyDurationsNs = [UInt64](repeating: 0, count: 4096)
    var copies = 0
    var corruptedDropped = 0
    /// spa_data type of the last buffer with a picture (0: none yet).
    var lastDataType: UInt32 = 0
    var unchangedBuffers = 0
    var cursor = CursorState()
    // Camera streams only (VideoStreamState+Camera.swift)
    /// The mode asked of the camera; nil for a screen stream.
    var cameraMode: CameraMode?
    /// The mode the camera negotiated (its format, size and colours), which `format` is converted from.
    var cameraNegotiated: CameraMode?
    /// The libjpeg-turbo decoder of MJPEG cameras, made at the first frame; used on PipeWire's thread.
    var jpegDecoder: JPEGFrameDecoder?

    init(options: PipeWireScreenOptions) throws(PipeWireScreenError) {
        self.options = options
        try open(remote: options.remote, timeoutMs: options.timeoutMs)
        do {
            try connectStream()
        } catch {
            close()
            throw error
        }
    }

    init(listingOnly remote: PipeWireRemote, timeoutMs: Int) throws(PipeWireScreenError) {
        options = PipeWireScreenOptions(target: .node(0))
        try open(remote: remote, timeoutMs: timeoutMs)
    }

    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T { try connection.withLock(body) }

    /// Wakes a caller waiting in `wait`; called on PipeWire's thread.
    func wake() { connection.signal() }

    /// Waits under the lock until `done` holds or `timeoutMs` passes; returns whether `done` held.
    @discardableResult
    func waitLocked(timeoutMs: Int, until done: () -> Bool) -> Bool {
        connection.waitLocked(timeoutMs: timeoutMs, until: done)
    }

    // MARK: Connecting

    private func open(remote: PipeWireRemote, timeoutMs: Int) throws(PipeWireScreenError) {
        do throws(PipeWireConnectionError) {
            connection = try PipeWireConnection(name: "livepush-screen")
        } catch {
            formatOffer.deallocate()
            bufferParams.deallocate()
            closed = true
            throw .pipeWire(error)
        }
        retainedSelf = Unmanaged.passRetained(self)
        let failure: PipeWireScreenError? = withLock { connectCore(remote: remote, timeoutMs: timeoutMs) }
        if let failure {
            close()
            throw failure
        }
    }

    /// Connects the core and lists the nodes; under the lock. Returns what went wrong, if anything.
    private func connectCore(remote: PipeWireRemote, timeoutMs: Int) -> PipeWireScreenError? {
        let unmanagedSelf = retainedSelf!
        connection.onGlobal = { id, type, props in unmanagedSelf.takeUnretainedValue().global(id: id, type: type, props: props) }
        connection.onGlobalRemove = { id in unmanagedSelf.takeUnretainedValue().globalRemoved(id: id) }
        connection.onDaemonError = { message, _ in unmanagedSelf.takeUnretainedValue().daemonFailed(message) }
        let target: PipeWireConnection.Remote
        switch remote {
        case .daemon(let name): target = .daemon(name)
        case .descriptor(let descriptor): target = .descriptor(descriptor)
        }
        do throws(PipeWireConnectionError) {
            try connection.connectLocked(remote: target, timeoutMs: timeoutMs)
        } catch {
            return .pipeWire(error)
        }
        return nil
    }

    static func socketPath(remote: String?) -> String { PipeWireConnection.socketPath(remote: remote) }

    private func connectStream() throws(PipeWireScreenError) {
        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        let node = try screenNode()
        try connectLocked(node: node, role: "Screen", streamName: "livepush-screen",
                          params: buildFormatOffer(maxWidth: options.maxWidth, maxHeight: options.maxHeight))
    }

    /// The node `options.target` names; under the lock.
    private func screenNode() throws(PipeWireScreenError) -> PipeWireVideoNode {
        let node: PipeWireVideoNode
        switch options.target {
        case .node(let id):
            guard let found = allNodes[id] else { throw .nodeNotFound(options.target, videoNodes: videoNodes) }
            node = found
        case .name(let name):
            guard let found = allNodes.values.sorted(by: { $0.id < $1.id }).first(where: { $0.name == name }) else {
                throw .nodeNotFound(options.target, videoNodes: videoNodes)
            }
            node = found
        }
        // The portal's restricted connection may hide the class; only refuse a class that says audio or MIDI.
        if !node.mediaClass.isEmpty && !node.mediaClass.contains("Video") {
            throw .notAVideoNode(options.target, mediaClass: node.mediaClass)
        }
        return node
    }

    /// Connects a stream to `node` offering `params` (EnumFormat pods) and waits for the format; under
    /// the lock.
    func connectLocked(node: PipeWireVideoNode, role: String, streamName: String,
                       params offer: [UnsafePointer<spa_pod>?]) throws(PipeWireScreenError)
    {
        targetNode = node
        let properties = CPipeWire_pw_properties_new_empty()
        pw_properties_set(properties, PW_KEY_MEDIA_TYPE, "Video")
        pw_properties_set(properties, PW_KEY_MEDIA_CATEGORY, "Capture")
        pw_properties_set(properties, PW_KEY_MEDIA_ROLE, role)
        pw_properties_set(properties, PW_KEY_NODE_NAME, "livepush-capture")
        guard let stream = pw_stream_new(core, streamName, properties) else {
            throw .pipeWire(.cannotCreate("stream"))
        }
        self.stream = stream
        streamEvents.version = UInt32(PW_VERSION_STREAM_EVENTS)
        streamEvents.state_changed = screenStreamStateChanged
        streamEvents.param_changed = screenStreamParamChanged
        streamEvents.process = screenStreamProcess
        pw_stream_add_listener(stream, &streamListener, &streamEvents, retainedSelf!.toOpaque())

        var params = offer
        guard !params.isEmpty, !params.contains(where: { $0 == nil }) else { throw .pipeWire(.cannotCreate("format offer")) }
        let flags = pw_stream_flags(rawValue: PW_STREAM_FLAG_AUTOCONNECT.rawValue | PW_STREAM_FLAG_MAP_BUFFERS.rawValue
            | PW_STREAM_FLAG_DONT_RECONNECT.rawValue)
        let result = pw_stream_connect(stream, SPA_DIRECTION_INPUT, node.id, flags, &params, UInt32(params.count))
        guard result >= 0 else { throw .streamFailed("pw_stream_connect: \(String(cString: strerror(-result)))") }

        let negotiated = waitLocked(timeoutMs: options.timeoutMs) {
            format != nil || unsupportedFormat != nil || streamError != nil || daemonError != nil || targetRemoved
        }
        if format != nil { return }
        if targetRemoved { throw .streamFailed("PipeWire node \(node.id) '\(node.name)' went away while connecting") }
        if let daemonError { throw .pipeWire(.daemonError(daemonError)) }
        let detail = unsupportedFormat.map { "it chose \($0)" } ?? streamError
            ?? (negotiated ? "no format" : "no common format after \(options.timeoutMs) ms")
        pw_thread_loop_unlock(threadLoop)
        let offered = offeredFormats(nodeID: node.id)
        pw_thread_loop_lock(threadLoop)
        throw .negotiationFailed(target: "node \(node.id) '\(node.name)'", offered: offered, detail: detail)
    }

    /// The EnumFormat pods: the six formats at sizes up to the limit, and (when the limit is below
    /// the largest size) the same at any size, second, so that a producer that cannot scale still
    /// negotiates (its frames are then cropped). Call under the lock.
    private func buildFormatOffer(maxWidth: Int, maxHeight: Int) -> [UnsafePointer<spa_pod>?] {
        let formats = formatTable.map { $0.1.rawValue }
        let largest: UInt32 = 16384
        let width = UInt32(max(1, min(maxWidth, Int(largest)))), height = UInt32(max(1, min(maxHeight, Int(largest))))
        var sizes = [(width, height)]
        if width < largest || height < largest { sizes.append((largest, largest)) }
        return formats.withUnsafeBufferPointer { list in
            sizes.enumerated().compactMap { index, size in
                CPipeWire_video_build_enum_format(formatOffer + index * 512, 512, list.baseAddress, UInt32(list.count),
                                                  min(width, 1920), min(height, 1080), size.0, size.1)
            }
        }
    }

    func updateFormatOffer(maxWidth: Int, maxHeight: Int) {
        withLock {
            guard let stream else { return }
            var params = buildFormatOffer(maxWidth: maxWidth, maxHeight: maxHeight)
            _ = pw_stream_update_params(stream, &params, UInt32(params.count))
        }
    }

    /// Binds the node and asks for its EnumFormat params, to name them in an error.
    private func offeredFormats(nodeID: UInt32) -> [String] {
        NodeFormatQuery.names(nodeOffers(nodeID: nodeID, timeoutMs: 1000))
    }

    /// The node's EnumFormat params (a camera's modes); the caller must not hold the lock.
    func nodeOffers(nodeID: UInt32, timeoutMs: Int) -> [VideoFormatOffer] {
        NodeFormatQuery().run(registry: registry, core: core, threadLoop: threadLoop, nodeID: nodeID, timeoutMs: timeoutMs)
    }

    // MARK: Callbacks (PipeWire's thread, lock held)

    func daemonFailed(_ message: String) {
        daemonError = message
        wake()
    }

    func global(id: UInt32, type: String, props: UnsafePointer<spa_dict>?) {
        guard let source = VideoSourceNode(id: id, type: type, props: props) else { return }
        sourceNodes[id] = source
        wake()  // a camera granted after connecting (findCamera through the Camera portal)
        let node = PipeWireVideoNode(id: id, name: source.name, mediaClass: source.mediaClass,
                                     nodeDescription: source.nodeDescription)
        allNodes[id] = node
        if node.mediaClass.contains("Video") { videoNodes.append(node) }
    }

    func globalRemoved(id: UInt32) {
        allNodes[id] = nil
        sourceNodes[id] = nil
        videoNodes.removeAll { $0.id == id }
        if let targetNode, targetNode.id == id {
            targetRemoved = true
            wake()
        }
    }

    func streamStateChanged(_ newState: pw_stream_state, error: String?) {
        debugLog("stream state \(String(cString: pw_stream_state_as_string(newState))) \(error ?? "")")
        streamState = newState
        if newState == PW_STREAM_STATE_ERROR { streamError = error ?? "stream error" }
        if newState == PW_STREAM_STATE_UNCONNECTED && format != nil && streamError == nil {
            streamError = "the stream was disconnected"
        }
        wake()
    }

    func paramChanged(id: UInt32, param: UnsafePointer<spa_pod>?) {
        guard id == SPA_PARAM_Format.rawValue, let param else { return }
        if let cameraMode {
            cameraFormatChanged(param, asked: cameraMode)
            return
        }
        var info = spa_video_info_raw()
        guard CPipeWire_video_parse_format(param, &info) == 0 else { return }
        guard let pixelFormat = formatTable.first(where: { $0.1 == info.format })?.0 else {
            unsupportedFormat = spaFormatName(info.format.rawValue)
            wake()
            return
        }
        let newFormat = ScreenStreamFormat(format: pixelFormat, width: Int(info.size.width), height: Int(info.size.height))
        if newFormat != format { missedChange = true }
        format = newFormat
        producerSendsDamage = false
        requestBuffers(damageAndCursor: true)
        wake()
    }

    /// Buffers we can map, and the metadata we use: header, and for a screen damage and the cursor (if
    /// drawn). The consumer's Meta sizes are ranges: a fixed size must match the producer's exactly.
    func requestBuffers(damageAndCursor: Bool) {
        let regionBytes = UInt32(MemoryLayout<spa_meta_region>.size)
        var params: [UnsafePointer<spa_pod>?] = [
            CPipeWire_video_build_buffers(bufferParams, 256),
            CPipeWire_video_build_meta(bufferParams + 256, 256, SPA_META_Header.rawValue,
                                       UInt32(MemoryLayout<spa_meta_header>.size)),
        ]
        if damageAndCursor {
            params.append(CPipeWire_video_build_meta_range(bufferParams + 512, 256, SPA_META_VideoDamage.rawValue,
                                                           regionBytes * 16, regionBytes, regionBytes * 16))
        }
        if damageAndCursor && options.drawCursor {
            params.append(CPipeWire_video_build_meta_range(
                bufferParams + 768, 256, SPA_META_Cursor.rawValue, CPipeWire_video_cursor_meta_size(64, 64),
                CPipeWire_video_cursor_meta_size(1, 1),
                CPipeWire_video_cursor_meta_size(cursorMetaMaxSide, cursorMetaMaxSide)))
        }
        var list = params.filter { $0 != nil }
        _ = pw_stream_update_params(stream, &list, UInt32(list.count))
    }

    func process() {
        guard let stream else { return }
        var newest: UnsafeMutablePointer<pw_buffer>?
        var changed = false
        while let buffer = pw_stream_dequeue_buffer(stream) {
            let bufferChanged = readMetadata(buffer)
            if !hasPicture(buffer) {
                pw_stream_queue_buffer(stream, buffer)
                continue
            }
            if bufferChanged { changed = true } else { unchangedBuffers += 1 }
            if let older = newest { pw_stream_queue_buffer(stream, older) }
            newest = buffer
        }
        guard let newest else { return }
        debugLog("process: changed=\(changed) target=\(target != nil) filled=\(filled != nil)")
        // The buffer goes back in this cycle: a consumer that keeps it stalls a producer that
        // waits for its buffers (pipewiresink does).
        defer {
            pw_stream_queue_buffer(stream, newest)
            wake()
        }
        if !changed && !missedChange && copiedAny {
            unchangedSeen = true
            return
        }
        guard let (destination, maxWidth, maxHeight) = target, let format, let spaBuffer = newest.pointee.buffer else {
            droppedWithoutTarget += 1
            missedChange = true
            wantsDestination = true
            return
        }
        let startNs = MonotonicClock.nowNs()
        let frame: CopiedScreenFrame?
        if let cameraNegotiated {
            frame = writeCameraPicture(spaBuffer, mode: cameraNegotiated, into: destination, maxWidth: maxWidth,
                                       maxHeight: maxHeight, nowNs: startNs)
        } else {
            frame = ScreenFrameCopier.copy(spaBuffer, format: format, into: destination, maxWidth: maxWidth,
                                           maxHeight: maxHeight, ptsNs: startNs, cursor: options.drawCursor ? cursor : nil)
        }
        copyDurationsNs[copies % copyDurationsNs.count] = MonotonicClock.nowNs() - startNs
        copies += 1
        if let frame {
            debugLog("copied \(frame.width)x\(frame.height) cursor=\(frame.cursorDrawn)")
            filled = frame
            copiedAny = true
            missedChange = false
            unchangedSeen = false
        }
    }

    /// A buffer holds a picture unless it is corrupted (dropped and counted) or empty (metadata only).
    private func hasPicture(_ buffer: UnsafeMutablePointer<pw_buffer>) -> Bool {
        guard let spaBuffer = buffer.pointee.buffer, spaBuffer.pointee.n_datas > 0, let datas = spaBuffer.pointee.datas
        else { return false }
        for index in 0..<Int(spaBuffer.pointee.n_datas) {
            guard let chunk = datas[index].chunk else { return false }
            if chunk.pointee.flags & Int32(SPA_CHUNK_FLAG_CORRUPTED) != 0 {
                corruptedDropped += 1
                return false
            }
        }
        if let header = spa_buffer_find_meta_data(spaBuffer, SPA_META_Header.rawValue,
                                                  MemoryLayout<spa_meta_header>.size)?
            .assumingMemoryBound(to: spa_meta_header.self),
            header.pointee.flags & UInt32(SPA_META_HEADER_FLAG_CORRUPTED) != 0
        {
            corruptedDropped += 1
            return false
        }
        lastDataType = datas[0].type
        return datas[0].data != nil && datas[0].chunk.pointee.size > 0
    }

    /// Cursor and damage metadata of every buffer, also of those that are skipped; returns whether
    /// the picture changed, as far as the damage tells (no damage metadata: it changed).
    private func readMetadata(_ buffer: UnsafeMutablePointer<pw_buffer>) -> Bool {
        guard let spaBuffer = buffer.pointee.buffer else { return true }
        if options.drawCursor,
           let cursor = spa_buffer_find_meta_data(spaBuffer, SPA_META_Cursor.rawValue, MemoryLayout<spa_meta_cursor>.size)?
            .assumingMemoryBound(to: spa_meta_cursor.self)
        {
            self.cursor.update(from: cursor)
        }
        guard let meta = spa_buffer_find_meta(spaBuffer, SPA_META_VideoDamage.rawValue), let data = meta.pointee.data
        else { return true }
        let count = Int(meta.pointee.size) / MemoryLayout<spa_meta_region>.size
        let regions = data.assumingMemoryBound(to: spa_meta_region.self)
        var damaged = false
        for index in 0..<count {
            let size = regions[index].region.size
            if size.width == 0 || size.height == 0 { break }
            damaged = true
        }
        // Zeroed damage from a producer that never fills it in must not read as "nothing changed".
        if damaged { producerSendsDamage = true }
        return damaged || !producerSendsDamage
    }

    // MARK: The caller's side

    func wait(timeoutMs: Int) -> ScreenStreamEvent {
        withLock {
            _ = waitLocked(timeoutMs: timeoutMs) {
                filled != nil || unchangedSeen || wantsDestination || targetRemoved || daemonError != nil
                    || streamError != nil
            }
            if streamError != nil && !targetRemoved && daemonError == nil {
                // The stream may learn of its node's end before the registry does: a round trip
                // to the daemon brings any pending global_remove first.
                try? connection.roundtripLocked(timeoutMs: 1000)
            }
            if targetRemoved { return .sourceClosed("the PipeWire node \(targetDescription) went away") }
            if let daemonError { return .sourceLost("PipeWire went away: \(daemonError)") }
            if let streamError { return .sourceLost("the PipeWire stream failed: \(streamError)") }
            if filled != nil { return .frameReady }
            if unchangedSeen { return .unchanged }
            if wantsDestination {
                wantsDestination = false
                return .needsDestination
            }
            return .idle
        }
    }

    private var targetDescription: String {
        targetNode.map { "\($0.id) '\($0.name)'" } ?? options.target.description
    }

    func close() {
        guard let connection, !closed else { return }
        closed = true
        connection.withLock {
            if let stream {
                target = nil
                pw_stream_destroy(stream)
                self.stream = nil
            }
        }
        connection.close()
        formatOffer.deallocate()
        bufferParams.deallocate()
        jpegDecoder = nil
        retainedSelf?.release()
        retainedSelf = nil
    }
}

// MARK: C callbacks: file-scope functions that reach the state through Unmanaged.

private func screenState(_ data: UnsafeMutableRawPointer?) -> VideoStreamState {
    Unmanaged<VideoStreamState>.fromOpaque(data!).takeUnretainedValue()
}

private func screenStreamStateChanged(
    _ data: UnsafeMutableRawPointer?, _ old: pw_stream_state, _ state: pw_stream_state, _ error: UnsafePointer<CChar>?
) {
    screenState(data).streamStateChanged(state, error: error.map { String(cString: $0) })
}

private func screenStreamParamChanged(_ data: UnsafeMutableRawPointer?, _ id: UInt32, _ param: UnsafePointer<spa_pod>?) {
    screenState(data).paramChanged(id: id, param: param)
}

private func screenStreamProcess(_ data: UnsafeMutableRawPointer?) {
    screenState(data).process()
}
