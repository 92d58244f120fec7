import Foundation
import Media

/// What background music reports (turned into observer callbacks by `LivePusher`).
enum BackgroundMusicEvent: Sendable {
    case started(path: String, durationMs: Int)
    case progress(positionMs: Int, durationMs: Int)
    case complete(path: String)
    case failed(code: Int32, message: String, path: String)
}

/// Background music: one file decoded with libavformat/libavcodec (`AudioFileDecoder`) into
/// the audio pipeline's music source. The mixer pulls 20 ms at a time on its own thread, so
/// the music plays at the stream's pace; at the end of the file a loop rewinds the decoder
/// without resetting its resampler, so the end joins the start without a gap.
final class BackgroundMusic: AudioPullSource, @unchecked Sendable {
    private let rateHz: Int
    private let channels: Int
    private let onEvent: @Sendable (BackgroundMusicEvent) -> Void
    private let lock = NSLock()
    private var decoder: AudioFileDecoder?
    private var loop = false
    private var paused = false
    /// Decoded samples not mixed yet, from `pendingStart`.
    private var pending: [Float] = []
    private var pendingStart = 0
    /// The frame `read` returns while no music plays (kept: idle reads allocate nothing).
    private var silentFrame: [Float] = []
    /// Sample frames played since the start of the file (or of the current loop).
    private var playedFrames = 0
    private var lastProgressSecond = -1

    init(rateHz: Int, channels: Int, onEvent: @escaping @Sendable (BackgroundMusicEvent) -> Void) {
        self.rateHz = rateHz
        self.channels = channels
        self.onEvent = onEvent
    }

    /// Plays `path` instead of what played before; 0, or `LivePushErrorCode.bgmFileUnreadable`
    /// (the reason goes to `onEvent(.failed)`; the broadcast goes on without music).
    func start(path: String, loop: Bool) -> Int32 {
        let opened: AudioFileDecoder
        do {
            opened = try AudioFileDecoder(path: path, outputRateHz: rateHz, outputChannels: channels)
        } catch {
            lock.withLock { decoder = nil }
            onEvent(.failed(code: LivePushErrorCode.bgmFileUnreadable, message: Self.explain(error, path: path), path: path))
            return LivePushErrorCode.bgmFileUnreadable
        }
        lock.withLock {
            decoder = opened
            self.loop = loop
            paused = false
            pending = []
            pendingStart = 0
            playedFrames = 0
            lastProgressSecond = -1
        }
        onEvent(.started(path: path, durationMs: opened.durationMs))
        return 0
    }

    func stop() { lock.withLock { decoder = nil } }
    func pause() { lock.withLock { paused = true } }
    func resume() { lock.withLock { paused = false } }
    func setLoop(_ loop: Bool) { lock.withLock { self.loop = loop } }

    /// Whether music is playing (started, not paused, not ended).
    var isPlaying: Bool { lock.withLock { decoder != nil && !paused } }

    func read(frameCount: Int) -> [Float] {
        let wanted = frameCount * channels
        // No music (the usual case): the same silent frame every 20 ms, no new buffer each time.
        let idle = lock.withLock { () -> [Float]? in
            guard decoder == nil || paused else { return nil }
            if silentFrame.count != wanted { silentFrame = [Float](repeating: 0, count: wanted) }
            return silentFrame
        }
        if let idle { return idle }
        var output = [Float](repeating: 0, count: wanted)
        var events: [BackgroundMusicEvent] = []
        lock.withLock {
            guard let decoder, !paused else { return }
            var filled = 0
            while filled < wanted {
                if pendingStart == pending.count {
                    pending = []
                    pendingStart = 0
                    do throws(MediaError) {
                        pending = try decoder.decodeNext()
                        if pending.isEmpty {
                            guard loop else {
                                self.decoder = nil
                                events.append(.complete(path: decoder.path))
                                break
                            }
                            try decoder.rewind()
                            playedFrames = 0
                            lastProgressSecond = -1
                            pending = try decoder.decodeNext()
                            if pending.isEmpty { throw .ffmpeg(call: "decode '\(decoder.path)'", code: -1,
                                                                         message: "no audio after the start of the file") }
                        }
                    } catch {
                        self.decoder = nil
                        events.append(.failed(code: LivePushErrorCode.bgmDecodeFailed,
                                              message: Self.explain(error, path: decoder.path), path: decoder.path))
                        break
                    }
                }
                let take = min(wanted - filled, pending.count - pendingStart)
                for index in 0..<take { output[filled + index] = pending[pendingStart + index] }
                pendingStart += take
                filled += take
                playedFrames += take / channels
            }
            let second = playedFrames / rateHz
            if self.decoder != nil && second != lastProgressSecond {
                lastProgressSecond = second
                events.append(.progress(positionMs: playedFrames * 1000 / rateHz, durationMs: decoder.durationMs))
            }
        }
        for event in events { onEvent(event) }
        return output
    }

    static func explain(_ error: MediaError, path: String) -> String {
        let missing = !FileManager.default.fileExists(atPath: path)
        return missing
            ? "background music '\(path)' does not exist: give the path of an MP3, M4A, FLAC, Ogg or WAV file"
            : "cannot play '\(path)' as background music (\(error)): use an MP3, M4A (AAC), FLAC, Ogg (Vorbis, Opus) or WAV file"
    }
}
