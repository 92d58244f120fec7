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
    /// (the helper crashed, hung, broke the protocol, or its window or display went away).
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
}

/// The figures of `onStatisticsUpdate`.
public struct LivePusherStatistics: Equatable, Sendable {
    /// This process's CPU use, percent of one core.
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
    public init() {}
}

/// Error codes of `onError`.
public enum LivePushErrorCode {
    public static let encoderFailed: Int32 = -1301
    public static let screenCaptureFailed: Int32 = -1308
    /// The push URL cannot be used (not rtmp://, no key, ...).
    public static let invalidURL: Int32 = -2
    /// Pushing failed for good: the server refused, or reconnecting ran out of retries.
    public static let pushFailed: Int32 = -1307
}

/// Warning codes of `onWarning`.
public enum LivePushWarningCode {
    public static let helperLost: Int32 = 1101
    public static let helperViolation: Int32 = 1102
    public static let helperRejected: Int32 = 1103
    /// The configured encoder could not be opened (no GPU for VA-API or NVENC); libx264 is used.
    public static let encoderFallback: Int32 = 1104
}

/// Return codes of `startLocalRecording`, as the reference SDK numbers them.
public enum LocalRecordingCode {
    public static let ok: Int32 = 0
    public static let internalError: Int32 = -1
    public static let unsupportedExtension: Int32 = -2
    public static let alreadyRecording: Int32 = -6
    public static let fileExists: Int32 = -7
    public static let noPermission: Int32 = -8
}
