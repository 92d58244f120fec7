import CaptureLink
import CommandLineSupport
import LinuxSystem
import PipeWireScreen

#if canImport(Glibc)
import Glibc
#endif

/// The helper's loop for PipeWire sources (`--source pipewire`, `--source portal`, and `--source camera`
/// through `CameraSessionSource`): the producer sets the pace; each new picture is written once into a
/// free ring slot, at most at the pusher's rate. What differs between a screen and a camera is the
/// `PipeWireSessionSource`.
enum PipeWireCaptureLoop {
    /// `--list --source pipewire`: the video nodes of the daemon.
    static func list() -> Terminal.ExitCode {
        do {
            let nodes = try PipeWireScreenStream.videoNodes()
            print("PipeWire video nodes (--node ID or --target NAME):")
            if nodes.isEmpty { print("  (none)") }
            for node in nodes { print("  \(node)") }
            return .success
        } catch {
            return CaptureLoop.fail(error.description)
        }
    }

    static func run(_ request: CaptureRequest) -> Terminal.ExitCode {
        signal(SIGINT, pipeWireRequestStop)
        signal(SIGTERM, pipeWireRequestStop)
        signal(SIGPIPE, SIG_IGN)
        if request.source == .camera { return CameraCaptureLoop.run(request) }

        var options: PipeWireScreenOptions
        var portalSession: ScreenCastSession?
        var monitorsAtStart: [String]?
        var sourceInfo: String
        switch request.source {
        case .portal:
            do {
                var portalOptions = ScreenCastPortalOptions()
                portalOptions.sourceTypes = request.pipeWire.portalSourceTypes
                portalOptions.wantsCursor = request.drawCursor
                portalOptions.restoresSelection = request.pipeWire.restoresSelection
                portalOptions.stopRequested = { stopRequested.load(ordering: .relaxed) }
                let session = try ScreenCastPortal.start(portalOptions)
                portalSession = session
                options = PipeWireScreenOptions(target: .node(session.nodeID))
                options.remote = .descriptor(session.takeRemoteDescriptor())
                // Cursor metadata is asked of the stream only when the portal sends it.
                options.drawCursor = session.cursorMode == .metadata && request.drawCursor
                let cursorMode = session.cursorMode?.name ?? "unspecified"
                sourceInfo = "{\"source\":\"pipewire\",\"portal\":true,\"node\":\(session.nodeID),"
                    + "\"cursor_mode\":\"\(cursorMode)\"}"
                if let notice = session.cursorNotice { CaptureLoop.note(notice) }
                if let warning = session.tokenWarning { CaptureLoop.warn(warning) }
                monitorsAtStart = DesktopMonitors.layout()
            } catch .interrupted(let method) {
                CaptureLoop.note(ScreenCastPortalError.interrupted(method: method).description)
                return .success
            } catch .sourceTypeUnavailable(let wanted, let available) {
                return CaptureLoop.failConfiguration(
                    ScreenCastPortalError.sourceTypeUnavailable(wanted: wanted, available: available).description)
            } catch {
                return CaptureLoop.fail(error.description)
            }
        default:
            options = PipeWireScreenOptions(target: request.pipeWire.target!)
            options.drawCursor = request.drawCursor
            sourceInfo = ""
        }
        let stream: PipeWireScreenStream
        do {
            stream = try PipeWireScreenStream(options: options)
        } catch {
            return CaptureLoop.failConfiguration(error.description)  // no such node, no PipeWire
        }
        defer {
            stream.close()
            portalSession?.close()
        }
        if sourceInfo.isEmpty {
            sourceInfo = "{\"source\":\"pipewire\",\"node\":\(stream.node.id),\"window\":\(jsonString(stream.node.name))}"
        }
        CaptureLoop.note("capturing PipeWire node \(stream.node.id) '\(stream.node.name)': \(stream.format)")
        let source = ScreenSessionSource(stream: stream, sourceInfo: sourceInfo, fromPortal: portalSession != nil,
                                         monitorsAtStart: monitorsAtStart)
        let lockGuard = ScreenLockGuard(policy: request.onLock, display: nil)
        return runSessions(request, source: source, lockGuard: lockGuard)
    }

    /// Sessions one after the other until one finishes: a FINISH {RESTARTING} starts the next.
    /// `lockGuard`: screens only (a camera does not show the lock screen).
    static func runSessions(_ request: CaptureRequest, source: PipeWireSessionSource,
                            lockGuard: ScreenLockGuard? = nil) -> Terminal.ExitCode
    {
        var restarting = false
        while true {
            switch runSession(request, source: source, lockGuard: lockGuard, restarting: restarting) {
            case .finished(let code): return code
            case .restart: restarting = true
            }
        }
    }

