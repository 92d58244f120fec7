import CaptureLink
import CommandLineSupport
import LinuxSystem
import ScreenCapture
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM; the capture loop finishes cleanly when it sees it.
let stopRequested = Atomic<Bool>(false)

private func requestStop(_ signal: Int32) {
    stopRequested.store(true, ordering: .relaxed)
}

/// The helper's main loop: connect, grab at the pusher's frame rate on CLOCK_MONOTONIC, publish.
enum CaptureLoop {
    static func run(_ request: CaptureRequest) -> Terminal.ExitCode {
        signal(SIGINT, requestStop)
        signal(SIGTERM, requestStop)
        signal(SIGPIPE, SIG_IGN)

        let display: X11Display
        let source: X11CaptureSource
        do {
            display = try X11Display(displayName: request.displayName)
            source = try X11CaptureSource(display: display, target: request.target, drawCursor: request.drawCursor,
                                          trackDamage: request.trackDamage)
        } catch let error as X11Error {
            return failConfiguration(error.description)
        } catch {
            return failConfiguration("\(error)")
        }
        source.scaleMethod = request.scaleMethod
        if request.scaleMethod == .render && source.scaleMethod == .yuv {
            warn("the X server has no RENDER extension; frames are scaled with libyuv (--scale yuv)")
        }
        if request.trackDamage && !source.tracksDamage {
            warn("the X server has no DAMAGE extension; --damage is ignored and every frame is grabbed")
        }
        let desktopAudio = request.desktopAudio ? DesktopAudio.start() : nil  // DesktopAudio.swift
        // A new session when frames outgrow the ring (the screen got larger): FINISH {RESTARTING}, reconnect.
        while true {
            switch runSession(request, source: source, desktopAudio: desktopAudio) {
            case .finished(let code): return code
            case .restart: continue
            }
        }
    }

    private enum SessionEnd {
        case finished(Terminal.ExitCode)
        case restart
    }

