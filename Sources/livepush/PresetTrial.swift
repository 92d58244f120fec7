import CommandLineSupport
import Foundation
import LivePush
import Media

/// `livepush doctor`'s trial encode: two seconds of hard content (BenchContent.scroll: every
/// macroblock moves every frame) through libx264 at the configured size, rate, bitrate and preset,
/// as fast as it goes. A preset is sustainable when the encode takes at most 75 % of real time (the
/// rest is for capture, conversion, audio and sending). From the configured preset it walks to
/// slower presets while they are sustainable, or to faster ones until one is.
enum PresetTrial {
    static let options: [OptionSpec] = [
        .value("config", valueName: "FILE", help: "Trial-encode at the size, rate and preset of this configuration file."),
        .value(LivePushConfig.Field.resolution.optionName, valueName: "1080p|WxH",
               help: "Trial-encode at this size (default 1080p, or the file's)."),
        .value(LivePushConfig.Field.fps.optionName, valueName: "N", help: "Trial-encode at this rate (default 30)."),
        .value(LivePushConfig.Field.preset.optionName, valueName: X264Preset.allCases.map(\.rawValue).joined(separator: "|"),
               help: "The preset to try first (default veryfast, or the file's)."),
    ]

    static let sustainableShare = 0.75
    static let trialSeconds = 2.0

    /// Prints the trial's lines; 1 when the configuration is wrong or libx264 cannot be opened.
    /// What a doctor check found.
    enum Finding { case ok, warning, failure }

    static func check(_ parsed: ParsedArguments) -> Finding {
        let config: LivePushConfig
        do {
            let file = try parsed.value("config").map(BroadcastFile.load)?.encoding
            config = try ConfigOptions.config(from: parsed, file: file)
        } catch {
            print("FAIL x264 preset trial: \(error)")
            return .failure
        }
        guard CodecLibrary.hasEncoder(named: H264EncoderName.libx264.rawValue) else { return .ok }
        let size = "\(config.videoWidth)x\(config.videoHeight) \(config.fps) fps"
        let content: BenchContent
        do {
            content = try BenchContent(.scroll, width: config.videoWidth, height: config.videoHeight)
        } catch {
            print("FAIL x264 preset trial at \(size): \(error)")
            return .failure
        }
        let presets = X264Preset.allCases
        var index = presets.firstIndex(of: config.preset) ?? 2
        var results: [X264Preset: Double] = [:]
        func share(_ preset: X264Preset) -> Double? {
            if let known = results[preset] { return known }
            var settings = H264EncoderSettings(width: config.videoWidth, height: config.videoHeight, fps: config.fps,
                                               bitrateKbps: config.effectiveBitratesKbps.target)
            settings.gopSeconds = config.gopSeconds
            settings.tuning = config.encoderTuning
            settings.tuning.preset = preset
            let frames = Int(trialSeconds * Double(config.fps))
            guard let result = try? EncodeTrial.run(content, settings: settings, frames: frames, paced: false,
                                                    wallLimitSeconds: trialSeconds) else { return nil }
            // Frames left undone (the limit was reached) count at the pace of those done.
            let needed = result.wallSeconds * Double(frames) / Double(max(1, result.frames))
            let value = needed / trialSeconds
            results[preset] = value
            print(String(format: "     x264 preset %@ at %@: 2 s of moving picture in %.2f s (%.0f %% of real time)",
                         preset.rawValue, size, needed, 100 * value))
            return value
        }
        guard let first = share(presets[index]) else {
            print("FAIL x264 preset trial at \(size): libx264 could not be opened at these settings")
            return .failure
        }
        if first <= sustainableShare {
            while index + 1 < presets.count, let next = share(presets[index + 1]), next <= sustainableShare { index += 1 }
            print("ok   x264 preset \(config.preset.rawValue) keeps up at \(size); the slowest that does here: "
                + "\(presets[index].rawValue)")
            return .ok
        }
        while index > 0 {
            index -= 1
            if let next = share(presets[index]), next <= sustainableShare {
                print("WARN x264 preset \(config.preset.rawValue) cannot keep up at \(size) on this machine now; "
                    + "\(presets[index].rawValue) does: use --preset \(presets[index].rawValue), or a lower --resolution or --fps")
                return .warning
            }
        }
        // A warning, not a failed check: a machine busy with something else right now may well keep
        // up later; the line says what to change if it does not.
        print("WARN x264 preset trial: not even ultrafast keeps up at \(size) on this machine now; "
            + "use a lower --resolution or --fps, or a hardware encoder (--encoder)")
        return .warning
    }
}
