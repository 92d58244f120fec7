import CFFmpeg

/// How much FFmpeg's own libraries print to stderr (`av_log_set_level`). LivePush keeps them at
/// `error` unless the application asks for more (`LivePusher.setLogLevel`, `--log-level`).
public enum LibraryLogLevel: String, CaseIterable, Sendable {
    case quiet, error, warning, info, debug

    /// Sets FFmpeg's log level for the whole process.
    public func apply() {
        MediaLogging.quietLibraries()  // the default is applied first, so it never overrides this
        av_log_set_level(avLevel)
    }

    /// FFmpeg's level now, as one of these (the nearest at or below).
    public static var current: LibraryLogLevel {
        let level = av_log_get_level()
        return allCases.last { $0.avLevel <= level } ?? .quiet
    }

    var avLevel: Int32 {
        switch self {
        case .quiet: AV_LOG_QUIET
        case .error: AV_LOG_ERROR
        case .warning: AV_LOG_WARNING
        case .info: AV_LOG_INFO
        case .debug: AV_LOG_DEBUG
        }
    }
}