    private static func runSession(_ request: CaptureRequest, source: X11CaptureSource, desktopAudio: DesktopAudio?)
        -> SessionEnd
    {
        let display = source.display
        var configuration = HelperEndpointConfiguration(
            group: request.group, helperName: "livepush-capture", helperVersion: LivePushVersion.current,
            pixelFormats: [.bgrx], maxWidth: UInt32(display.screenWidth), maxHeight: UInt32(display.screenHeight))
        configuration.capabilities = request.trackDamage ? [.cursor, .damage] : [.cursor]
        // LPC_CAP_SCALE (SPEC clarification 28): a smaller CONFIG is scaled to, never cropped.
        if source.scaleMethod != nil { configuration.capabilities.insert(.scale) }
        configuration.connectRetryMs = request.connectTimeoutMs
        desktopAudio?.announce(&configuration)
        let endpoint: HelperEndpoint
        do {
            endpoint = try HelperEndpoint(configuration: configuration)
        } catch {
            return .finished(fail(error.description))
        }
        if case .socketCopy(let reason) = source.attach(memoryDescriptor: endpoint.ringDescriptor) {
            warn("no zero-copy capture: \(reason)")
        } else {
            // The X server writes every frame into the ring itself: the slots need no pages here.
            endpoint.releaseSlotPages()
        }
        var fps = request.fps ?? Int(endpoint.welcome.fps)
        var grabTimes = GrabTimes()
        defer {
            if request.reportsStats {
                let audio = desktopAudio.map { " audio_chunks=\($0.chunksSent) audio_dropped=\($0.droppedChunks)" }
                note(grabTimes.summary(endpoint) + (audio ?? ""))
            }
        }
        var lastSize = (width: 0, height: 0)
        var sentFrame = false
        // CONFIG's maximum size (SPEC §5.12): frames are scaled to fit it (or cropped with --scale crop);
        // WELCOME's until a CONFIG.
        var configMax = (width: Int(endpoint.welcome.maxWidth), height: Int(endpoint.welcome.maxHeight))
        do {
            try endpoint.start(sourceInfo: source.sourceInfo)
            desktopAudio?.sessionStarted(endpoint)
            defer { desktopAudio?.sessionEnded() }
            var deadlineNs = MonotonicClock.nowNs()
            while true {
                let intervalNs = UInt64(1_000_000_000 / max(1, fps))
                deadlineNs += intervalNs
                let nowNs = MonotonicClock.nowNs()
                if deadlineNs + intervalNs < nowNs { deadlineNs = nowNs }  // fell behind: do not burst
                if let desktopAudio {
                    _ = try desktopAudio.sleep(untilNs: deadlineNs, forwardingTo: endpoint) {
                        stopRequested.load(ordering: .relaxed)
                    }
                } else {
                    MonotonicClock.sleep(untilNs: deadlineNs) { stopRequested.load(ordering: .relaxed) }
                }
                if stopRequested.load(ordering: .relaxed) {
                    endpoint.finish(.user, text: "livepush-capture was interrupted")
                    return .finished(.success)
                }
                for pusherRequest in try endpoint.poll(timeoutMs: 0) {
                    switch pusherRequest {
                    case .config(let config):
                        fps = request.fps ?? Int(min(240, max(1, config.fps)))
                        configMax = (Int(config.maxWidth), Int(config.maxHeight))
                    case .stop(_, let text):
                        endpoint.finish(.user, text: "stopped by the pusher")
                        note("the pusher asked to stop (\(text))")
                        return .finished(.success)
                    }
                }
                try source.update()
                if request.trackDamage && sentFrame && !source.hasChanges {
                    try endpoint.publishUnchanged()
                    continue
                }
                if source.rect.width > Int(endpoint.welcome.maxWidth) || source.rect.height > Int(endpoint.welcome.maxHeight) {
                    endpoint.finish(.restarting, text: "frames grew to \(source.rect.width)x\(source.rect.height)")
                    return .restart
                }
                guard let slot = try endpoint.acquireSlot() else { continue }  // dropped: the pusher holds every slot
                let grabbedNs = MonotonicClock.nowNs()
                let frame = try source.grab(offset: slot.ringOffset, destination: slot.bytes, maxWidth: configMax.width,
                                            maxHeight: configMax.height)
                grabTimes.record(MonotonicClock.nowNs() - grabbedNs)
                var flags: FrameFlags = frame.cursorDrawn ? [.cursor] : []
                if (frame.width, frame.height) != lastSize {
                    flags.insert(.formatChanged)
                    if lastSize != (0, 0) {
                        let grabbed = "\(source.rect.width)x\(source.rect.height)"
                        let how = (frame.width, frame.height) == (source.rect.width, source.rect.height) ? "as grabbed"
                            : source.scaleMethod.map { "scaled by \($0.rawValue) from \(grabbed)" } ?? "cropped"
                        note("frames are now \(frame.width)x\(frame.height) (\(how); the pusher asks for at most "
                            + "\(configMax.width)x\(configMax.height))")
                    }
                    lastSize = (frame.width, frame.height)
                }
                try endpoint.publish(slot, format: .bgrx, width: UInt32(frame.width), height: UInt32(frame.height),
                                     strides: [UInt32(frame.strideBytes)], planeOffsets: [0], ptsNs: grabbedNs,
                                     flags: flags)
                sentFrame = true
            }
        } catch let error as X11CaptureError {
            switch error {
            case .windowClosed, .monitorGone:
                endpoint.finish(.sourceClosed, text: error.description)
                note(error.description)
                return .finished(.success)
            case .serverLost:
                endpoint.finish(.sourceLost, text: error.description)
                return .finished(fail(error.description))
            default:
                endpoint.finish(.error, text: error.description)
                return .finished(fail(error.description))
            }
        } catch {
            endpoint.finish(.error, text: "\(error)")
            return .finished(fail("\(error)"))
        }
    }

    static func fail(_ message: String) -> Terminal.ExitCode {
        Terminal.printError("livepush-capture: \(message)")
        return .failure
    }

    /// The helper cannot run as configured (no display, no such target): exit status 78, so that a
    /// supervisor does not restart it (SPEC §13.5).
    static func failConfiguration(_ message: String) -> Terminal.ExitCode {
        Terminal.printError("livepush-capture: \(message)")
        return .configuration
    }

    static func warn(_ message: String) {
        Terminal.printError("livepush-capture: warning: \(message)")
    }

    static func note(_ message: String) {
        Terminal.printError("livepush-capture: \(message)")
    }
}

/// Grab durations, kept for `--stats` (preallocated: no allocation per frame).
struct GrabTimes {
    private var durationsNs = [UInt64](repeating: 0, count: 1 << 16)
    private var count = 0

    mutating func record(_ durationNs: UInt64) {
        durationsNs[count % durationsNs.count] = durationNs
        count += 1
    }

    func summary(_ endpoint: HelperEndpoint) -> String {
        let kept = durationsNs.prefix(min(count, durationsNs.count)).sorted()
        func percentileMs(_ p: Double) -> String {
            kept.isEmpty ? "0" : String(Double(kept[min(kept.count - 1, Int(Double(kept.count) * p))]) / 1e6)
        }
        return "stats frames=\(endpoint.framesPublished) dropped=\(endpoint.framesDropped) "
            + "grab_ms_p50=\(percentileMs(0.5)) grab_ms_p99=\(percentileMs(0.99))"
    }
}
