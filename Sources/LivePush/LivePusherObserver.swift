import RTMP

/// What a `LivePusher` reports, in the shape of the mobile SDKs' observers (Tencent's
/// V2TXLivePusherObserver). Callbacks arrive in order on the pusher's callback queue; every
/// method has an empty default, so an observer implements only what it needs.
public protocol LivePusherObserver: AnyObject, Sendable {
    /// Something failed; `code` is one of `LivePushErrorCode`.
    func onError(code: Int32, message: String, extraInfo: [String: String])
    /// Something went wrong that LivePush worked around; `code` is one of `LivePushWarningCode`.
    func onWarning(code: Int32, message: String, extraInfo: [String: String])
    /// The first frame of the screen reached the video pipeline.
    func onCaptureFirstVideoFrame()
    /// A capture helper connected and started sending the screen.
    func onScreenCaptureStarted()
    /// The screen stopped: `reason` 0 stopped by the user or the helper, 1 interrupted
    /// (the helper crashed, hung, broke the protocol, or its window or display went away),
    /// 2 the captured display changed (the helper finished with RESTARTING: its screen, monitor
    /// or PipeWire stream changed size past its session; it reconnects, `onScreenCaptureStarted` follows).
    func onScreenCaptureStopped(reason: Int32)
    /// The push went through Connecting, ConnectSuccess, Reconnecting or Disconnected.
    func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String])
    /// Once a second.
    func onStatisticsUpdate(_ statistics: LivePusherStatistics)
    /// `code` 0: recording began; -1 internal error, -2 unsupported extension, -6 already
    /// recording, -7 the file exists, -8 no permission to write there.
    func onLocalRecordBegin(code: Int32, storagePath: String)
    /// Every `progressIntervalMs` of recording.
    func onLocalRecording(durationMs: Int, storagePath: String)
    /// `code` 0: the file is complete; -1 recording failed.
    func onLocalRecordComplete(code: Int32, storagePath: String)
    /// `pauseLocalRecording()` took effect: nothing more is written until `resumeLocalRecording()`.
    func onLocalRecordPaused(storagePath: String)
    /// `resumeLocalRecording()` took effect: the file goes on from the next keyframe.
    func onLocalRecordResumed(storagePath: String)
    /// A split (`startLocalRecording(split:)`, `splitLocalRecording()`): `previousPath` is complete
    /// (`durationMs` long, `sizeBytes` big) and the recording goes on in `nextPath` from a keyframe.
    /// `onLocalRecordComplete` names the last file only.
    func onLocalRecordSplit(previousPath: String, durationMs: Int, sizeBytes: Int64, nextPath: String)
    /// A `saveReplay` ended: `code` 0, the file at `path` is complete and holds `durationMs` of the
    /// stream; -1 writing it failed (nothing is left at `path`).
    func onReplaySaved(code: Int32, path: String, durationMs: Int)
    /// The first samples of audio (microphone or desktop) reached the mixer.
    func onCaptureFirstAudioFrame()
    /// The microphone's level, 0 (silence, −60 dBFS and below) to 100 (full scale), every
    /// `intervalMs` after `enableVolumeEvaluation(intervalMs:)`.
    func onMicrophoneVolumeUpdate(volume: Int)
    /// The same, with whether the microphone is muted (by itself or with the whole mix): while it
    /// is, `volume` is 0, the level sent, never the level the microphone hears. By default it
    /// calls `onMicrophoneVolumeUpdate(volume:)`.
    func onMicrophoneVolumeUpdate(volume: Int, muted: Bool)
    /// Every 20 ms of mixed audio before it is encoded, to read or change in place: interleaved
    /// 32-bit float samples (native little-endian byte order), nominally −1...1, `channels`
    /// per sample frame (left first), `sampleRateHz / 50` frames. Called on the audio thread:
    /// return quickly (the frame is due 20 ms later).
    func onProcessAudioFrame(_ frame: inout AudioFrame)
    /// Background music started playing `path` (`startBGM`); `durationMs` is its length (0 when
    /// the file does not say).
    func onBGMStarted(path: String, durationMs: Int)
    /// Once a second while background music plays: where it is and how long it is, in ms.
    func onBGMProgress(positionMs: Int, durationMs: Int)
    /// The background music reached its end (never while it loops).
    func onBGMComplete(path: String)
    /// The background music cannot be played (a missing or unreadable file, a decoding error):
    /// `code` is `LivePushErrorCode.bgmFileUnreadable` or `bgmDecodeFailed`; the broadcast goes on.
    func onBGMError(code: Int32, message: String, path: String)
    /// A voice started (true) or stopped (false) on the microphone, within 300 ms, after
    /// `enableVoiceActivityDetection(true)`.
    func onVoiceActivityDetected(_ active: Bool)
    /// `snapshot()`'s answer: `image` is the outgoing picture as a PNG file's bytes, or nil and
    /// `error` says why there is none.
    func onSnapshotComplete(image: [UInt8]?, error: String?)
    /// Every outgoing picture just before it is encoded, after `enableCustomVideoProcess(true)`:
    /// its I420 planes to read or draw on in place (`VideoProcessFrame` documents the layout).
    /// Called on the video thread: return well within a frame.
    func onProcessVideoFrame(_ frame: inout VideoProcessFrame)
    /// What the pusher is doing changed (`LivePusher.pusherState`): idle, capturing, connecting,
    /// pushing, reconnecting or failed.
    func onStateChanged(_ state: LivePusherState)
    /// `pause()` took effect: the pause picture goes out instead of the screen (the reference SDK's onPushPaused).
    func onPushPaused()
    /// `resume()` took effect: the screen goes out again.
    func onPushResumed()
    /// The network has carried less than the minimum bitrate for `networkPoorAfterMs`: the
    /// poor-network picture replaces the screen (the reference SDK's onNetworkPoor).
    func onNetworkPoor()
    /// The send queues drained after `onNetworkPoor`: the screen is back (onNetworkRecovery).
    func onNetworkRecovered()
    /// The preview window opened (`startPreview`).
    func onPreviewStarted()
    /// The preview window closed: `stopPreview`, its user, or its X server (then `previewClosed` warns first).
    func onPreviewStopped()
}