    enum SessionEnd {
        case finished(Terminal.ExitCode)
        case restart
    }

    /// Connects; right after a FINISH {RESTARTING} the pusher may still be closing the old
    /// session and answer BUSY, so that is retried for up to `peerTimeoutMs`.
    private static func connect(_ configuration: HelperEndpointConfiguration, restarting: Bool)
        throws(HelperLinkError) -> HelperEndpoint
    {
        let deadlineNs = MonotonicClock.nowNs() + UInt64(CaptureLinkProtocol.peerTimeoutMs) * 1_000_000
        while true {
            do {
                return try HelperEndpoint(configuration: configuration)
            } catch .rejected(let code, let text) where restarting && code == ErrorCode.busy.rawValue {
                if MonotonicClock.nowNs() > deadlineNs { throw .rejected(code: code, text: text) }
                _ = MonotonicClock.sleep(untilNs: MonotonicClock.nowNs() + 100_000_000)
            }
        }
    }

    private static func runSession(_ request: CaptureRequest, source: PipeWireSessionSource,
                                   lockGuard: ScreenLockGuard?, restarting: Bool) -> SessionEnd
    {
        let askedSize = source.helloSize
        var configuration = HelperEndpointConfiguration(
            group: request.group, helperName: "livepush-capture", helperVersion: LivePushVersion.current,
            pixelFormats: PixelFormat.allCases, maxWidth: UInt32(askedSize.width), maxHeight: UInt32(askedSize.height))
        configuration.capabilities = source.capabilities
        configuration.connectRetryMs = request.connectTimeoutMs
        let endpoint: HelperEndpoint
        do {
            endpoint = try connect(configuration, restarting: restarting)
        } catch {
            return .finished(CaptureLoop.fail(error.description))
        }
        let maxWidth = Int(endpoint.welcome.maxWidth), maxHeight = Int(endpoint.welcome.maxHeight)
        let accepted = Set(endpoint.welcome.pixelFormats)
        var fps = request.fps ?? Int(endpoint.welcome.fps)
        if case .finish(let reason, let text, let code) = source.sessionStarting(fps: fps) {
            endpoint.finish(reason, text: text)
            CaptureLoop.note(text)
            return .finished(code)
        }
        if maxWidth < askedSize.width || maxHeight < askedSize.height {
            source.pusherLimits(maxWidth: maxWidth, maxHeight: maxHeight)
        }
        var lastLayout: (PixelFormat, Int, Int)?
        var formatChanges = 0  // frames sent with FORMAT_CHANGED (the first one included)
        defer {
            source.stream.withdrawDestination()
            if request.reportsStats {
                let stream = source.stream
                CaptureLoop.note("stats frames=\(endpoint.framesPublished) dropped=\(stream.framesWithoutDestination) "
                    + "corrupted=\(stream.corruptedFramesDropped) unchanged_buffers=\(stream.unchangedBuffers) "
                    + "copy_ms_p50=\(stream.copyMs(percentile: 0.5)) copy_ms_p99=\(stream.copyMs(percentile: 0.99)) "
                    + "buffer_type=\(stream.bufferType) transfer=\(source.transfer) "
                    + "size=\(lastLayout.map { "\($0.1)x\($0.2)" } ?? "none") format_changes=\(formatChanges)")
            }
        }
        var lastSentNs: UInt64 = 0
        // The slot on offer to the stream: PipeWire's thread writes each new picture into it.
        var offeredSlot: WritableSlot?
        do {
            try endpoint.start(sourceInfo: source.sourceInfo)
            lockGuard?.sessionStarted()
            while true {
                if stopRequested.load(ordering: .relaxed) {
                    endpoint.finish(.user, text: "livepush-capture was interrupted")
                    return .finished(.success)
                }
                let stream = source.stream
                if offeredSlot == nil, let slot = try endpoint.acquireSlot() {
                    offeredSlot = slot
                    stream.offerDestination(slot.bytes, maxWidth: maxWidth, maxHeight: maxHeight)
                }
                let event = stream.wait(timeoutMs: 50)
                for pusherRequest in try endpoint.poll(timeoutMs: 0) {
                    switch pusherRequest {
                    case .config(let config):
                        fps = request.fps ?? Int(min(240, max(1, config.fps)))
                        source.configure(maxWidth: Int(config.maxWidth), maxHeight: Int(config.maxHeight))
                    case .stop(_, let text):
                        endpoint.finish(.user, text: "stopped by the pusher")
                        CaptureLoop.note("the pusher asked to stop (\(text))")
                        return .finished(.success)
                    }
                }
                // While the screen is locked (--on-lock), what the stream writes is dropped.
                if try lockGuard?.check(endpoint) == true {
                    if stream.takeFrame() != nil, let slot = offeredSlot {
                        stream.offerDestination(slot.bytes, maxWidth: maxWidth, maxHeight: maxHeight)
                    }
                    _ = stream.takeUnchanged()
                    switch event {
                    case .sourceClosed, .sourceLost: break  // handled below, locked or not
                    default: continue
                    }
                }
                switch event {
                case .idle, .needsDestination:
                    continue  // a slot is asked for at the top of the loop
                case .sourceClosed, .sourceLost:
                    stream.withdrawDestination()
                    offeredSlot = nil  // still the helper's: offered again to the stream that follows
                    switch try source.sourceEnded(event, endpoint: endpoint, fps: &fps, sessionSize: askedSize) {
                    case .finish(let reason, let text, let code):
                        endpoint.finish(reason, text: text)
                        CaptureLoop.note(text)
                        return .finished(code)
                    case .restart(let text):
                        endpoint.finish(.restarting, text: text)
                        return .restart
                    case .resumed:
                        lastLayout = nil  // the first picture of the new stream carries FORMAT_CHANGED
                        continue
                    }
                case .frameReady, .unchanged:
                    break
                }
                // At most the pusher's rate: meanwhile a newer picture may replace the one written.
                let intervalNs = UInt64(1_000_000_000 / max(1, fps))
                let earliestNs = lastSentNs + intervalNs - intervalNs / 10
                if lastSentNs != 0 && MonotonicClock.nowNs() < earliestNs && source.pacesTo(fps: fps) {
                    _ = MonotonicClock.sleep(untilNs: earliestNs) { stopRequested.load(ordering: .relaxed) }
                }
                guard let frame = stream.takeFrame(), let slot = offeredSlot else {
                    if stream.takeUnchanged() && lastLayout != nil {
                        try endpoint.publishUnchanged()
                        lastSentNs = MonotonicClock.nowNs()
                    }
                    continue
                }
                offeredSlot = nil
                let current = stream.format
                if (current.width > maxWidth && maxWidth >= askedSize.width)
                    || (current.height > maxHeight && maxHeight >= askedSize.height)
                {
                    // Grown past what this session asked for (not past the pusher's limit): ask for more.
                    endpoint.finish(.restarting, text: "frames grew to \(current.width)x\(current.height)")
                    CaptureLoop.note("the producer's frames grew to \(current.width)x\(current.height); reconnecting")
                    return .restart
                }
                guard let format = PixelFormat(frame.format), accepted.contains(format) else {
                    let text = "the pusher does not accept \(frame.format.rawValue), which PipeWire node "
                        + "\(stream.node.id) now sends"
                    endpoint.finish(.error, text: text)
                    return .finished(CaptureLoop.fail(text))
                }
                var flags: FrameFlags = frame.cursorDrawn ? [.cursor] : []
                if lastLayout == nil || lastLayout! != (format, frame.width, frame.height) {
                    flags.insert(.formatChanged)
                    formatChanges += 1
                    lastLayout = (format, frame.width, frame.height)
                }
                try endpoint.publish(slot, format: format, width: UInt32(frame.width), height: UInt32(frame.height),
                                     strides: frame.strides.map { UInt32($0) },
                                     planeOffsets: frame.planeOffsets.map { UInt32($0) }, ptsNs: frame.ptsNs,
                                     flags: flags)
                lastSentNs = MonotonicClock.nowNs()
            }
        } catch {
            endpoint.finish(.error, text: "\(error)")
            return .finished(CaptureLoop.fail("\(error)"))
        }
    }

    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension PixelFormat {
    init?(_ format: ScreenPixelFormat) {
        switch format {
        case .bgrx: self = .bgrx
        case .bgra: self = .bgra
        case .rgbx: self = .rgbx
        case .rgba: self = .rgba
        case .nv12: self = .nv12
        case .i420: self = .i420
        }
    }
}

private func pipeWireRequestStop(_ signal: Int32) {
    stopRequested.store(true, ordering: .relaxed)
}
