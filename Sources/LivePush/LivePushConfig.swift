// LivePushConfig: what a broadcast is set up with, as one value that is checked before anything starts.
// The fields follow Alibaba's AlivcLivePushConfig (resolution presets, fps, GOP, quality modes with
// target/min/initial bitrates, auto bitrate, reconnect interval and count, audio rate and channels)
// with a desktop's defaults: 1080p at 30 fps instead of a phone's 540p at 20 fps.
import Foundation
import Media

// MARK: - Resolution

/// The standard output sizes, landscape. The raw value is how the command line and JSON spell it.
public enum ResolutionPreset: String, CaseIterable, Sendable {
    case p360 = "360p"
    case p540 = "540p"
    case p720 = "720p"
    case p1080 = "1080p"
    case p1440 = "1440p"
    case p2160 = "2160p"

    public var width: Int {
        switch self {
        case .p360: 640
        case .p540: 960
        case .p720: 1280
        case .p1080: 1920
        case .p1440: 2560
        case .p2160: 3840
        }
    }

    public var height: Int {
        switch self {
        case .p360: 360
        case .p540: 540
        case .p720: 720
        case .p1080: 1080
        case .p1440: 1440
        case .p2160: 2160
        }
    }

    /// The bitrates `mode` uses at this size when none are given; nil for `.custom`, which has no table.
    ///
    /// The 360p to 1080p rows are Alibaba's (the values its push SDK demo shows for each mode; its guide
    /// points to the same table). Alibaba stops at 1080p: the 1440p and 2160p rows are ours, the 1080p row
    /// grown as the pixel count to the power 0.84 (x1.6 for 1440p's 1.78 times the pixels, x3.2 for
    /// 2160p's 4 times) and rounded to 500 kbps, since bitrate need grows slower than pixel count.
    public func bitratesKbps(for mode: QualityMode) -> (target: Int, min: Int, initial: Int)? {
        switch mode {
        case .resolutionFirst: resolutionFirstBitratesKbps
        case .fluencyFirst: fluencyFirstBitratesKbps
        case .custom: nil
        }
    }

    var resolutionFirstBitratesKbps: (target: Int, min: Int, initial: Int) {
        switch self {
        case .p360: (target: 1000, min: 300, initial: 600)
        case .p540: (target: 1400, min: 600, initial: 1000)
        case .p720: (target: 2000, min: 600, initial: 1500)
        case .p1080: (target: 2500, min: 1200, initial: 1800)
        case .p1440: (target: 4000, min: 2000, initial: 3000)  // extrapolated, see above
        case .p2160: (target: 8000, min: 4000, initial: 6000)  // extrapolated, see above
        }
    }

    var fluencyFirstBitratesKbps: (target: Int, min: Int, initial: Int) {
        switch self {
        case .p360: (target: 600, min: 200, initial: 400)
        case .p540: (target: 1000, min: 300, initial: 800)
        case .p720: (target: 1200, min: 300, initial: 1000)
        case .p1080: (target: 2200, min: 1200, initial: 1500)
        case .p1440: (target: 3500, min: 2000, initial: 2500)  // extrapolated, see above
        case .p2160: (target: 7000, min: 4000, initial: 5000)  // extrapolated, see above
        }
    }
}

/// The size of the video that is sent: a preset, or an exact size.
/// Written `1080p` or `1280x720` on the command line and in JSON.
public enum VideoResolution: Sendable, Hashable, Codable, CustomStringConvertible {
    case preset(ResolutionPreset)
    /// An exact size: both sides even (4:2:0 chroma), 160...7680 wide and 90...4320 high.
    case size(width: Int, height: Int)

    public static let widthRange = 160...7680
    public static let heightRange = 90...4320

