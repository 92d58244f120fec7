// The command-line face of LivePushConfig: one long option per field, plus --config FILE for a JSON file.
import CommandLineSupport
import Foundation
import LivePush
import Media

/// The options that set a `LivePushConfig`, for the commands that broadcast or record.
/// The defaults apply first, then the `--config` file, then each option given (so options override the file).
enum ConfigOptions {
    typealias Field = LivePushConfig.Field

    static let specs: [OptionSpec] = [
        .value("config", valueName: "FILE",
               help: "Read the configuration (encoding, destinations, recording, capture, audio, sound, preview, log "
                   + "level) from a JSON file; options given too override it."),
        .value(Field.resolution.optionName, valueName: "1080p|WxH",
               help: "Video size: 360p, 540p, 720p, 1080p, 1440p, 2160p or e.g. 1280x720 (default 1080p)."),
        .value(Field.fps.optionName, valueName: "N", help: "Frames per second, 1 to 60 (default 30)."),
        .value(Field.gopSeconds.optionName, valueName: "SECONDS",
               help: "Seconds between keyframes, 1 to 10 (default 2)."),
        .value(Field.qualityMode.optionName, valueName: "resolution-first|fluency-first|custom",
               help: "resolution-first (default), fluency-first or custom (needs the three bitrates)."),
        .value(Field.targetVideoBitrateKbps.optionName, valueName: "KBPS",
               help: "Target video bitrate, 100 to 50000 (default: from the quality mode's table)."),
        .value(Field.minVideoBitrateKbps.optionName, valueName: "KBPS",
               help: "Lowest video bitrate on a weak network (default: from the table)."),
        .value(Field.initialVideoBitrateKbps.optionName, valueName: "KBPS",
               help: "Video bitrate at the start (default: from the table)."),
        .value(Field.encoder.optionName, valueName: "libx264|libopenh264|h264_vaapi|h264_nvenc",
               help: "H.264 encoder: libx264 (default), libopenh264, h264_vaapi or h264_nvenc."),
        .value(Field.preset.optionName, valueName: X264Preset.allCases.map(\.rawValue).joined(separator: "|"),
               help: "x264 preset: faster ones cost less CPU, slower ones look better (default veryfast; "
                   + "livepush doctor says which this machine can keep up)."),
        .value(Field.profile.optionName, valueName: "baseline|main|high",
               help: "H.264 profile (default: the encoder's choice, high for libx264); baseline for old decoders."),
        .value(Field.tune.optionName, valueName: X264Tune.allCases.map(\.rawValue).joined(separator: "|"),
               help: "x264 tune (default zerolatency: no frame waits in the encoder; the others add latency)."),
        .value(Field.encoderThreads.optionName, valueName: "N",
               help: "Encoder threads, 0 to 64 (default 0: the encoder chooses)."),
        .value(Field.recordingQuality.optionName, valueName: "crf=N[,preset=P]",
               help: "Encode the recording on its own at constant quality CRF N, 0 to 51 (18-23 is usual), with "
                   + "preset P (default: --preset); without it the recording is the live stream (no extra CPU)."),
        .flag(Field.recordTracks.optionName,
              help: "Record each source in its own audio track beside the mix (microphone, desktop audio, music; "
                  + "named; players play the mix): MKV or MP4."),
        .value(Field.audioSampleRateHz.optionName, valueName: "44100|48000",
               help: "Audio sample rate: 44100 or 48000 (default)."),
        .value(Field.audioChannels.optionName, valueName: "1|2", help: "Audio channels: 1 or 2 (default)."),
        .value(Field.audioBitrateKbps.optionName, valueName: "KBPS", help: "AAC bitrate, 32 to 320 (default 128)."),
        .value(Field.scaleMode.optionName, valueName: "fit|fill|crop",
               help: "Screen into the video size: fit with black bars (default), fill (stretch) or crop."),
        .value(Field.connectRetryIntervalMs.optionName, valueName: "MS",
               help: "First wait before reconnecting, 1000 to 60000 (default 2000); it doubles after each failed "
                   + "attempt, up to 30 s."),
        .value(Field.connectRetryForMs.optionName, valueName: "DURATION|forever",
               help: "How long to keep reconnecting after the server is lost before giving up, e.g. 90s, 10m, 2h "
                   + "(default 5m), or forever."),
        .value(Field.connectRetryCount.optionName, valueName: "N",
               help: "Give up after N reconnection attempts, 0 to 1000, even within --retry-for (default: no count; "
                   + "0 gives up at the first failure)."),
        .flag(Field.autoBitrate.optionName,
              help: "Keep the video at the initial bitrate instead of following the network."),
        .value(Field.pauseImagePath.optionName, valueName: "FILE",
               help: "PNG or JPEG shown while paused or while the capture helper is gone (default: the last picture, dimmed)."),
        .value(Field.networkPoorImagePath.optionName, valueName: "FILE",
               help: "PNG or JPEG shown while the network carries less than the minimum bitrate."),
        .value(Field.networkPoorAfterMs.optionName, valueName: "MS",
               help: "How long the network must be that poor first, 1000 to 60000 (default 5000)."),
        .value(Field.caFile.optionName, valueName: "FILE",
               help: "rtmps://: also trust the CA certificates in this PEM file (a private server's CA)."),
        .value(Field.urlFile.optionName, valueName: "FILE",
               help: "Push to the URLs in FILE, one a line (chmod 600: refused if group or others can read it)."),
        .value(Field.watermarks.optionName, valueName: "FILE@X,Y,W[,OPACITY]",
               help: "Draw a PNG (alpha kept) or JPEG on the stream: X, Y, W fractions of the picture from its "
                   + "top left, the height from the image; OPACITY 0 to 1 (default 1). Repeatable."),
        .flag(Field.pushMirror.optionName, help: "Mirror the stream left to right (viewers and recordings see it mirrored)."),
        .flag(Field.enableAutoResolution.optionName,
              help: "Step the video size down (1080p, 720p, 540p, 360p) on a congested network, back up when it recovers."),
    ]

