import CommandLineSupport
import LivePush

/// The sound options of `livepush screen|push|record`: the mic's and the desktop audio's volume,
/// background music, noise suppression, automatic gain, voice activity, ear monitoring
/// (docs/guide.md, "Sound").
struct SoundChoice {
    var bgmPath: String?
    var bgmLoop = false
    var bgmVolumePercent: Int?
    /// `--mic-volume`, `--desktop-volume`; nil: not given (100 %).
    var micVolumePercent: Int?
    var desktopVolumePercent: Int?
    var denoise = AudioDenoiseLevel.off
    var automaticGain = false
    var voiceActivity = false
    /// The sink for ear monitoring; "" for the default one; nil: no ear monitoring.
    var earMonitorSink: String?

    init() {}

    init(_ parsed: ParsedArguments) throws(ArgumentError) {
        if let text = parsed.value("bgm") {
            var path = text
            if text.hasSuffix(",loop") {
                path = String(text.dropLast(5))
                bgmLoop = true
            }
            guard !path.isEmpty else {
                throw .invalidValue(option: "bgm", value: text, reason: "give a music file, as FILE or FILE,loop")
            }
            bgmPath = path
        }
        bgmVolumePercent = try Self.percent("bgm-volume", parsed)
        micVolumePercent = try Self.percent("mic-volume", parsed)
        desktopVolumePercent = try Self.percent("desktop-volume", parsed)
        if let text = parsed.value("denoise") {
            guard let level = AudioDenoiseLevel(rawValue: text) else {
                throw .invalidValue(option: "denoise", value: text, reason: "use off, low, medium or high")
            }
            denoise = level
        }
        automaticGain = parsed.has("agc")
        voiceActivity = parsed.has("voice-activity")
        if let sink = parsed.value("ear-monitor") { earMonitorSink = sink == "default" ? "" : sink }
    }

    /// A volume option's percentage, 0 to 400; nil when the option was not given.
    private static func percent(_ option: String, _ parsed: ParsedArguments) throws(ArgumentError) -> Int? {
        guard let text = parsed.value(option) else { return nil }
        guard let percent = Int(text), (0...400).contains(percent) else {
            throw .invalidValue(option: option, value: text, reason: "use a percentage from 0 to 400")
        }
        return percent
    }

    /// Sets the mic's and the desktop audio's volume. Called before screen capture starts: the
    /// pusher keeps them and its audio pipeline starts with them, so no sound goes out at 100 % first.
    func applyVolumes(to pusher: LivePusher) {
        if let micVolumePercent { pusher.setCaptureVolume(micVolumePercent) }
        if let desktopVolumePercent { pusher.setDesktopAudioVolume(desktopVolumePercent) }
    }

    /// Applies the choices once screen capture (and its audio pipeline) runs. Music that cannot
    /// be played is an error message from the pusher; the broadcast goes on.
    func apply(to pusher: LivePusher) {
        if let bgmVolumePercent { pusher.setBGMVolume(bgmVolumePercent) }
        if denoise != .off || automaticGain { pusher.setAudioDenoise(denoise, automaticGain: automaticGain) }
        if voiceActivity { pusher.enableVoiceActivityDetection(true) }
        if let earMonitorSink { pusher.setEarsBack(true, sink: earMonitorSink.isEmpty ? nil : earMonitorSink) }
        if let bgmPath { pusher.startBGM(path: bgmPath, loop: bgmLoop) }
    }
}