    /// Reads `1080p` (any preset, any case) or `WIDTHxHEIGHT`, and checks an exact size.
    public init(parsing text: String) throws(LivePushConfigError) {
        let lowered = text.lowercased()
        if let preset = ResolutionPreset(rawValue: lowered) {
            self = .preset(preset)
            return
        }
        let sides = lowered.split(separator: "x", omittingEmptySubsequences: false)
        guard sides.count == 2, let width = Self.decimal(sides[0]), let height = Self.decimal(sides[1]) else {
            throw .unreadableResolution(text)
        }
        self = .size(width: width, height: height)
        try check()
    }

    public var width: Int {
        switch self {
        case .preset(let preset): preset.width
        case .size(let width, _): width
        }
    }

    public var height: Int {
        switch self {
        case .preset(let preset): preset.height
        case .size(_, let height): height
        }
    }

    /// `1080p` or `1280x720`: what `init(parsing:)` reads back.
    public var description: String {
        switch self {
        case .preset(let preset): preset.rawValue
        case .size(let width, let height): "\(width)x\(height)"
        }
    }

    /// The preset itself, or for an exact size the preset whose pixel count is nearest (the smaller on a tie).
    public var nearestPreset: ResolutionPreset {
        if case .preset(let preset) = self { return preset }
        let pixels = width * height
        return ResolutionPreset.allCases.min { a, b in
            abs(a.width * a.height - pixels) < abs(b.width * b.height - pixels)
        } ?? .p1080
    }

    /// Throws when an exact size is out of range or has an odd side; presets are always valid.
    func check() throws(LivePushConfigError) {
        guard case .size(let width, let height) = self else { return }
        guard Self.widthRange.contains(width), Self.heightRange.contains(height) else {
            throw .resolutionOutOfRange(width: width, height: height)
        }
        guard width % 2 == 0, height % 2 == 0 else { throw .oddResolution(width: width, height: height) }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try VideoResolution(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.reason)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Only ASCII digits, so that `+640` and `-640` are not sizes.
    private static func decimal(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }
}

// MARK: - Quality mode

/// How the video bitrates are chosen, after Alibaba's quality modes.
public enum QualityMode: String, CaseIterable, Sendable, Codable {
    /// Keep the picture sharp: higher bitrates from the table for the resolution.
    case resolutionFirst = "resolution-first"
    /// Keep the motion smooth on a weak network: lower bitrates from the table for the resolution.
    case fluencyFirst = "fluency-first"
    /// The target, min and initial bitrates are given, all three.
    case custom

    /// Reads `resolution-first`, `fluency-first` or `custom` (any case).
    public init(parsing text: String) throws(LivePushConfigError) {
        guard let mode = QualityMode(rawValue: text.lowercased()) else {
            throw .unknownName(.qualityMode, value: text, allowed: Self.allCases.map(\.rawValue))
        }
        self = mode
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try QualityMode(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.reason)
        }
    }
}

// MARK: - The configuration

