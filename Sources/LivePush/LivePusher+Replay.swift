import Foundation

/// What `enableReplayBuffer` asked for: kept in `LivePusher.State` while capture is off, so that
/// capture starts with the buffer.
struct ReplaySettings: Sendable {
    var seconds: Int
    /// Where `saveReplay()` with no path writes.
    var directory: String
}

extension LivePusher {
    // MARK: Replay buffer (issue 34)

    /// The seconds a replay buffer may hold.
    public static let replaySecondsRange = 1...600

    /// Keeps the last `seconds` (1 to 600) of the encoded stream in memory, for `saveReplay`. May be
    /// called before `startScreenCapture` (capture starts with it) or while it runs (the buffer fills
    /// from the next keyframe on; one is asked for). `directory` is where `saveReplay()` with no
    /// path writes (default: `$XDG_VIDEOS_DIR`, else the current directory). Enabled again, the
    /// buffer starts empty with the new length. 0, or -2 for seconds out of range.
    @discardableResult
    public func enableReplayBuffer(seconds: Int, directory: String? = nil) -> Int32 {
        guard Self.replaySecondsRange.contains(seconds) else { return LivePushErrorCode.invalidParameter }
        let settings = ReplaySettings(seconds: seconds, directory: directory ?? Self.defaultReplayDirectory)
        inTurn {
            let (old, pipeline, audioPipeline) = state.withLock { state in
                defer {
                    state.replaySettings = settings
                    state.replay = nil
                }
                return (state.replay, state.pipeline, state.audioPipeline)
            }
            if let old { detachReplay(old) }
            if let pipeline { attachReplay(pipeline: pipeline, audioPipeline: audioPipeline) }
        }
        return 0
    }

    /// Drops the replay buffer and what it holds (saves already asked for are still written).
    public func disableReplayBuffer() {
        inTurn {
            let old = state.withLock { state in
                defer {
                    state.replaySettings = nil
                    state.replay = nil
                }
                return state.replay
            }
            if let old { detachReplay(old) }
        }
    }

    /// Writes what the replay buffer holds (the last `seconds` or a little more, from a keyframe) to
    /// `path` (.mkv, .mp4 fragmented or .flv; a new file), without stopping anything: the packets
    /// are taken at once and written on a thread of their own, after any save asked for before.
    /// With no path, `replay-YYYYMMDD-HHMMSS.mkv` in the buffer's directory. Returns 0 when the save
    /// is under way (`onReplaySaved` tells when the file is complete, with its code and duration),
    /// or a `ReplayCode`: -4 no replay buffer, -1 capture not running, -3 nothing buffered yet,
    /// -2 the extension, -7 the file exists, -8 its directory is missing or not writable, -6 four
    /// saves are waiting already.
    @discardableResult
    public func saveReplay(path: String? = nil) -> Int32 { saveReplayNamed(path: path).code }

    /// `saveReplay`, and the file it writes (the default name when `path` is nil).
    public func saveReplayNamed(path: String? = nil) -> (code: Int32, path: String) {
        let (replay, settings) = state.withLock { ($0.replay, $0.replaySettings) }
        guard let settings else { return (ReplayCode.notEnabled, path ?? "") }
        guard let replay else { return (ReplayCode.internalError, path ?? "") }
        // A name of its own, also apart from the saves still waiting (two clicks in one second).
        let file = path ?? Self.defaultReplayPath(directory: settings.directory) { replay.isQueued($0) }
        let code = replay.save(path: file) { [weak self] code, durationMs in
            self?.notify { $0.onReplaySaved(code: code, path: file, durationMs: durationMs) }
        }
        return (code, file)
    }

    /// The replay buffer's length in seconds; nil when there is none.
    public var replayBufferSeconds: Int? { state.withLock { $0.replaySettings?.seconds } }

    /// Attaches a new buffer to the pipelines (capture started, or the buffer was enabled while it runs).
    func attachReplay(pipeline: VideoPipeline, audioPipeline: AudioPipeline?) {
        guard let settings = state.withLock({ $0.replaySettings }) else { return }
        let kbps = max(config.effectiveBitratesKbps.target, pipeline.bitrateKbps) + config.audioBitrateKbps
        // Twice the target for the whole length, and never less than 8 MiB: a bound, not a budget.
        let maxBytes = max(8 << 20, settings.seconds * kbps * 2 * 1000 / 8)
        let replay = ReplayBuffer(seconds: settings.seconds, maxBytes: maxBytes, encoder: pipeline.videoEncoder,
                                  audioEncoder: audioPipeline?.encoder, epochNs: pipeline.settings.epochNs)
        state.withLock { $0.replay = replay }
        pipeline.add(replay)  // asks for a keyframe: the buffer starts on one
        audioPipeline?.add(replay)
    }

    /// Takes a buffer off the pipelines (capture stops, or the buffer is replaced or disabled).
    func detachReplay(_ replay: ReplayBuffer) {
        let (pipeline, audioPipeline) = state.withLock { ($0.pipeline, $0.audioPipeline) }
        pipeline?.remove(replay)
        audioPipeline?.remove(replay)
    }

    /// `$XDG_VIDEOS_DIR` when set, else the current directory.
    static var defaultReplayDirectory: String {
        if let videos = ProcessInfo.processInfo.environment["XDG_VIDEOS_DIR"], !videos.isEmpty { return videos }
        return FileManager.default.currentDirectoryPath
    }

    /// `directory/replay-YYYYMMDD-HHMMSS.mkv` (local time), with `-2`, `-3`... when that exists or is `taken`.
    static func defaultReplayPath(directory: String, now: Date = Date(), taken: (String) -> Bool = { _ in false }) -> String {
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.dateFormat = "yyyyMMdd-HHmmss"
        let base = (directory as NSString).appendingPathComponent("replay-" + format.string(from: now))
        var path = base + ".mkv", number = 1
        while FileManager.default.fileExists(atPath: path) || taken(path) {
            number += 1
            path = base + "-\(number).mkv"
        }
        return path
    }
}
