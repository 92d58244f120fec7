import CommandLineSupport
import LivePush

/// The sound options of `livepush screen|push|record`: background music, noise suppression,
/// automatic gain, voice activity, ear monitoring (docs/guide.md, "Sound").
struct SoundChoice {
    var bgmPath: String?
    var bgmLoop = false
    var bgmVolumePercent: Int?
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
        if let text = parsed.value("bgm-volume") {
            guard let percent = Int(text), (0...400).contains(percent) else {
                throw .invalidValue(option: "bgm-volume", value: text, reason: "use a percentage from 0 to 400")
            }
            bgmVolumePercent = percent
        }
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
