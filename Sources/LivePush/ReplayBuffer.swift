import Foundation
import LinuxSystem
import Media

/// The reference-style codes of `LivePusher.saveReplay` and `onReplaySaved` (issue 34). Where a
/// meaning is the recording's, so is the number (`LocalRecordingCode`).
public enum ReplayCode {
    public static let ok: Int32 = 0
    /// Writing the file failed (`onReplaySaved` only), or capture is not running.
    public static let internalError: Int32 = -1
    /// The file name does not end in .mkv, .mp4 or .flv.
    public static let unsupportedExtension: Int32 = -2
    /// The buffer holds no keyframe yet (it was enabled or capture started a moment ago).
    public static let nothingBuffered: Int32 = -3
    /// No replay buffer: `enableReplayBuffer(seconds:)` first.
    public static let notEnabled: Int32 = -4
    /// `maxQueuedSaves` saves are waiting to be written already.
    public static let tooManySaves: Int32 = -6
    public static let fileExists: Int32 = -7
    /// The file cannot be created there: its directory is missing or not writable.
    public static let noPermission: Int32 = -8
}

/// The last `seconds` of the encoded stream (video and audio packets, copied out of the encoders'
/// pools), kept in memory so that `save` can write them to a file after the fact, starting at a
/// keyframe, while the broadcast goes on (issue 34).
///
/// Bounds: whole GOPs are dropped from the front as soon as the GOP after them starts `seconds` or
/// more before the newest picture (so the buffer always covers at least `seconds`, at most one GOP
/// more), and also while the packets' bytes exceed `maxBytes` (a runaway encoder cannot exhaust
/// memory; the buffer is then shorter, never empty of its newest GOP). A new video encoder (a new
/// size, adaptive resolution) empties the buffer: one file has one size.
///
/// Threads: `receive` runs on the video pipeline's thread, `receiveAudio` on the audio pipeline's,
/// `snapshot` and the figures on any; all of the state is under `lock`, held for a few appends or a
/// copy of the GOP list (never while writing). Files are written on `saves`, a serial queue, one after
/// another, from snapshots that share the packets' immutable bytes.
final class ReplayBuffer: EncodedMediaSink, @unchecked Sendable {
    struct VideoEntry {
        let packet: EncodedVideoPacket
        let ptsMs: Int64
    }

    struct AudioEntry {
        let packet: EncodedAudioPacket
        let ptsMs: Int64
    }

    /// What a save writes: the pictures from a keyframe on and the sound beside them. Unchecked: the
    /// encoders are only read for their streams' parameters (as `LocalRecording.open` does).
    struct Snapshot: @unchecked Sendable {
        let encoder: H264Encoder
        let audioEncoder: AACEncoder?
        var video: [VideoEntry]
        var audio: [AudioEntry]
    }

    let seconds: Int
    let maxBytes: Int
    /// Saves queued on `saves` at most: a save holds its snapshot's packets until it is written.
    static let maxQueuedSaves = 4
    private let audioEncoder: AACEncoder?
    private let lock = NSLock()
    private var encoder: H264Encoder
    /// The pictures, one array per GOP (each starts with a keyframe), oldest first.
    private var gops: [[VideoEntry]] = []
    /// The sound, oldest first, from the first GOP's start on (or the last `seconds` before any picture).
    private var audio: [AudioEntry] = []
    private var payloadBytes = 0
    /// The files of the saves queued and not written yet: a second save to one of them is "exists".
    private var queuedPaths: Set<String> = []
    private let saves = DispatchQueue(label: "livepush.replay-save", qos: .utility)

    /// CLOCK_MONOTONIC time of the stream's zero (`VideoPipelineSettings.epochNs`): a save's instant
    /// on the stream's clock.
    private let epochNs: UInt64
    /// How long a save waits for the encoders to deliver the pictures and sound of its instant.
    static let catchUpTimeoutMs = 1000

    init(seconds: Int, maxBytes: Int, encoder: H264Encoder, audioEncoder: AACEncoder?, epochNs: UInt64) {
        self.epochNs = epochNs
        self.seconds = seconds
        self.maxBytes = maxBytes
        self.encoder = encoder
        self.audioEncoder = audioEncoder
    }

    /// The bytes of the packets held (their payloads; the bookkeeping adds about 50 bytes a packet).
    var bytesHeld: Int { lock.withLock { payloadBytes } }


    /// Whether a save waiting to be written will write `path`.
    func isQueued(_ path: String) -> Bool { lock.withLock { queuedPaths.contains(path) } }