/// 20 ms of mixed audio (`onProcessAudioFrame`).
public struct AudioFrame: Sendable {
    /// Interleaved float samples; change them in place, keep the count.
    public var samples: [Float]
    public let sampleRateHz: Int
    public let channels: Int
    /// Position on the stream's timeline, in ms.
    public let ptsMs: Int64
}

extension LivePusherObserver {
    public func onError(code: Int32, message: String, extraInfo: [String: String]) {}
    public func onWarning(code: Int32, message: String, extraInfo: [String: String]) {}
    public func onCaptureFirstVideoFrame() {}
    public func onScreenCaptureStarted() {}
    public func onScreenCaptureStopped(reason: Int32) {}
    public func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {}
    public func onStatisticsUpdate(_ statistics: LivePusherStatistics) {}
    public func onLocalRecordBegin(code: Int32, storagePath: String) {}
    public func onLocalRecording(durationMs: Int, storagePath: String) {}
    public func onLocalRecordComplete(code: Int32, storagePath: String) {}
    public func onLocalRecordPaused(storagePath: String) {}
    public func onLocalRecordResumed(storagePath: String) {}
    public func onLocalRecordSplit(previousPath: String, durationMs: Int, sizeBytes: Int64, nextPath: String) {}
    public func onReplaySaved(code: Int32, path: String, durationMs: Int) {}
    public func onCaptureFirstAudioFrame() {}
    public func onMicrophoneVolumeUpdate(volume: Int) {}
    public func onMicrophoneVolumeUpdate(volume: Int, muted: Bool) { onMicrophoneVolumeUpdate(volume: volume) }
    public func onProcessAudioFrame(_ frame: inout AudioFrame) {}
    public func onBGMStarted(path: String, durationMs: Int) {}
    public func onBGMProgress(positionMs: Int, durationMs: Int) {}
    public func onBGMComplete(path: String) {}
    public func onBGMError(code: Int32, message: String, path: String) {}
    public func onVoiceActivityDetected(_ active: Bool) {}
    public func onSnapshotComplete(image: [UInt8]?, error: String?) {}
    public func onProcessVideoFrame(_ frame: inout VideoProcessFrame) {}
    public func onStateChanged(_ state: LivePusherState) {}
    public func onPushPaused() {}
    public func onPushResumed() {}
    public func onNetworkPoor() {}
    public func onNetworkRecovered() {}
    public func onPreviewStarted() {}
    public func onPreviewStopped() {}
}

