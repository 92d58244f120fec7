import Foundation
import LinuxSystem
import Media
import Synchronization

/// The SDK-wide switches: its version and how much is logged.
public enum LivePush {
    /// The version of this LivePush (the same as `livepush --version`).
    public static let version = LivePushVersion.current

    /// How much LivePush and FFmpeg's libraries log to stderr.
    public static var logLevel: LivePushLogLevel { currentLevel.withLock { $0 } }

    /// Sets the log level for the process; FFmpeg's own log (`av_log`) follows it: quiet, error and
    /// warning map to FFmpeg's level of the same name, info to FFmpeg's warning (FFmpeg's info is
    /// the encoders' banners and per-run statistics), debug to FFmpeg's debug.
    public static func setLogLevel(_ level: LivePushLogLevel) {
        currentLevel.withLock { $0 = level }
        switch level {
        case .quiet: LibraryLogLevel.quiet.apply()
        case .error: LibraryLogLevel.error.apply()
        case .warning, .info: LibraryLogLevel.warning.apply()
        case .debug: LibraryLogLevel.debug.apply()
        }
    }

    /// FFmpeg's log level now (what `setLogLevel` set it to).
    public static var libraryLogLevel: String { LibraryLogLevel.current.rawValue }

    private static let currentLevel = Mutex(LivePushLogLevel.info)
}

/// Log levels, quietest first.
public enum LivePushLogLevel: String, CaseIterable, Comparable, Sendable {
    case quiet, error, warning, info, debug

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// One push destination in `LivePusher.status`.
public struct LivePushDestinationStatus: Equatable, Sendable {
    /// Its place in `pushURLs` (what `removePushDestination(index:)` takes).
    public var index: Int
    /// Its URL, key replaced by ****.
    public var url: String
    public var status: PushStatus
    /// The last second's figures of this destination alone.
    public var sendBitrateKbps: Int
    public var queueMs: Int
    /// The connection's round-trip time and its variation, whole ms (see `LivePusherStatistics.delayMs`).
    public var delayMs: Int
    public var framesDropped: Int
    public var bytesSent: Int
    public var jitterMs = 0
    /// The send queue's mean wait, ms.
    public var queueDelayMs = 0
    /// Its name (`LABEL=URL`, `ctl add --label`), and its key's fingerprint (the first 6 hex digits
    /// of SHA-256 of the key, never the key): what tells two destinations on one server apart.
    public var label: String?
    public var keyFingerprint = ""
    /// The label, or `key` and the fingerprint: how `ctl status`, the dashboard and the report name it.
    public var name: String { label ?? "key " + keyFingerprint }
}

/// What a pusher is doing now (`LivePusher.status`): the reference SDK's live status in one value.
public struct LivePusherStatus: Equatable, Sendable {
    /// What the pusher is doing, in one value (`LivePusher.pusherState`).
    public var state = LivePusherState.idle
    public var capturing = false
    public var pushing = false
    /// `pause()` is in effect.
    public var paused = false
    /// "paused", "helperLost" or "networkPoor" while a placeholder replaces the screen.
    public var placeholder: String?
    /// Nothing of the mix is heard: `setMute(true)`, or every source the mix has is muted one by
    /// one (a mic-only broadcast with the mic muted). True exactly when `mutedSources` holds every
    /// source of the mix.
    public var muted = false
    /// Sources silent now: muted one by one (`setMute(_:source:)`), and every source of the mix
    /// while `setMute(true)` is in effect.
    public var mutedSources: [AudioSourceKind] = []
    /// Volume of each source in percent.
    public var volumePercent: [AudioSourceKind: Int] = [:]
    public var targetVideoBitrateKbps = 0
    public var minVideoBitrateKbps = 0
    public var currentVideoBitrateKbps = 0
    public var autoBitrate = false
    public var recordingPath: String?
    /// The recording is paused (`pauseLocalRecording`).
    public var recordingPaused = false
    /// The replay buffer's length (`enableReplayBuffer`); nil when there is none.
    public var replayBufferSeconds: Int?
    /// The settings a person at the controls changes (ctl, the dashboard): the mirrors, the
    /// preview, the music's loop and the microphone's processing.
    public var settings = LivePusherSettings()
    public var destinations: [LivePushDestinationStatus] = []
    public var statistics = LivePusherStatistics()
}

/// The switches of `LivePusher` that are not figures: what `status` says of them.
public struct LivePusherSettings: Equatable, Sendable {
    /// The stream is mirrored (`setPushMirror`).
    public var pushMirror = false
    /// The preview is mirrored (`setPreviewMirror`); independent of `pushMirror`.
    public var previewMirror = false
    /// The preview window is open.
    public var previewOpen = false
    /// Background music loops (`setBGMLoop`).
    public var bgmLoop = false
    /// Background music plays now.
    public var bgmPlaying = false
    public var denoise = AudioDenoiseLevel.off
    public var automaticGain = false
    public var voiceActivity = false
    /// Ear monitoring is asked for (`setEarsBack`); `earMonitorSink` nil: the default output.
    public var earMonitor = false
    public var earMonitorSink: String?
}

/// The mute switches and volumes of the audio pipeline.
struct AudioControls {
    var allMuted: Bool
    var mutedSources: Set<AudioSourceKind>
    /// The sources the mix has now.
    var sources: Set<AudioSourceKind>
    var volumePercent: [AudioSourceKind: Int]
}

extension LivePusher {
    /// Everything the pusher is doing now: capture, pause, audio switches, bitrates, each destination
    /// with its status and last-second figures, and the latest statistics.
    public var status: LivePusherStatus {
        let (pipeline, audioPipeline, recording, paused) = state.withLock {
            ($0.pipeline, $0.audioPipeline, $0.recording, $0.userPaused)
        }
        var status = LivePusherStatus()
        status.capturing = pipeline != nil
        status.paused = paused
        status.placeholder = pipeline?.shownPlaceholder.map { "\($0)" }
        if let controls = audioPipeline?.controls {
            let silent = controls.allMuted ? controls.mutedSources.union(controls.sources) : controls.mutedSources
            status.muted = controls.allMuted || (!controls.sources.isEmpty && controls.sources.isSubset(of: silent))
            status.mutedSources = AudioSourceKind.allCases.filter(silent.contains)
            status.volumePercent = controls.volumePercent
        }
        (status.targetVideoBitrateKbps, status.minVideoBitrateKbps, status.currentVideoBitrateKbps) = tick.bitratesKbps
        status.autoBitrate = config.autoBitrate
        status.recordingPath = recording?.path
        status.recordingPaused = recording?.isPaused ?? false
        status.replayBufferSeconds = replayBufferSeconds
        status.settings = settings
        status.destinations = outputs.destinationStatuses
        status.pushing = !status.destinations.isEmpty
        status.statistics = tick.latest
        status.state = pusherState
        return status
    }