    func videoEncoderChanged(_ encoder: H264Encoder) {
        lock.withLock {
            self.encoder = encoder
            gops.removeAll()
            audio.removeAll()
            payloadBytes = 0
        }
    }

    func receive(_ packet: EncodedVideoPacket, ptsMs: Int64) {
        // The copy is made outside the lock: the pool's buffer goes back to the encoder at once.
        let entry = VideoEntry(packet: EncodedVideoPacket(payload: packet.payload.copied(), pts: packet.pts,
                                                          dts: packet.dts, isKeyframe: packet.isKeyframe), ptsMs: ptsMs)
        lock.withLock {
            if packet.isKeyframe {
                gops.append([entry])
            } else if !gops.isEmpty {
                gops[gops.count - 1].append(entry)
            } else {
                return  // the buffer starts on a keyframe
            }
            payloadBytes += packet.payload.count
            trimLocked(newestMs: ptsMs)
        }
    }

    func receiveAudio(_ packet: EncodedAudioPacket, ptsMs: Int64) {
        let entry = AudioEntry(packet: EncodedAudioPacket(payload: packet.payload.copied(), pts: packet.pts,
                                                          durationSamples: packet.durationSamples), ptsMs: ptsMs)
        lock.withLock {
            audio.append(entry)
            payloadBytes += packet.payload.count
            // Before any picture, the sound alone is bounded by age.
            if gops.isEmpty { dropAudioLocked(before: ptsMs - Int64(seconds) * 1000) }
        }
    }

    /// Drops whole GOPs that are no longer needed to cover `seconds`, then while over `maxBytes`.
    private func trimLocked(newestMs: Int64) {
        let windowStartMs = newestMs - Int64(seconds) * 1000
        var dropped = false
        while gops.count > 1, let next = gops[1].first, next.ptsMs <= windowStartMs {
            dropFirstGOPLocked()
            dropped = true
        }
        while gops.count > 1 && payloadBytes > maxBytes {
            dropFirstGOPLocked()
            dropped = true
        }
        if dropped, let start = gops.first?.first?.ptsMs { dropAudioLocked(before: start) }
    }

    private func dropFirstGOPLocked() {
        let gop = gops.removeFirst()
        for entry in gop { payloadBytes -= entry.packet.payload.count }
    }

    private func dropAudioLocked(before ms: Int64) {
        let count = audio.prefix { $0.ptsMs < ms }.count
        guard count > 0 else { return }
        for entry in audio.prefix(count) { payloadBytes -= entry.packet.payload.count }
        audio.removeFirst(count)
    }

    /// What is held now, from its first keyframe on, with the sound from that picture on; nil while
    /// no keyframe is held. Cheap: the packets' bytes are shared, not copied.
    func snapshot() -> Snapshot? {
        lock.withLock {
            guard let first = gops.first?.first else { return nil }
            return Snapshot(encoder: encoder, audioEncoder: audioEncoder, video: gops.flatMap { $0 },
                            audio: audio.filter { $0.ptsMs >= first.ptsMs })
        }
    }

    /// Whether the pictures and the sound of `untilMs` (stream time) have been delivered.
    private func caughtUp(untilMs: Int64) -> Bool {
        lock.withLock {
            let frameMs = Int64(1000 / max(1, encoder.settings.fps))
            guard let newest = gops.last?.last, newest.ptsMs >= untilMs - frameMs else { return false }
            return audioEncoder == nil || (audio.last?.ptsMs ?? .min) >= untilMs
        }
    }

    /// `snapshot` completed up to `untilMs`: the packets that came after it was taken (the encoders
    /// deliver a picture some ms after its instant, the sound later still), the pictures to the one
    /// of that instant and the sound to its end.
    private func completed(_ head: Snapshot, untilMs: Int64) -> Snapshot {
        var snapshot = head
        lock.withLock {
            guard encoder === head.encoder else { return }  // a new size since: the file ends where the old one did
            let lastVideoMs = head.video.last?.ptsMs ?? .max, lastAudioMs = head.audio.last?.ptsMs ?? .min
            var newer: [VideoEntry] = []
            for gop in gops.reversed() {
                newer.insert(contentsOf: gop.filter { $0.ptsMs > lastVideoMs && $0.ptsMs <= untilMs }, at: 0)
                if let start = gop.first?.ptsMs, start <= lastVideoMs { break }
            }
            snapshot.video += newer
            snapshot.audio += audio.reversed().prefix { $0.ptsMs > lastAudioMs }.reversed()
        }
        snapshot.video.removeAll { $0.ptsMs > untilMs }
        let frameMs = Int64(1000 / max(1, snapshot.encoder.settings.fps))
        let endMs = (snapshot.video.last?.ptsMs ?? untilMs) + frameMs
        snapshot.audio.removeAll { $0.ptsMs >= endMs }
        return snapshot
    }