/// The figures of `onStatisticsUpdate`.
public struct LivePusherStatistics: Equatable, Sendable {
    /// This process's CPU use, percent of all cores (the same scale as `systemCpu`: on a 4-core
    /// machine one busy core is 25).
    public var appCpu: Int = 0
    public var width: Int = 0
    public var height: Int = 0
    /// Frames encoded in the last second.
    public var fps: Int = 0
    /// Encoded video in the last second.
    public var videoBitrateKbps: Int = 0
    public var audioBitrateKbps: Int = 0
    /// Frames the helper sent that the pipeline never encoded (a newer one came first).
    public var framesSkipped: Int = 0
    /// Output frames that repeated the previous picture (nothing new from the helper).
    public var framesRepeated: Int = 0
    /// Bytes of the current recording.
    public var recordingBytes: Int64 = 0
    /// Bytes of encoded media the replay buffer holds (`enableReplayBuffer`; 0 without one).
    public var replayBufferBytes: Int64 = 0
    /// The whole system's CPU use, percent of all cores.
    public var systemCpu: Int = 0
    /// The bitrate the video encoder runs at now (auto bitrate moves it between min and target).
    public var encoderBitrateKbps: Int = 0
    /// Audio sent: rate and channels (0 when the stream has no audio).
    public var audioSampleRateHz: Int = 0
    public var audioChannels: Int = 0
    /// The network's latency and jitter, as the reference SDKs mean them: the connection's
    /// round-trip time and its variation (TCP_INFO's `tcpi_rtt` and `tcpi_rttvar` for RTMP and
    /// RTMPS, SRT's own `msRTT` and its deviation for SRT), of the destination with the longest
    /// round trip, in whole ms; a round trip under a millisecond (loopback) is 1, and 0 means no
    /// destination publishes.
    public var delayMs: Int = 0
    public var jitterMs: Int = 0
    /// The local send queue's wait: the time a packet waited in its destination's queue before
    /// its write finished (mean per destination, the worst one) and its standard deviation.
    public var queueDelayMs: Int = 0
    public var queueJitterMs: Int = 0
    /// Push figures of the last second, over every destination: the video frames dropped for
    /// congestion, the longest queue, and the bytes sent.
    public var framesDropped: Int = 0
    public var queueMs: Int = 0
    public var bytesSent: Int = 0
    /// What the network carried in the last second, over every destination.
    public var sendBitrateKbps: Int = 0
    /// SRT destinations' own figures for the last second (`srt_bstats`; 0 without SRT): the
    /// round-trip time (the worst destination), packets the receivers reported lost, packets
    /// retransmitted, packets dropped as too late, and SRT's send rate (summed).
    public var srtRttMs: Int = 0
    public var srtPacketsLost: Int = 0
    public var srtPacketsRetransmitted: Int = 0
    public var srtPacketsDropped: Int = 0
    public var srtSendRateKbps: Int = 0
    /// The microphone's and the desktop audio's level as sent (after volume and mute) over the
    /// last second: 0 (silence, −60 dBFS and below) to 100 (full scale).
    public var micLevel: Int = 0
    public var desktopLevel: Int = 0
    /// The video hook's mean time per picture over the last second (`onProcessVideoFrame`), in ms.
    public var videoProcessMs: Double = 0
    /// The size of the capture helper's last frame (0 before the first): with adaptive resolution
    /// and a helper that scales (LPC_CAP_SCALE) it follows the encoded size down and up.
    public var sourceWidth: Int = 0
    public var sourceHeight: Int = 0
    /// Keyframes forced on request since the start (`requestKeyframe`: viewers joining).
    public var keyframesForced: Int = 0
    /// Output pictures left out since the start because the pusher could not run their tick in
    /// time (a busy machine, a stopped process): each is a gap of one frame at the receiver; the
    /// pictures that follow keep their time, so sound and picture stay together.
    public var videoSkippedFrames: Int = 0
    /// Sound since the start that the mixer had to fill with silence although its source was
    /// delivering (a chunk that came later than the mixer could wait, the pusher stalled), in ms
    /// of the stream: the holes a listener hears.
    public var audioGapMs: Int = 0
    public init() {}
}