    /// The switches `status` reports (`LivePusherSettings`).
    public var settings: LivePusherSettings {
        var settings = LivePusherSettings()
        settings.pushMirror = pushMirror
        settings.previewMirror = previewMirror
        settings.previewOpen = previewWindowID != nil
        settings.bgmLoop = bgmLoop
        settings.bgmPlaying = isBGMPlaying
        (settings.denoise, settings.automaticGain, settings.voiceActivity) = microphoneProcessing
        let ear = earMonitor
        (settings.earMonitor, settings.earMonitorSink) = (ear.enabled, ear.sink)
        return settings
    }

    /// Stops publishing to the destination at `index` in `pushURLs` (FCUnpublish, deleteStream);
    /// the others, encoding and recording go on. 0, or -2 for an index that is not there.
    @discardableResult
    public func removePushDestination(index: Int) -> Int32 {
        inTurn {
            guard let output = outputs.remove(at: index) else { return LivePushErrorCode.invalidParameter }
            refreshState()
            let (pipeline, audioPipeline) = state.withLock { ($0.pipeline, $0.audioPipeline) }
            pipeline?.remove(output)
            audioPipeline?.remove(output)
            output.stop()
            return 0
        }
    }

    /// Silence instead of one source (the microphone or the helper's desktop audio), or that
    /// source again; the others and the audio track go on. `setMute(_:)` mutes the whole mix.
    public func setMute(_ muted: Bool, source: AudioSourceKind) {
        changeAudio { $0.mutedSources[source] = muted }
    }

    /// The next picture sent (the screen, or the placeholder shown instead) as a JPEG file's
    /// bytes, encoded with libavcodec's mjpeg; nil when screen capture is not running or no
    /// picture went out within `timeoutMs`.
    public func snapshotJPEG(timeoutMs: Int = 1000) -> [UInt8]? {
        guard let pipeline else { return nil }
        // Taken out of `snapshotter` for the wait and the encode, and put back: a caller at the same
        // time makes its own rather than waiting under the lock.
        let kept = snapshotter.withLock { kept in
            defer { kept = nil }
            return kept
        }
        do {
            let snapshotter = try kept ?? Snapshotter(width: pipeline.settings.width, height: pipeline.settings.height)
            defer { self.snapshotter.withLock { if $0 == nil { $0 = snapshotter } } }
            guard pipeline.capturePreview(into: snapshotter.frame, timeoutMs: timeoutMs) else { return nil }
            return try snapshotter.encoder.encode(snapshotter.frame)
        } catch {
            return nil
        }
    }
}

/// The picture and JPEG encoder of `snapshotJPEG`, made on first use.
final class Snapshotter: @unchecked Sendable {
    let frame: VideoFrame
    let encoder: JPEGEncoder

    init(width: Int, height: Int) throws(MediaError) {
        frame = try VideoFrame(width: width, height: height)
        encoder = try JPEGEncoder(width: width, height: height)
    }
}