/// Everything a broadcast is set up with. Build one (every field has a default), then call `validated()`.
///
/// Bitrates: with `.resolutionFirst` or `.fluencyFirst`, a bitrate left nil comes from that mode's table
/// for the resolution (`ResolutionPreset.bitratesKbps(for:)`) and one that is given replaces the table's;
/// with `.custom`, all three must be given. Either way min <= initial <= target. With `autoBitrate` the
/// sender moves between min and target as the network allows, starting at initial; without it the video
/// stays at the initial bitrate.
public struct LivePushConfig: Sendable, Equatable, Codable {
    /// The size of the video sent; the screen is scaled into it as `scaleMode` says.
    public var resolution: VideoResolution
    /// Frames per second sent, 1...60; a static screen repeats its last frame.
    public var fps: Int
    /// Seconds between keyframes, 1...10. Longer saves bitrate but makes viewers wait longer to start.
    public var gopSeconds: Int
    /// How the bitrates are chosen.
    public var qualityMode: QualityMode
    /// The bitrate the sender aims for on a good network, 100...50000 kbps.
    public var targetVideoBitrateKbps: Int?
    /// The lowest bitrate the sender goes down to on a weak network, 100...50000 kbps.
    public var minVideoBitrateKbps: Int?
    /// The bitrate a broadcast starts at, 100...50000 kbps.
    public var initialVideoBitrateKbps: Int?
    /// The H.264 encoder in libavcodec.
    public var encoder: H264EncoderName
    /// Audio sample rate sent: 44100 or 48000 Hz.
    public var audioSampleRateHz: Int
    /// Audio channels sent: 1 (mono) or 2 (stereo).
    public var audioChannels: Int
    /// AAC bitrate, 32...320 kbps.
    public var audioBitrateKbps: Int
    /// How a screen of another shape goes into `resolution`: fit with black bars, fill (stretch), or crop.
    public var scaleMode: ScaleMode
    /// The first wait before reconnecting after the server is lost, 1000...60000 ms; each failed
    /// attempt doubles it, up to 30 s (`ReconnectSchedule`).
    public var connectRetryIntervalMs: Int
    /// The most reconnection attempts in one outage, 0...1000 (0: report the loss at once); nil
    /// (the default): no count, `connectRetryForMs` alone decides.
    public var connectRetryCount: Int?
    /// How long one outage is retried before the push gives up, ms (default 5 minutes); 0: for ever.
    public var connectRetryForMs = 300_000
    /// Whether the video bitrate follows the network between min and target.
    public var autoBitrate: Bool
    /// Adaptive resolution (off by default, as in the reference): with the bitrate at its minimum
    /// and the network still congested, the encoded size steps down (1080p, 720p, 540p, 360p) and
    /// back up when the network recovers (`ResolutionController`, docs/guide.md).
    public var enableAutoResolution = false
    /// A PNG or JPEG shown instead of the screen while paused or while the capture helper is
    /// gone (nil: the last picture, dimmed, with a notice).
    public var pauseImagePath: String?
    /// A PNG or JPEG shown instead of the screen while the network carries less than the minimum
    /// bitrate (nil: the last picture, dimmed, with a notice).
    public var networkPoorImagePath: String?
    /// How long the network must carry less than the minimum bitrate before the poor-network
    /// picture replaces the screen, 1000...60000 ms.
    public var networkPoorAfterMs: Int
    /// rtmps://: a PEM file of CA certificates trusted besides the system's store (a private
    /// server's CA). Verification itself cannot be turned off.
    public var caFile: String?
    /// A file of push URLs, one a line, readable by its owner only (the CLI reads it; keys stay
    /// off the command line).
    public var urlFile: String?
    /// Watermarks drawn on the stream from the start (`LivePusher.addWatermark` adds more live).
    public var watermarks: [WatermarkFile] = []
    /// The stream mirrored left to right (the preview too); `LivePusher.setPushMirror` changes it live.
    public var pushMirror = false
    /// x264's preset (speed against quality), ultrafast...medium (LivePushConfigEncoding.swift).
    public var preset: X264Preset = .veryfast
    /// The H.264 profile; nil: the encoder's own choice (high for libx264).
    public var profile: H264Profile?
    /// x264's tuning; zerolatency (the default) keeps frames from waiting in the encoder.
    public var tune: X264Tune = .zerolatency
    /// Encoder threads, 0...64; 0 lets the encoder choose.
    public var encoderThreads: Int = 0
    /// A local recording's own encode (`crf=N[,preset=P]`); nil: the recording is the live encode.
    public var recordingQuality: RecordingQuality?
    /// Recordings get an audio track per source (microphone, desktop audio, music) beside the mix
    /// (`SourceTracks`): each source is encoded on its own from the start of capture, so it is set
    /// before `startScreenCapture`. MKV and MP4 only (FLV holds one audio track).
    public var recordTracks = false

    public static let fpsRange = 1...60
    public static let gopSecondsRange = 1...10
    public static let videoBitrateKbpsRange = 100...50000
    public static let audioSampleRatesHz = [44100, 48000]
    public static let audioChannelCounts = [1, 2]
    public static let audioBitrateKbpsRange = 32...320
    public static let connectRetryIntervalMsRange = 1000...60000
    public static let connectRetryCountRange = 0...1000
    /// 1 s to 7 days, or 0 (for ever).
    public static let connectRetryForMsRange = 1000...604_800_000
    public static let networkPoorAfterMsRange = 1000...60000