/// Error codes of `onError`.
public enum LivePushErrorCode {
    /// The video or audio encoder could not be opened (`startScreenCapture` also throws) or failed.
    public static let encoderFailed: Int32 = -1301
    /// Screen capture could not start: the group's rendezvous cannot be made (`startScreenCapture`
    /// also throws).
    public static let screenCaptureFailed: Int32 = -1308
    /// A parameter out of its range (the reference SDK's -2), e.g. a bitrate for `setTargetVideoBitrate`.
    public static let invalidParameter: Int32 = -2
    /// The push URL cannot be used (not rtmp://, no key, ...): the same code, for the URL.
    public static let invalidURL: Int32 = invalidParameter
    /// Pushing failed for another reason than those below: the destination's output could not be
    /// built (`startPush` and `addPushDestination` return -1).
    public static let pushFailed: Int32 = -1307
    /// Pushing gave up (after its retries, or at once when the server refused). The code says why:
    /// the server's host name does not resolve,
    public static let pushDNSFailed: Int32 = -1401
    /// nothing listens on the server's port,
    public static let pushConnectionRefused: Int32 = -1402
    /// the server did not answer in time,
    public static let pushTimedOut: Int32 = -1403
    /// the server broke off the RTMP handshake or a command, or broke the protocol (a chunk size
    /// out of range, a window acknowledgement size of 0),
    public static let pushHandshakeFailed: Int32 = -1404
    /// the server refused the application or the stream key (e.g. a stream is already being
    /// published with this key; no retries then),
    public static let pushRejected: Int32 = -1405
    /// the connection broke while sending and could not be made again,
    public static let pushNetworkLost: Int32 = -1406
    /// rtmps://: the server's certificate does not lead to a trusted CA (a private CA needs
    /// `--ca-file`/`caFile`; no retries),
    public static let pushCertificateUntrusted: Int32 = -1410
    /// rtmps://: the certificate is not for the URL's host name (no retries),
    public static let pushCertificateNameMismatch: Int32 = -1411
    /// rtmps://: the certificate has expired or is not valid yet (no retries),
    public static let pushCertificateExpired: Int32 = -1412
    /// rtmps:// to a server that does not speak TLS, such as a plain RTMP port (no retries),
    public static let pushNotTLS: Int32 = -1413
    /// rtmps://: the TLS handshake failed (no common protocol version, an alert; retried),
    public static let pushTLSHandshakeFailed: Int32 = -1414
    /// rtmps://: the CA file (`--ca-file`, `caFile`) cannot be read as PEM certificates (no retries),
    public static let pushCAFileUnreadable: Int32 = -1415
    /// srt://: the listener refused the passphrase, or requires one that was not given (no retries).
    public static let pushPassphraseRejected: Int32 = -1416

    /// The code for a push failure of `kind`.
    static func push(_ kind: PushError.Kind) -> Int32 {
        switch kind {
        case .dnsFailed: pushDNSFailed
        case .connectionRefused: pushConnectionRefused
        case .timedOut: pushTimedOut
        case .handshakeFailed, .protocolViolation: pushHandshakeFailed
        case .rejected: pushRejected
        case .networkLost: pushNetworkLost
        case .certificateUntrusted: pushCertificateUntrusted
        case .certificateNameMismatch: pushCertificateNameMismatch
        case .certificateExpired: pushCertificateExpired
        case .notTLS: pushNotTLS
        case .tlsHandshakeFailed: pushTLSHandshakeFailed
        case .caFileUnreadable: pushCAFileUnreadable
        case .passphraseRejected: pushPassphraseRejected
        case .wrongState: pushFailed  // a call out of order in our own sender: not the server's
        }
    }

    /// Background music: the file is missing or is not audio this FFmpeg decodes,
    public static let bgmFileUnreadable: Int32 = -1340
    /// or decoding it failed while it played.
    public static let bgmDecodeFailed: Int32 = -1341
    /// Ear monitoring cannot play to the sink (no PipeWire, no such sink).
    public static let earMonitorUnavailable: Int32 = -1342
    /// A watermark's file cannot be read as a PNG or JPEG (`addWatermark`).
    public static let watermarkUnreadable: Int32 = -1530
    /// A watermark's position is outside the picture (x, y, width or opacity outside 0 to 1).
    public static let watermarkInvalid: Int32 = -1531
    /// `removeWatermark`: no watermark has that id.
    public static let watermarkNotFound: Int32 = -1532
    /// The preview window cannot be opened (no X display, no MIT-SHM 1.2).
    public static let previewUnavailable: Int32 = -1533

