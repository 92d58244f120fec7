import Foundation
import LinuxSystem
import Media

/// A sink that wants the pictures themselves, before encoding (a recording of its own quality).
/// Called on the video pipeline's thread, once a frame, with the picture sent at `pts` (in frames).
protocol PictureSink: AnyObject, Sendable {
    func receivePicture(_ picture: VideoFrame, pts: Int64)
}

/// A second H.264 encode of the pictures the live stream sends, on a thread of its own: x264 at
/// constant quality (CRF) with its own preset and no zerolatency tune (its lookahead and frame
/// threads are fine for a file). The pipeline's thread only copies the picture into one of three
/// pooled frames; when all three are still waiting (the machine cannot keep up with both encodes),
/// the picture is dropped from the recording, counted, and the live stream is not held back.
final class RecordingEncoder: @unchecked Sendable {
    let encoder: H264Encoder
    private let pool: [VideoFrame]
    private let condition = NSCondition()
    /// Pool indices free to fill, and those filled and waiting, oldest first (under `condition`).
    private var free: [Int]
    private var queued: [(index: Int, pts: Int64)] = []
    private var stopping = false
    private var dropped = 0
    private let done = DispatchSemaphore(value: 0)
    private var started = false
    /// The next picture is encoded as a keyframe (a recording resumed after a pause).
    private var keyframeRequested = false
    /// Where the packets go, on the encoder's thread; set before the first picture.
    var deliver: (@Sendable (EncodedVideoPacket) -> Void)?
    /// Called on the encoder's thread when encoding fails; the recording stops getting video.
    var onError: (@Sendable (MediaError) -> Void)?

    /// The settings of the recording's encode: the live encode's size, rate, GOP and profile, at
    /// `quality`'s CRF and preset (the live preset when it names none), always libx264.
    static func settings(live: H264EncoderSettings, quality: RecordingQuality) -> H264EncoderSettings {
        var settings = live
        settings.encoder = .libx264
        settings.crf = quality.crf
        settings.tuning = H264EncoderTuning(preset: quality.preset ?? live.tuning.preset, profile: live.tuning.profile,
                                            tune: nil, threads: live.tuning.threads)
        return settings
    }

    init(settings: H264EncoderSettings, poolSize: Int = 3) throws(MediaError) {
        encoder = try H264Encoder(settings: settings)
        var frames: [VideoFrame] = []
        for _ in 0..<poolSize { frames.append(try VideoFrame(width: settings.width, height: settings.height)) }
        pool = frames
        free = Array(0..<poolSize)
        free.reserveCapacity(poolSize)
        queued.reserveCapacity(poolSize)
    }

    /// Frames left out of the recording because the encoder was behind.
    var framesDropped: Int {
        condition.lock()
        defer { condition.unlock() }
        return dropped
    }

    /// Copies `picture` for the encoder's thread (started on the first picture).
    func submit(_ picture: VideoFrame, pts: Int64) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return }
        if !started {
            started = true
            let thread = Thread { [self] in
                ThreadName.setCurrent("livepush-record")
                run()
            }
            thread.start()
        }
        guard let index = free.popLast() else {
            dropped += 1
            return
        }
        pool[index].scalePicture(from: picture)  // keeps its size when adaptive resolution changes the live one
        pool[index].requestKeyframe(keyframeRequested)
        keyframeRequested = false
        queued.append((index, pts))
        condition.signal()
    }

    /// Makes the next picture submitted a keyframe.
    func requestKeyframe() {
        condition.withLock { keyframeRequested = true }
    }

    /// Encodes what is queued, drains the encoder into `deliver`, and ends the thread.
    func finish() {
        condition.lock()
        stopping = true
        let wasStarted = started
        condition.broadcast()
        condition.unlock()
        if wasStarted { done.wait() }
    }

    private func run() {
        defer { done.signal() }
        var failed = false
        while true {
            condition.lock()
            while queued.isEmpty && !stopping { condition.wait() }
            guard !queued.isEmpty else {
                condition.unlock()
                break
            }
            let (index, pts) = queued.removeFirst()
            condition.unlock()
            if !failed {
                do {
                    for packet in try encoder.encode(pool[index], pts: pts) { deliver?(packet) }
                } catch {
                    failed = true
                    onError?(error)
                }
            }
            condition.lock()
            free.append(index)
            condition.unlock()
        }
        guard !failed else { return }
        do {
            for packet in try encoder.encode(nil, pts: 0) { deliver?(packet) }
        } catch {
            onError?(error)
        }
    }
}

extension LivePusher {
    /// Warning 1580 for a recording whose own encoder left pictures out.
    func warnDropped(_ recording: LocalRecording) {
        let frames = recording.framesDropped
        notify { $0.onWarning(code: LivePushWarningCode.recordingFramesDropped,
                              message: "the recording's own encode could not keep up and left out \(frames) pictures; "
                                  + "use a faster preset in --record-quality (e.g. crf=20,preset=superfast)",
                              extraInfo: ["path": recording.path, "frames": String(frames)]) }
    }
}
