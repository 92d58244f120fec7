import CPipeWire

// MARK: What a node offers

/// Binds a video node and collects its EnumFormat params as `VideoFormatOffer`s: the modes of a
/// camera (`CameraDevices`), and the formats named when a screen stream finds none in common
/// (PipeWireScreen). Runs on the caller's thread; PipeWire's callbacks fill it under the thread
/// loop's lock, which `run` holds while it waits.
package final class NodeFormatQuery {
    var offers: [VideoFormatOffer] = []
    var done = false
    var sequence: Int32 = 0
    var threadLoop: OpaquePointer?

    package init() {}

    /// The node's offers, in the order it gave them; [] when it did not answer within `timeoutMs`.
    /// The caller must not hold the thread loop's lock.
    package func run(registry: OpaquePointer?, core: OpaquePointer?, threadLoop: OpaquePointer?, nodeID: UInt32,
                     timeoutMs: Int) -> [VideoFormatOffer]
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
        return offers
    }

    /// The formats of `offers` by name, each once: "YUY2", "MJPEG (not raw video)".
    package static func names(_ offers: [VideoFormatOffer]) -> [String] {
        var names: [String] = []
        for offer in offers {
            let name = offer.formatName + (offer.isRaw ? "" : " (not raw video)")
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// Flattens one EnumFormat param (on PipeWire's thread) into offers, one per raw format.
    static func offers(from param: UnsafePointer<spa_pod>?) -> [VideoFormatOffer] {
        var subtype: UInt32 = 0, matrix: UInt32 = 0
        var formats = [UInt32](repeating: 0, count: 64)
        var sizes = [spa_rectangle](repeating: spa_rectangle(), count: 8)
        var rates = [spa_fraction](repeating: spa_fraction(), count: 64)
        var formatCount: Int32 = 0, sizeCount: Int32 = 0, rateCount: Int32 = 0
        var formatChoice: UInt32 = 0, sizeChoice: UInt32 = 0, rateChoice: UInt32 = 0
        let parsed = formats.withUnsafeMutableBufferPointer { formatBuffer in
            sizes.withUnsafeMutableBufferPointer { sizeBuffer in
                rates.withUnsafeMutableBufferPointer { rateBuffer in
                    CPipeWire_video_parse_offer(param, &subtype, formatBuffer.baseAddress, 64, &formatCount, &formatChoice,
                                                sizeBuffer.baseAddress, 8, &sizeCount, &sizeChoice,
                                                rateBuffer.baseAddress, 64, &rateCount, &rateChoice, &matrix)
                }
            }
        }
        guard parsed == 0, let sizeValues = choiceValues(Array(sizes.prefix(Int(sizeCount))), sizeChoice) else { return [] }
        let offerSizes: CameraSizes
        switch sizeValues {
        case .single(let size):
            offerSizes = .fixed(width: Int(size.width), height: Int(size.height))
        case .range(let low, let high, let step):
            offerSizes = .range(minWidth: Int(low.width), minHeight: Int(low.height), maxWidth: Int(high.width),
                                maxHeight: Int(high.height), stepWidth: Int(max(1, step?.width ?? 1)),
                                stepHeight: Int(max(1, step?.height ?? 1)))
        case .list(let list):
            // An enumeration of sizes in one param: the first (a camera gives one size per param).
            offerSizes = .fixed(width: Int(list[0].width), height: Int(list[0].height))
        }
        let offerRates: CameraFrameRates
        let rateList = Array(rates.prefix(Int(max(0, rateCount)))).map {
            CameraFrameRate(numerator: $0.num, denominator: $0.denom)
        }
        switch choiceValues(rateList, rateChoice) {
        case .single(let rate)?: offerRates = .list([rate])
        case .list(let list)?: offerRates = .list(list.sorted(by: >))
        case .range(let low, let high, _)?: offerRates = .range(min: low, max: high)
        case nil: offerRates = .list([])  // no frame rate said: any
        }
        let colorMatrix: CameraColorMatrix
        switch matrix {
        case 0, SPA_VIDEO_COLOR_MATRIX_UNKNOWN.rawValue: colorMatrix = .unspecified
        case SPA_VIDEO_COLOR_MATRIX_BT601.rawValue: colorMatrix = .bt601
        case SPA_VIDEO_COLOR_MATRIX_BT709.rawValue: colorMatrix = .bt709
        default: colorMatrix = .other
        }
        if subtype == SPA_MEDIA_SUBTYPE_raw.rawValue {
            var formatIDs = Array(formats.prefix(Int(max(0, formatCount))))
            // An enumeration's first value is its default, repeated among the others.
            if formatChoice == SPA_CHOICE_Enum.rawValue && formatIDs.count > 1 { formatIDs.removeFirst() }
            return formatIDs.map { id in
                VideoFormatOffer(formatName: videoFormatName(id), cameraFormat: CameraFormat(rawVideoFormat: id),
                                 isRaw: true, sizes: offerSizes, frameRates: offerRates, colorMatrix: colorMatrix)
            }
        }
        let isMJPEG = subtype == SPA_MEDIA_SUBTYPE_mjpg.rawValue
        let name = isMJPEG ? "MJPEG" : (CPipeWire_media_subtype_name(subtype).map { String(cString: $0).uppercased() }
            ?? "subtype \(subtype)")
        return [VideoFormatOffer(formatName: name, cameraFormat: isMJPEG ? .mjpeg : nil, isRaw: false,
                                 sizes: offerSizes, frameRates: offerRates)]
    }

    private enum ChoiceValues<Value> {
        case single(Value)
        case list([Value])
        case range(Value, Value, Value?)
    }

    /// SPA choice values read by their choice type: None one value; Enum a default then the values;
    /// Range default, min, max; Step default, min, max, step.
    private static func choiceValues<Value>(_ values: [Value], _ choice: UInt32) -> ChoiceValues<Value>? {
        guard !values.isEmpty else { return nil }
        switch choice {
        case SPA_CHOICE_Range.rawValue where values.count >= 3: return .range(values[1], values[2], nil)
        case SPA_CHOICE_Step.rawValue where values.count >= 4: return .range(values[1], values[2], values[3])
        case SPA_CHOICE_Enum.rawValue where values.count > 1: return .list(Array(values.dropFirst()))
        default: return .single(values[0])
        }
    }
}

extension CameraFormat {
    /// The camera format of a raw SPA video format (SPA_VIDEO_FORMAT_YUY2, _NV12, _I420), if it is one.
    package init?(rawVideoFormat id: UInt32) {
        switch spa_video_format(rawValue: id) {
        case SPA_VIDEO_FORMAT_YUY2: self = .yuy2
        case SPA_VIDEO_FORMAT_NV12: self = .nv12
        case SPA_VIDEO_FORMAT_I420: self = .i420
        default: return nil
        }
    }
}

/// The short name of an SPA video format ("BGRx", "NV12", "YUY2").
package func videoFormatName(_ value: UInt32) -> String {
    CPipeWire_video_format_name(value).map { String(cString: $0) } ?? "format \(value)"
}

private func nodeQuery(_ data: UnsafeMutableRawPointer?) -> NodeFormatQuery {
    Unmanaged<NodeFormatQuery>.fromOpaque(data!).takeUnretainedValue()
}

private func nodeQueryParam(
    _ data: UnsafeMutableRawPointer?, _ sequence: Int32, _ id: UInt32, _ index: UInt32, _ next: UInt32,
    _ param: UnsafePointer<spa_pod>?
) {
    let query = nodeQuery(data)
    query.offers += NodeFormatQuery.offers(from: param)
}

private func nodeQueryDone(_ data: UnsafeMutableRawPointer?, _ id: UInt32, _ sequence: Int32) {
    let query = nodeQuery(data)
    // Node params arrive before the answer to a core sync sent after the request.
    if id == CPipeWire_PW_ID_CORE() && sequence == query.sequence {
        query.done = true
        pw_thread_loop_signal(query.threadLoop, false)
    }
}