    /// Broadcasting a desktop screen: 1080p, 30 fps, 2 s GOP, resolution-first bitrates with auto bitrate,
    /// libx264, 48 kHz stereo AAC at 128 kbps, fit, reconnection for 5 minutes (2 s, then doubling to 30 s).
    public static let screenDefault = LivePushConfig()

    public init(
        resolution: VideoResolution = .preset(.p1080),
        fps: Int = 30,
        gopSeconds: Int = 2,
        qualityMode: QualityMode = .resolutionFirst,
        targetVideoBitrateKbps: Int? = nil,
        minVideoBitrateKbps: Int? = nil,
        initialVideoBitrateKbps: Int? = nil,
        encoder: H264EncoderName = .libx264,
        audioSampleRateHz: Int = 48000,
        audioChannels: Int = 2,
        audioBitrateKbps: Int = 128,
        scaleMode: ScaleMode = .fit,
        connectRetryIntervalMs: Int = 2000,
        connectRetryCount: Int? = nil,
        autoBitrate: Bool = true,
        pauseImagePath: String? = nil,
        networkPoorImagePath: String? = nil,
        networkPoorAfterMs: Int = 5000,
        caFile: String? = nil,
        urlFile: String? = nil
    ) {
        self.resolution = resolution
        self.fps = fps
        self.gopSeconds = gopSeconds
        self.qualityMode = qualityMode
        self.targetVideoBitrateKbps = targetVideoBitrateKbps
        self.minVideoBitrateKbps = minVideoBitrateKbps
        self.initialVideoBitrateKbps = initialVideoBitrateKbps
        self.encoder = encoder
        self.audioSampleRateHz = audioSampleRateHz
        self.audioChannels = audioChannels
        self.audioBitrateKbps = audioBitrateKbps
        self.scaleMode = scaleMode
        self.connectRetryIntervalMs = connectRetryIntervalMs
        self.connectRetryCount = connectRetryCount
        self.autoBitrate = autoBitrate
        self.pauseImagePath = pauseImagePath
        self.networkPoorImagePath = networkPoorImagePath
        self.networkPoorAfterMs = networkPoorAfterMs
        self.caFile = caFile
        self.urlFile = urlFile
    }

    public var videoWidth: Int { resolution.width }
    public var videoHeight: Int { resolution.height }

    /// The bitrates the encoder and sender use: each one given, else the quality mode's table row for the
    /// resolution (the nearest preset by pixel count for an exact size). A custom config missing some
    /// (which `validated()` refuses) falls back to the resolution-first row.
    public var effectiveBitratesKbps: (target: Int, min: Int, initial: Int) {
        let preset = resolution.nearestPreset
        let row = qualityMode == .fluencyFirst ? preset.fluencyFirstBitratesKbps : preset.resolutionFirstBitratesKbps
        return (target: targetVideoBitrateKbps ?? row.target,
                min: minVideoBitrateKbps ?? row.min,
                initial: initialVideoBitrateKbps ?? row.initial)
    }