    /// Checks `path`, takes a snapshot and writes it on `saves` (after the saves queued before it);
    /// `done` is called there with the code and the file's duration. The file ends with the picture
    /// of the instant `save` was called: before writing, the save waits (at most
    /// `catchUpTimeoutMs`) for the encoders to deliver it and its sound. Returns 0 when the save is
    /// queued, or a `ReplayCode` (and `done` is not called).
    func save(path: String, done: @escaping @Sendable (_ code: Int32, _ durationMs: Int) -> Void) -> Int32 {
        let untilMs = Int64((MonotonicClock.nowNs() &- epochNs) / 1_000_000)
        if let problem = Self.pathProblem(path) { return problem }
        let queued = lock.withLock { () -> Int32 in
            guard !queuedPaths.contains(path) else { return ReplayCode.fileExists }
            guard queuedPaths.count < Self.maxQueuedSaves else { return ReplayCode.tooManySaves }
            queuedPaths.insert(path)
            return ReplayCode.ok
        }
        guard queued == ReplayCode.ok else { return queued }
        // Taken now, so the file starts where the buffer does now (a GOP may leave while waiting).
        guard let head = snapshot() else {
            _ = lock.withLock { queuedPaths.remove(path) }
            return ReplayCode.nothingBuffered
        }
        saves.async { [self] in
            let deadlineNs = MonotonicClock.nowNs() + UInt64(Self.catchUpTimeoutMs) * 1_000_000
            while !caughtUp(untilMs: untilMs) && MonotonicClock.nowNs() < deadlineNs {
                MonotonicClock.sleep(untilNs: MonotonicClock.nowNs() + 5_000_000)
            }
            let snapshot = completed(head, untilMs: untilMs)
            let result = Result(catching: { () throws(MediaError) -> Int in try Self.write(snapshot, to: path) })
            _ = lock.withLock { queuedPaths.remove(path) }
            switch result {
            case .success(let durationMs): done(ReplayCode.ok, durationMs)
            case .failure:
                try? FileManager.default.removeItem(atPath: path)
                done(ReplayCode.internalError, 0)
            }
        }
        return ReplayCode.ok
    }

    /// Why a replay may not be written to `path` (a `ReplayCode`), or nil. Nothing that exists is
    /// replaced: a replay is always a new file.
    static func pathProblem(_ path: String) -> Int32? {
        // A recording's checks (ReplayCode's -2, -7 and -8 are LocalRecordingCode's), never overwriting.
        LocalRecording.pathProblem(path, overwrite: false)
    }

    /// Writes `snapshot` to `path`: the first picture at 0, the sound at its place beside the
    /// pictures, both in time order. Returns the file's duration (ms, to the end of the last picture).
    static func write(_ snapshot: Snapshot, to path: String) throws(MediaError) -> Int {
        guard let first = snapshot.video.first, let last = snapshot.video.last else { return 0 }
        let writer = try RecordingWriter(path: path, encoder: snapshot.encoder, audioEncoder: snapshot.audioEncoder)
        writer.timestampOffset = first.packet.dts
        let rateHz = Int64(snapshot.audioEncoder?.settings.sampleRateHz ?? 48000)
        if let sound = snapshot.audio.first {
            writer.audioTimestampOffset = sound.packet.pts - (sound.ptsMs - first.ptsMs) * rateHz / 1000
        }
        // Interleaved by time, so the muxer never has to hold one stream back for the other.
        var audioIndex = 0
        for picture in snapshot.video {
            while audioIndex < snapshot.audio.count && snapshot.audio[audioIndex].ptsMs < picture.ptsMs {
                try writer.write(snapshot.audio[audioIndex].packet)
                audioIndex += 1
            }
            try writer.write(picture.packet)
        }
        while audioIndex < snapshot.audio.count {
            try writer.write(snapshot.audio[audioIndex].packet)
            audioIndex += 1
        }
        try writer.finish()
        let frameMs = Int64(1000 / max(1, snapshot.encoder.settings.fps))
        return Int(last.ptsMs - first.ptsMs + frameMs)
    }
}