    /// The configuration that `parsed` describes, validated. Throws `ArgumentError` for a value that is not a
    /// number or a `--config` file that cannot be read, `LivePushConfigError` for one that is out of range.
    /// `file` is the encoding part of the `--config` file, when one was given (`BroadcastFile`).
    static func config(from parsed: ParsedArguments, file: LivePushConfig? = nil) throws -> LivePushConfig {
        var config = file ?? LivePushConfig.screenDefault
        if let text = parsed.value(Field.resolution.optionName) {
            config.resolution = try VideoResolution(parsing: text)
        }
        if let fps = try number(.fps, parsed) { config.fps = fps }
        if let gop = try number(.gopSeconds, parsed) { config.gopSeconds = gop }
        if let text = parsed.value(Field.qualityMode.optionName) {
            config.qualityMode = try QualityMode(parsing: text)
        }
        if let kbps = try number(.targetVideoBitrateKbps, parsed) { config.targetVideoBitrateKbps = kbps }
        if let kbps = try number(.minVideoBitrateKbps, parsed) { config.minVideoBitrateKbps = kbps }
        if let kbps = try number(.initialVideoBitrateKbps, parsed) { config.initialVideoBitrateKbps = kbps }
        if let text = parsed.value(Field.encoder.optionName) {
            config.encoder = try LivePushConfig.encoder(named: text)
        }
        if let text = parsed.value(Field.preset.optionName) { config.preset = try LivePushConfig.preset(named: text) }
        if let text = parsed.value(Field.profile.optionName) { config.profile = try LivePushConfig.profile(named: text) }
        if let text = parsed.value(Field.tune.optionName) { config.tune = try LivePushConfig.tune(named: text) }
        if let threads = try number(.encoderThreads, parsed) { config.encoderThreads = threads }
        if let text = parsed.value(Field.recordingQuality.optionName) {
            config.recordingQuality = try RecordingQuality(parsing: text)
        }
        if let hz = try number(.audioSampleRateHz, parsed) { config.audioSampleRateHz = hz }
        if let channels = try number(.audioChannels, parsed) { config.audioChannels = channels }
        if let kbps = try number(.audioBitrateKbps, parsed) { config.audioBitrateKbps = kbps }
        if let text = parsed.value(Field.scaleMode.optionName) {
            config.scaleMode = try LivePushConfig.scaleMode(named: text)
        }
        if let ms = try number(.connectRetryIntervalMs, parsed) { config.connectRetryIntervalMs = ms }
        if let count = try number(.connectRetryCount, parsed) { config.connectRetryCount = count }
        if let text = parsed.value(Field.connectRetryForMs.optionName) {
            config.connectRetryForMs = try durationMs(.connectRetryForMs, text)
        }
        if parsed.has(Field.autoBitrate.optionName) { config.autoBitrate = false }
        if let path = parsed.value(Field.pauseImagePath.optionName) { config.pauseImagePath = path }
        if let path = parsed.value(Field.networkPoorImagePath.optionName) { config.networkPoorImagePath = path }
        if let ms = try number(.networkPoorAfterMs, parsed) { config.networkPoorAfterMs = ms }
        if let path = parsed.value(Field.caFile.optionName) { config.caFile = path }
        if let path = parsed.value(Field.urlFile.optionName) { config.urlFile = path }
        for text in parsed.values[Field.watermarks.optionName] ?? [] {
            config.watermarks.append(try WatermarkFile(parsing: text))
        }
        if parsed.has(Field.pushMirror.optionName) { config.pushMirror = true }
        if parsed.has(Field.enableAutoResolution.optionName) { config.enableAutoResolution = true }
        if parsed.has(Field.recordTracks.optionName) { config.recordTracks = true }
        return try config.validated()
    }

    /// A duration as a person writes it (`forever`, `0`, `1500ms`, `90s`, `10m`, `2h`; any case), in ms
    /// (0: for ever).
    static func durationMs(_ field: Field, _ text: String) throws(ArgumentError) -> Int {
        let lowered = text.lowercased().trimmingCharacters(in: .whitespaces)
        if lowered == "forever" || lowered == "0" { return 0 }
        let units: [(String, Int)] = [("ms", 1), ("s", 1000), ("min", 60_000), ("m", 60_000), ("h", 3_600_000)]
        for (unit, scale) in units where lowered.hasSuffix(unit) {
            let number = lowered.dropLast(unit.count).trimmingCharacters(in: .whitespaces)
            if let value = Int(number), value >= 0, value <= Int.max / scale { return value * scale }
            break
        }
        throw .invalidValue(option: field.optionName, value: text,
                            reason: "expected a duration with its unit, such as 90s, 10m or 2h, or forever")
    }

    /// The option's value as a whole number, nil when the option was not given.
    private static func number(_ field: Field, _ parsed: ParsedArguments) throws(ArgumentError) -> Int? {
        guard let text = parsed.value(field.optionName) else { return nil }
        guard let value = Int(text) else {
            let unit = field.unit.map { " of \($0)" } ?? ""
            throw .invalidValue(option: field.optionName, value: text, reason: "expected a whole number\(unit)")
        }
        return value
    }
}