    /// Returns this configuration when every field is within its range and the bitrates are consistent;
    /// otherwise throws the first problem, in field order.
    public func validated() throws(LivePushConfigError) -> LivePushConfig {
        try resolution.check()
        try Self.check(.fps, fps, in: Self.fpsRange)
        try Self.check(.gopSeconds, gopSeconds, in: Self.gopSecondsRange)
        let givenBitrates: [(Field, Int?)] = [
            (.targetVideoBitrateKbps, targetVideoBitrateKbps),
            (.minVideoBitrateKbps, minVideoBitrateKbps),
            (.initialVideoBitrateKbps, initialVideoBitrateKbps),
        ]
        if qualityMode == .custom {
            let missing = givenBitrates.filter { $0.1 == nil }.map(\.0)
            if !missing.isEmpty { throw .customBitratesMissing(missing) }
        }
        for (field, value) in givenBitrates {
            if let value { try Self.check(field, value, in: Self.videoBitrateKbpsRange) }
        }
        let bitrates = effectiveBitratesKbps
        if bitrates.min > bitrates.target {
            throw .minBitrateAboveTarget(minKbps: bitrates.min, targetKbps: bitrates.target,
                                         quality: qualityMode, preset: resolution.nearestPreset)
        }
        if bitrates.initial < bitrates.min || bitrates.initial > bitrates.target {
            throw .initialBitrateOutside(initialKbps: bitrates.initial, minKbps: bitrates.min,
                                         targetKbps: bitrates.target, quality: qualityMode,
                                         preset: resolution.nearestPreset)
        }
        try Self.check(.audioSampleRateHz, audioSampleRateHz, in: Self.audioSampleRatesHz)
        try Self.check(.audioChannels, audioChannels, in: Self.audioChannelCounts)
        try Self.check(.audioBitrateKbps, audioBitrateKbps, in: Self.audioBitrateKbpsRange)
        try Self.check(.connectRetryIntervalMs, connectRetryIntervalMs, in: Self.connectRetryIntervalMsRange)
        if let connectRetryCount { try Self.check(.connectRetryCount, connectRetryCount, in: Self.connectRetryCountRange) }
        if connectRetryForMs != 0 { try Self.check(.connectRetryForMs, connectRetryForMs, in: Self.connectRetryForMsRange) }
        for watermark in watermarks {
            if let problem = watermark.position.problem { throw .invalidWatermark(watermark.path, reason: problem) }
        }
        try Self.check(.networkPoorAfterMs, networkPoorAfterMs, in: Self.networkPoorAfterMsRange)
        try Self.check(.encoderThreads, encoderThreads, in: H264EncoderTuning.threadsRange)
        try recordingQuality?.check()
        if let caFile, access(caFile, R_OK) != 0 {
            throw .unreadableFile(.caFile, path: caFile,
                                  reason: access(caFile, F_OK) == 0 ? "cannot be read" : "does not exist")
        }
        return self
    }

    /// Reads `libx264`, `libopenh264`, `h264_vaapi` or `h264_nvenc` (also `vaapi` and `nvenc`; any case).
    public static func encoder(named text: String) throws(LivePushConfigError) -> H264EncoderName {
        let lowered = text.lowercased()
        if let encoder = H264EncoderName(rawValue: lowered) { return encoder }
        if let encoder = H264EncoderName.allCases.first(where: { "\($0)" == lowered }) { return encoder }
        throw .unknownName(.encoder, value: text, allowed: H264EncoderName.allCases.map(\.rawValue))
    }

    /// Reads `fit`, `fill` or `crop` (any case).
    public static func scaleMode(named text: String) throws(LivePushConfigError) -> ScaleMode {
        guard let mode = ScaleMode(rawValue: text.lowercased()) else {
            throw .unknownName(.scaleMode, value: text, allowed: ScaleMode.allCases.map(\.rawValue))
        }
        return mode
    }

    private static func check(_ field: Field, _ value: Int, in range: ClosedRange<Int>) throws(LivePushConfigError) {
        if !range.contains(value) { throw .outOfRange(field, value: value, allowed: range) }
    }

    private static func check(_ field: Field, _ value: Int, in allowed: [Int]) throws(LivePushConfigError) {
        if !allowed.contains(value) { throw .notAllowed(field, value: value, allowed: allowed) }
    }
}

// MARK: - JSON

