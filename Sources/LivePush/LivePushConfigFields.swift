// LivePushConfig's fields as a person names them (JSON key, command-line option, unit) and the
// errors that name them: split from LivePushConfig.swift, which had grown past 600 lines.
import Foundation
import Media

// MARK: - Fields

extension LivePushConfig {
    /// One field of the configuration: its JSON key (the property name), its command-line option and its unit.
    public enum Field: String, CaseIterable, Sendable, CodingKey {
        case resolution
        case fps
        case gopSeconds
        case qualityMode
        case targetVideoBitrateKbps
        case minVideoBitrateKbps
        case initialVideoBitrateKbps
        case encoder
        case audioSampleRateHz
        case audioChannels
        case audioBitrateKbps
        case scaleMode
        case connectRetryIntervalMs
        case connectRetryCount
        case connectRetryForMs
        case autoBitrate
        case pauseImagePath
        case networkPoorImagePath
        case networkPoorAfterMs
        case caFile
        case urlFile
        case watermarks
        case pushMirror
        case enableAutoResolution
        case preset
        case profile
        case tune
        case encoderThreads
        case recordingQuality
        case recordTracks

        /// The key in a JSON configuration file: the Swift property name.
        public var jsonKey: String { rawValue }

        /// The long option without its dashes: `"fps"`, `"min-bitrate"`, `"no-auto-bitrate"`.
        public var optionName: String {
            switch self {
            case .resolution: "resolution"
            case .fps: "fps"
            case .gopSeconds: "gop"
            case .qualityMode: "quality"
            case .targetVideoBitrateKbps: "bitrate"
            case .minVideoBitrateKbps: "min-bitrate"
            case .initialVideoBitrateKbps: "initial-bitrate"
            case .encoder: "encoder"
            case .audioSampleRateHz: "audio-rate"
            case .audioChannels: "audio-channels"
            case .audioBitrateKbps: "audio-bitrate"
            case .scaleMode: "scale"
            case .connectRetryIntervalMs: "retry-interval"
            case .connectRetryCount: "retry-count"
            case .connectRetryForMs: "retry-for"
            case .autoBitrate: "no-auto-bitrate"
            case .pauseImagePath: "pause-image"
            case .networkPoorImagePath: "network-poor-image"
            case .networkPoorAfterMs: "network-poor-after"
            case .caFile: "ca-file"
            case .urlFile: "url-file"
            case .watermarks: "watermark"
            case .pushMirror: "push-mirror"
            case .enableAutoResolution: "auto-resolution"
            case .preset: "preset"
            case .profile: "profile"
            case .tune: "tune"
            case .encoderThreads: "threads"
            case .recordingQuality: "record-quality"
            case .recordTracks: "record-tracks"
            }
        }

        /// The option as a person types it: `"--fps"`.
        public var option: String { "--" + optionName }

        /// The unit of a numeric field (`"kbps"`, `"Hz"`, `"ms"`, `"s"`), nil for counts and non-numbers.
        public var unit: String? {
            switch self {
            case .gopSeconds: "s"
            case .targetVideoBitrateKbps, .minVideoBitrateKbps, .initialVideoBitrateKbps, .audioBitrateKbps: "kbps"
            case .audioSampleRateHz: "Hz"
            case .connectRetryIntervalMs, .networkPoorAfterMs, .connectRetryForMs: "ms"
            default: nil
            }
        }
    }
}

// MARK: - Errors

/// A configuration that cannot be used. The description names the field as its command-line option spells
/// it, the value, and what is allowed: `--fps 0 is outside 1...60`.
public enum LivePushConfigError: Error, Equatable, CustomStringConvertible {
    /// A number outside its range.
    case outOfRange(LivePushConfig.Field, value: Int, allowed: ClosedRange<Int>)
    /// A number that is not one of the few values allowed (audio rate, channels).
    case notAllowed(LivePushConfig.Field, value: Int, allowed: [Int])
    /// A name that is not one of those allowed (quality mode, encoder, scale mode).
    case unknownName(LivePushConfig.Field, value: String, allowed: [String])
    /// Resolution text that is neither a preset nor `WIDTHxHEIGHT`.
    case unreadableResolution(String)
    /// An exact size outside 160...7680 wide or 90...4320 high.
    case resolutionOutOfRange(width: Int, height: Int)
    /// An exact size with an odd side.
    case oddResolution(width: Int, height: Int)
    /// Custom quality without all three bitrates; carries the fields that are missing.
    case customBitratesMissing([LivePushConfig.Field])
    /// The min bitrate above the target. `quality` and `preset` say which table row filled the bitrates
    /// that were not given.
    case minBitrateAboveTarget(minKbps: Int, targetKbps: Int, quality: QualityMode, preset: ResolutionPreset)
    /// The initial bitrate below the min or above the target.
    case initialBitrateOutside(initialKbps: Int, minKbps: Int, targetKbps: Int, quality: QualityMode,
                               preset: ResolutionPreset)
    /// A JSON configuration that cannot be read; the text names the key and what was wrong with it.
    case json(String)
    /// A file the configuration names (the CA file) that does not exist or cannot be read.
    case unreadableFile(LivePushConfig.Field, path: String, reason: String)
    /// A watermark that is not FILE@X,Y,W[,OPACITY] with fractions of the picture.
    case invalidWatermark(String, reason: String)
    /// `--record-quality` text that is not `crf=N[,preset=P]`; the reason says which part and why.
    case unreadableRecordingQuality(String, reason: String)