    /// Whether `code` means that pushing failed.
    public static func isPushFailure(_ code: Int32) -> Bool {
        code == pushFailed || (-1406 ... -1401).contains(code) || (-1416 ... -1410).contains(code)
    }
}

/// Warning codes of `onWarning`.
public enum LivePushWarningCode {
    /// The network is slower than the stream: video frames were dropped or the bitrate lowered
    /// (the reference SDK's NETWORK_BUSY).
    public static let networkBusy: Int32 = 1101
    /// A push connection failed or broke and is being made again; `extraInfo["cause"]` says why
    /// (dnsFailed, connectionRefused, timedOut, handshakeFailed, networkLost, tlsHandshakeFailed).
    public static let pushReconnecting: Int32 = 1102
    /// The capture helper went away (exited, hung, reported an error, or finished with a reason
    /// other than a planned one); the pause picture goes out until a helper is back.
    public static let helperLost: Int32 = 1201
    /// The helper broke a rule of the protocol (`extraInfo["rule"]`); it was sent ERROR and disconnected.
    public static let helperViolation: Int32 = 1202
    /// A helper was turned away (busy group, wrong user...); many at once come as a few warnings,
    /// the rest counted in one.
    public static let helperRejected: Int32 = 1203
    /// The configured encoder could not be opened (no GPU for VA-API or NVENC); libx264 is used.
    public static let encoderFallback: Int32 = 1204
    /// The pause or poor-network image cannot be read; the dimmed last picture is shown instead.
    public static let imageUnreadable: Int32 = 1205
    /// The helper paused (PAUSE): `message` gives the reason, by name or as its number.
    public static let helperPaused: Int32 = 1206
    public static let helperResumed: Int32 = 1207
    /// The helper finished as planned (FINISH {USER} or {DONE}); `extraInfo["reason"]` is its code.
    public static let helperFinished: Int32 = 1208
    /// The helper's timestamps are more than 1 s ahead of the pusher's clock: the arrival time is
    /// used instead (SPEC §9). At most one such warning per 10 s and message type.
    public static let helperClock: Int32 = 1209
    /// A configured watermark (`--watermark`, `watermarks`) cannot be read; the broadcast goes on without it.
    public static let watermarkUnreadable: Int32 = 1530
    /// The preview window was closed (by its user or its X server); the broadcast goes on.
    public static let previewClosed: Int32 = 1531
    /// No microphone: no PipeWire daemon, no source, or the named one is missing; the stream
    /// carries silence (`message` says what is missing and how to fix it).
    public static let microphoneUnavailable: Int32 = 1301
    /// The microphone went away; silence until it returns (then `microphoneReturned`).
    public static let microphoneLost: Int32 = 1302
    public static let microphoneReturned: Int32 = 1303
    /// The pusher itself was stalled (stopped, or starved of CPU) for `extraInfo["durationMs"]`:
    /// `extraInfo["picturesSkipped"]` output pictures were left out (a gap at the receiver, no
    /// shift of what follows). Not the network: nothing is dropped for congestion because of it.
    public static let pusherStalled: Int32 = 1105
    /// A recording of its own quality (`recordingQuality`) left pictures out: its encoder could not
    /// keep up beside the live one. Sent when it ends; `extraInfo["frames"]` is how many.
    public static let recordingFramesDropped: Int32 = 1580
    /// The next file of a split recording could not be opened (`extraInfo["path"]`): the recording
    /// goes on in the file it was in, and the split is tried again one step (duration or size) later.
    public static let recordSplitFailed: Int32 = 1581
}

/// Return codes of `startLocalRecording`, as the reference SDK numbers them.
public enum LocalRecordingCode {
    public static let ok: Int32 = 0
    public static let internalError: Int32 = -1
    public static let unsupportedExtension: Int32 = -2
    /// `onLocalRecordComplete` only: stopped before the first picture, so nothing was recorded.
    public static let nothingRecorded: Int32 = -3
    public static let alreadyRecording: Int32 = -6
    public static let fileExists: Int32 = -7
    public static let noPermission: Int32 = -8
}
