import CaptureLink
import Foundation
import LinuxSystem

/// An in-test capture helper: BGRx frames at 30 fps (the rate the pusher asks for, as a real
/// helper paces itself) whose brightness `picture(t)` gives and
/// desktop audio (48 kHz stereo F32, 10 ms AUDIO messages) whose samples `sound(t)` gives, both
/// on one CLOCK_MONOTONIC timeline `t` (seconds since the helper started): what a picture and
/// a sound at the same instant look like to the pusher.
public final class SignalHelper: @unchecked Sendable {
    public let group: String
    public let runtime: String
    public let picture: @Sendable (Double) -> UInt8
    public let sound: @Sendable (Double) -> Float
    /// The frames' size (the picture is one value everywhere: filled with memset, cheap at 1080p).
    public let width: Int, height: Int
    /// Sends each AUDIO message this much after its samples' time (a helper whose sound comes late).
    public var audioLagMs = 0
    private let stopRequested = NSLock()
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)
    public private(set) var error: String?

    public init(group: String, runtime: String, picture: @escaping @Sendable (Double) -> UInt8,
         sound: @escaping @Sendable (Double) -> Float, width: Int = 320, height: Int = 240)
    {
        self.width = width
        self.height = height
        self.group = group
        self.runtime = runtime
        self.picture = picture
        self.sound = sound
    }

    public func start() {
        let thread = Thread { [self] in
            defer { finished.signal() }
            do { try run() } catch { self.error = "\(error)" }
        }
        thread.start()
    }

    public func stop() {
        stopRequested.withLock { stopped = true }
        finished.wait()
    }

    private func run() throws {
        var configuration = HelperEndpointConfiguration(group: group, helperName: "signal-helper", helperVersion: "1",
                                                        pixelFormats: [.bgrx], maxWidth: UInt32(width),
                                                        maxHeight: UInt32(height))
        configuration.runtimeDirectory = runtime
        configuration.capabilities = [.audio]
        configuration.audioFormats = [.f32le]
        let helper = try HelperEndpoint(configuration: configuration)
        try helper.start(sourceInfo: "{}")
        let rate = 48000
        let startNs = MonotonicClock.nowNs()
        var frameIndex: UInt64 = 0
        var audioSamplesSent = 0
        while !stopRequested.withLock({ stopped }) {
            let frameNs = startNs + frameIndex * 1_000_000_000 / 30
            MonotonicClock.sleep(untilNs: frameNs)
            _ = try helper.poll(timeoutMs: 0)
            let t = Double(frameNs - startNs) / 1e9
            if let slot = try helper.acquireSlot() {
                memset(slot.bytes.baseAddress!, Int32(picture(t)), width * height * 4)
                try helper.publish(slot, format: .bgrx, width: UInt32(width), height: UInt32(height),
                                   strides: [UInt32(width * 4)], planeOffsets: [0], ptsNs: frameNs)
            }
            // Audio up to now, in 10 ms messages stamped with their first sample's time.
            let lagNs = UInt64(audioLagMs) * 1_000_000
            let nowNs = MonotonicClock.nowNs()
            let due = nowNs < startNs + lagNs ? 0 : Int(Double(nowNs - startNs - lagNs) / 1e9 * Double(rate))
            while due - audioSamplesSent >= 480 {
                var pcm: [UInt8] = []
                pcm.reserveCapacity(480 * 8)
                for index in 0..<480 {
                    let bits = sound(Double(audioSamplesSent + index) / Double(rate)).bitPattern.littleEndian
                    for _ in 0..<2 { withUnsafeBytes(of: bits) { pcm += $0 } }
                }
                let ptsNs = startNs + UInt64(audioSamplesSent) * 1_000_000_000 / UInt64(rate)
                try helper.sendAudio(Audio(format: .f32le, rateHz: UInt32(rate), channels: 2, ptsNs: ptsNs, pcm: pcm))
                audioSamplesSent += 480
            }
            frameIndex += 1
        }
        helper.finish(.user, text: "done")
    }
}