extension LivePushConfig {
    /// Reads a JSON configuration: an object whose keys are the property names, every one optional
    /// (a missing key or `null` keeps the default). Unknown keys and values of the wrong type are refused
    /// with the key named. Does not range-check: call `validated()` once every source has been applied.
    public static func decodeJSON(_ data: Data) throws(LivePushConfigError) -> LivePushConfig {
        do {
            return try JSONDecoder().decode(LivePushConfig.self, from: data)
        } catch let error as LivePushConfigError {
            throw error
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.isEmpty {
            throw .json("not valid JSON: \(syntaxProblem(in: data) ?? context.debugDescription)")
        } catch let error as DecodingError {
            throw .json(Self.describe(error))
        } catch {
            throw .json("\(error)")
        }
    }

    public init(from decoder: any Decoder) throws {
        let keys: KeyedDecodingContainer<AnyKey>
        do {
            keys = try decoder.container(keyedBy: AnyKey.self)
        } catch {
            throw LivePushConfigError.json("the configuration must be a JSON object of keys and values")
        }
        let unknown = keys.allKeys.map(\.stringValue).filter { Field(stringValue: $0) == nil }.sorted()
        if !unknown.isEmpty {
            let list = unknown.map { "'\($0)'" }.joined(separator: ", ")
            let known = Field.allCases.map(\.jsonKey).joined(separator: ", ")
            throw LivePushConfigError.json(
                "unknown key\(unknown.count == 1 ? "" : "s") \(list); the keys are: \(known)")
        }
        let container = try decoder.container(keyedBy: Field.self)
        let defaults = LivePushConfig()
        func value<T: Decodable>(_ type: T.Type, _ key: Field, expected: String) throws -> T? {
            do {
                return try container.decodeIfPresent(type, forKey: key)
            } catch {
                throw LivePushConfigError.json("key '\(key.jsonKey)': expected \(expected)")
            }
        }
        func name<T>(_ key: Field, _ parse: (String) throws(LivePushConfigError) -> T) throws -> T? {
            guard let text = try value(String.self, key, expected: "a string") else { return nil }
            do {
                return try parse(text)
            } catch {
                throw LivePushConfigError.json("key '\(key.jsonKey)': \(error.reason)")
            }
        }
        let number = "a whole number"
        self.init(
            resolution: try name(.resolution) { text throws(LivePushConfigError) in
                try VideoResolution(parsing: text)
            } ?? defaults.resolution,
            fps: try value(Int.self, .fps, expected: number) ?? defaults.fps,
            gopSeconds: try value(Int.self, .gopSeconds, expected: number) ?? defaults.gopSeconds,
            qualityMode: try name(.qualityMode) { text throws(LivePushConfigError) in
                try QualityMode(parsing: text)
            } ?? defaults.qualityMode,
            targetVideoBitrateKbps: try value(Int.self, .targetVideoBitrateKbps, expected: number),
            minVideoBitrateKbps: try value(Int.self, .minVideoBitrateKbps, expected: number),
            initialVideoBitrateKbps: try value(Int.self, .initialVideoBitrateKbps, expected: number),
            encoder: try name(.encoder, Self.encoder(named:)) ?? defaults.encoder,
            audioSampleRateHz: try value(Int.self, .audioSampleRateHz, expected: number) ?? defaults.audioSampleRateHz,
            audioChannels: try value(Int.self, .audioChannels, expected: number) ?? defaults.audioChannels,
            audioBitrateKbps: try value(Int.self, .audioBitrateKbps, expected: number) ?? defaults.audioBitrateKbps,
            scaleMode: try name(.scaleMode, Self.scaleMode(named:)) ?? defaults.scaleMode,
            connectRetryIntervalMs: try value(Int.self, .connectRetryIntervalMs, expected: number)
                ?? defaults.connectRetryIntervalMs,
            connectRetryCount: try value(Int.self, .connectRetryCount, expected: number) ?? defaults.connectRetryCount,
            autoBitrate: try value(Bool.self, .autoBitrate, expected: "true or false") ?? defaults.autoBitrate,
            pauseImagePath: try value(String.self, .pauseImagePath, expected: "a file path"),
            networkPoorImagePath: try value(String.self, .networkPoorImagePath, expected: "a file path"),
            networkPoorAfterMs: try value(Int.self, .networkPoorAfterMs, expected: number) ?? defaults.networkPoorAfterMs,
            caFile: try value(String.self, .caFile, expected: "a file path"),
            urlFile: try value(String.self, .urlFile, expected: "a file path"))
        watermarks = try value([WatermarkFile].self, .watermarks,
                               expected: "a list of {\"path\", \"x\", \"y\", \"width\", \"opacity\"}") ?? []
        pushMirror = try value(Bool.self, .pushMirror, expected: "true or false") ?? false
        enableAutoResolution = try value(Bool.self, .enableAutoResolution, expected: "true or false") ?? false
        recordTracks = try value(Bool.self, .recordTracks, expected: "true or false") ?? false
        connectRetryForMs = try value(Int.self, .connectRetryForMs, expected: "a whole number of ms (0: for ever)")
            ?? defaults.connectRetryForMs
        try decodeEncoding(container)
    }

    /// Writes every field under its property name; bitrates that are nil are left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Field.self)
        try container.encode(resolution, forKey: .resolution)
        try container.encode(fps, forKey: .fps)
        try container.encode(gopSeconds, forKey: .gopSeconds)
        try container.encode(qualityMode, forKey: .qualityMode)
        try container.encodeIfPresent(targetVideoBitrateKbps, forKey: .targetVideoBitrateKbps)
        try container.encodeIfPresent(minVideoBitrateKbps, forKey: .minVideoBitrateKbps)
        try container.encodeIfPresent(initialVideoBitrateKbps, forKey: .initialVideoBitrateKbps)
        try container.encode(self.encoder.rawValue, forKey: .encoder)
        try container.encode(audioSampleRateHz, forKey: .audioSampleRateHz)
        try container.encode(audioChannels, forKey: .audioChannels)
        try container.encode(audioBitrateKbps, forKey: .audioBitrateKbps)
        try container.encode(scaleMode.rawValue, forKey: .scaleMode)
        try container.encode(connectRetryIntervalMs, forKey: .connectRetryIntervalMs)
        try container.encodeIfPresent(connectRetryCount, forKey: .connectRetryCount)
        try container.encode(connectRetryForMs, forKey: .connectRetryForMs)
        try container.encode(autoBitrate, forKey: .autoBitrate)
        try container.encodeIfPresent(pauseImagePath, forKey: .pauseImagePath)
        try container.encodeIfPresent(networkPoorImagePath, forKey: .networkPoorImagePath)
        try container.encode(networkPoorAfterMs, forKey: .networkPoorAfterMs)
        try container.encodeIfPresent(caFile, forKey: .caFile)
        try container.encodeIfPresent(urlFile, forKey: .urlFile)
        if !watermarks.isEmpty { try container.encode(watermarks, forKey: .watermarks) }
        if pushMirror { try container.encode(pushMirror, forKey: .pushMirror) }
        if enableAutoResolution { try container.encode(true, forKey: .enableAutoResolution) }  // off: left out, as before
        if recordTracks { try container.encode(true, forKey: .recordTracks) }
        try encodeEncoding(into: &container)
    }

    /// What JSONSerialization says is wrong with `data` (JSONDecoder does not say), with the line and
    /// column instead of the byte offset it gives: `Invalid value around line 3, column 9`.
    private static func syntaxProblem(in data: Data) -> String? {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return nil
        } catch {
            guard let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String else { return nil }
            guard let range = detail.range(of: "around character "),
                  let offset = Int(detail[range.upperBound...].prefix(while: \.isNumber)), offset <= data.count
            else { return detail }
            let before = [UInt8](data).prefix(offset)
            let line = before.count(where: { $0 == UInt8(ascii: "\n") }) + 1
            let column = offset - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
            return detail[..<range.lowerBound] + "around line \(line), column \(column)"
        }
    }

    /// A DecodingError from some other path, as `key 'a.b': what was wrong`.
    private static func describe(_ error: DecodingError) -> String {
        let context: DecodingError.Context
        switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
            context = c
        @unknown default:
            return "\(error)"
        }
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return path.isEmpty ? context.debugDescription : "key '\(path)': \(context.debugDescription)"
    }

    /// Any key, to find the ones that are not fields.
    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