    public var description: String {
        switch self {
        case .outOfRange(let field, _, _), .notAllowed(let field, _, _), .unknownName(let field, _, _),
             .unreadableFile(let field, _, _):
            return "\(field.option) \(reason)"
        case .unreadableRecordingQuality:
            return "--record-quality \(reason)"
        case .unreadableResolution, .resolutionOutOfRange, .oddResolution:
            return "--resolution \(reason)"
        case .invalidWatermark:
            return "--watermark \(reason)"
        case .customBitratesMissing, .minBitrateAboveTarget, .initialBitrateOutside, .json:
            return reason
        }
    }

    /// What is wrong, without the option in front: `0 is outside 1...60`. JSON errors put the key in front.
    var reason: String {
        switch self {
        case .outOfRange(let field, let value, let allowed):
            let unit = field.unit.map { " \($0)" } ?? ""
            return "\(value)\(unit) is outside \(allowed.lowerBound)...\(allowed.upperBound)\(unit)"
        case .notAllowed(let field, let value, let allowed):
            let unit = field.unit.map { " \($0)" } ?? ""
            return "\(value)\(unit) is not \(Self.either(allowed.map(String.init)))\(unit)"
        case .unknownName(_, let value, let allowed):
            return "'\(value)' is not \(Self.either(allowed))"
        case .unreadableResolution(let text):
            let presets = ResolutionPreset.allCases.map(\.rawValue).joined(separator: ", ")
            return "'\(text)' is neither a preset (\(presets)) nor WIDTHxHEIGHT such as 1280x720"
        case .resolutionOutOfRange(let width, let height):
            var problems: [String] = []
            if !VideoResolution.widthRange.contains(width) {
                problems.append("width \(width) is outside \(Self.text(VideoResolution.widthRange))")
            }
            if !VideoResolution.heightRange.contains(height) {
                problems.append("height \(height) is outside \(Self.text(VideoResolution.heightRange))")
            }
            return "\(width)x\(height): " + problems.joined(separator: " and ")
        case .oddResolution(let width, let height):
            let odd = [width % 2 != 0 ? "width \(width)" : nil, height % 2 != 0 ? "height \(height)" : nil]
                .compactMap { $0 }
            return "\(width)x\(height): \(odd.joined(separator: " and ")) \(odd.count == 1 ? "is" : "are") odd; "
                + "width and height must be even"
        case .customBitratesMissing(let missing):
            return "custom quality needs --bitrate, --min-bitrate and --initial-bitrate; missing: "
                + missing.map(\.option).joined(separator: ", ")
        case .minBitrateAboveTarget(let minKbps, let targetKbps, let quality, let preset):
            return "min bitrate \(minKbps) kbps is above the target \(targetKbps) kbps "
                + "(--min-bitrate must not exceed --bitrate)" + Self.tableNote(quality, preset)
        case .initialBitrateOutside(let initialKbps, let minKbps, let targetKbps, let quality, let preset):
            let position = initialKbps < minKbps ? "below the min \(minKbps)" : "above the target \(targetKbps)"
            return "initial bitrate \(initialKbps) kbps is \(position) kbps "
                + "(--initial-bitrate must be within --min-bitrate...--bitrate)" + Self.tableNote(quality, preset)
        case .json(let message):
            return message
        case .unreadableFile(_, let path, let reason):
            return "'\(path)' \(reason)"
        case .invalidWatermark(let text, let reason):
            return "'\(text)': \(reason)"
        case .unreadableRecordingQuality(let text, let reason):
            return "'\(text)': \(reason); write crf=N[,preset=P], e.g. crf=20 or crf=18,preset=fast"
        }
    }

    /// For a table mode, where the bitrates that were not given came from.
    private static func tableNote(_ quality: QualityMode, _ preset: ResolutionPreset) -> String {
        guard let row = preset.bitratesKbps(for: quality) else { return "" }
        return "; bitrates not given come from the \(quality.rawValue) row for \(preset.rawValue): "
            + "target \(row.target), min \(row.min), initial \(row.initial) kbps"
    }

    /// `a or b`, `a, b or c`.
    private static func either(_ items: [String]) -> String {
        guard let last = items.last else { return "" }
        return items.count == 1 ? last : items.dropLast().joined(separator: ", ") + " or " + last
    }

    private static func text(_ range: ClosedRange<Int>) -> String { "\(range.lowerBound)...\(range.upperBound)" }
}
