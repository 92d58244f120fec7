// The encoder's choices in LivePushConfig (preset, profile, tune, threads) and a recording's own
// quality: their names, their JSON keys and their checks. Split from LivePushConfig.swift.
import Foundation
import Media

/// A local recording encoded on its own, at constant quality, from the same pictures as the live
/// stream: `crf=N[,preset=P]`. CRF 0...51, lower is better (18 to 23 is the usual range); the
/// preset defaults to the live one.
public struct RecordingQuality: Sendable, Equatable, Codable, CustomStringConvertible {
    public var crf: Int
    public var preset: X264Preset?

    public static let crfRange = 0...51

    public init(crf: Int, preset: X264Preset? = nil) {
        self.crf = crf
        self.preset = preset
    }

    /// Reads `crf=N` or `crf=N,preset=P` (parts in any order, names in any case).
    public init(parsing text: String) throws(LivePushConfigError) {
        var crf: Int?, preset: X264Preset?
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, !pair[1].isEmpty else {
                throw .unreadableRecordingQuality(text, reason: "'\(part)' is not NAME=VALUE")
            }
            switch pair[0].lowercased() {
            case "crf":
                guard let value = Int(pair[1]) else {
                    throw .unreadableRecordingQuality(text, reason: "crf '\(pair[1])' is not a whole number")
                }
                crf = value
            case "preset":
                guard let value = X264Preset(rawValue: pair[1].lowercased()) else {
                    throw .unreadableRecordingQuality(text, reason: "preset '\(pair[1])' is not "
                        + X264Preset.allCases.map(\.rawValue).joined(separator: ", "))
                }
                preset = value
            default:
                throw .unreadableRecordingQuality(text, reason: "'\(pair[0])' is neither crf nor preset")
            }
        }
        guard let crf else { throw .unreadableRecordingQuality(text, reason: "crf=N is missing") }
        self.init(crf: crf, preset: preset)
        try check()
    }

    /// Throws when the CRF is outside 0...51.
    public func check() throws(LivePushConfigError) {
        if !Self.crfRange.contains(crf) {
            throw .unreadableRecordingQuality(description, reason: "crf \(crf) is outside 0...51")
        }
    }

    /// `crf=20` or `crf=18,preset=fast`: what `init(parsing:)` reads.
    public var description: String { "crf=\(crf)" + (preset.map { ",preset=\($0.rawValue)" } ?? "") }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try RecordingQuality(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.reason)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension LivePushConfig {
    /// Reads `ultrafast`, `superfast`, `veryfast`, `faster`, `fast` or `medium` (any case).
    public static func preset(named text: String) throws(LivePushConfigError) -> X264Preset {
        try choice(.preset, text)
    }

    /// Reads `baseline`, `main` or `high` (any case).
    public static func profile(named text: String) throws(LivePushConfigError) -> H264Profile {
        try choice(.profile, text)
    }

    /// Reads `zerolatency`, `film`, `animation`, `grain`, `stillimage` or `fastdecode` (any case).
    public static func tune(named text: String) throws(LivePushConfigError) -> X264Tune {
        try choice(.tune, text)
    }

    private static func choice<T: RawRepresentable & CaseIterable>(_ field: Field, _ text: String)
        throws(LivePushConfigError) -> T where T.RawValue == String
    {
        guard let value = T(rawValue: text.lowercased()) else {
            throw .unknownName(field, value: text, allowed: T.allCases.map(\.rawValue))
        }
        return value
    }

    /// What the live encoder is given.
    public var encoderTuning: H264EncoderTuning {
        H264EncoderTuning(preset: preset, profile: profile, tune: tune, threads: encoderThreads)
    }

    /// The encoder keys of a JSON configuration, each optional.
    mutating func decodeEncoding(_ container: KeyedDecodingContainer<Field>) throws {
        func text(_ key: Field) throws -> String? {
            do {
                return try container.decodeIfPresent(String.self, forKey: key)
            } catch {
                throw LivePushConfigError.json("key '\(key.jsonKey)': expected a string")
            }
        }
        func named<T>(_ key: Field, _ parse: (String) throws(LivePushConfigError) -> T) throws -> T? {
            guard let value = try text(key) else { return nil }
            do {
                return try parse(value)
            } catch {
                throw LivePushConfigError.json("key '\(key.jsonKey)': \(error.reason)")
            }
        }
        if let value = try named(.preset, Self.preset(named:)) { preset = value }
        profile = try named(.profile, Self.profile(named:))
        if let value = try named(.tune, Self.tune(named:)) { tune = value }
        do {
            if let value = try container.decodeIfPresent(Int.self, forKey: .encoderThreads) { encoderThreads = value }
        } catch {
            throw LivePushConfigError.json("key '\(Field.encoderThreads.jsonKey)': expected a whole number")
        }
        recordingQuality = try named(.recordingQuality) { value throws(LivePushConfigError) in
            try RecordingQuality(parsing: value)
        }
    }

    func encodeEncoding(into container: inout KeyedEncodingContainer<Field>) throws {
        try container.encode(preset.rawValue, forKey: .preset)
        try container.encodeIfPresent(profile?.rawValue, forKey: .profile)
        try container.encode(tune.rawValue, forKey: .tune)
        try container.encode(encoderThreads, forKey: .encoderThreads)
        try container.encodeIfPresent(recordingQuality, forKey: .recordingQuality)
    }
}
