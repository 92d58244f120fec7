import Foundation
import LivePush

/// The SDK's values as JSON objects, the same in answers, events and the dashboard.
public enum ControlJSON {
    public static func name(of status: PushStatus) -> String {
        switch status {
        case .disconnected: "disconnected"
        case .connecting: "connecting"
        case .connectSuccess: "connectSuccess"
        case .reconnecting: "reconnecting"
        }
    }

    public static func object(_ figures: LivePusherStatistics) -> [String: Any] {
        [
            "appCpu": figures.appCpu, "systemCpu": figures.systemCpu, "width": figures.width, "height": figures.height,
            "fps": figures.fps, "videoBitrateKbps": figures.videoBitrateKbps, "audioBitrateKbps": figures.audioBitrateKbps,
            "encoderBitrateKbps": figures.encoderBitrateKbps, "sendBitrateKbps": figures.sendBitrateKbps,
            "framesSkipped": figures.framesSkipped, "framesRepeated": figures.framesRepeated,
            "framesDropped": figures.framesDropped, "recordingBytes": Int(figures.recordingBytes),
            "replayBufferBytes": Int(figures.replayBufferBytes),
            "audioSampleRateHz": figures.audioSampleRateHz, "audioChannels": figures.audioChannels,
            "delayMs": figures.delayMs, "jitterMs": figures.jitterMs, "queueMs": figures.queueMs,
            "queueDelayMs": figures.queueDelayMs, "queueJitterMs": figures.queueJitterMs,
            "bytesSent": figures.bytesSent, "micLevel": figures.micLevel, "desktopLevel": figures.desktopLevel,
            "videoProcessMs": figures.videoProcessMs, "sourceWidth": figures.sourceWidth,
            "sourceHeight": figures.sourceHeight, "keyframesForced": figures.keyframesForced,
            "videoSkippedFrames": figures.videoSkippedFrames, "audioGapMs": figures.audioGapMs,
        ]
    }

    public static func object(_ destination: LivePushDestinationStatus) -> [String: Any] {
        var object: [String: Any] = [
            "index": destination.index, "url": destination.url, "status": name(of: destination.status),
            "sendBitrateKbps": destination.sendBitrateKbps, "queueMs": destination.queueMs,
            "delayMs": destination.delayMs, "framesDropped": destination.framesDropped,
            "bytesSent": destination.bytesSent,
            "jitterMs": destination.jitterMs, "queueDelayMs": destination.queueDelayMs,
            "keyFingerprint": destination.keyFingerprint,
        ]
        if let label = destination.label { object["label"] = label }
        return object
    }

    /// A sound source as ctl names it: mic, desktop, music, external.
    public static func name(of source: AudioSourceKind) -> String {
        switch source {
        case .microphone: "mic"
        case .desktop: "desktop"
        case .music: "music"
        case .external: "external"
        }
    }

    public static func object(_ settings: LivePusherSettings) -> [String: Any] {
        [
            "pushMirror": settings.pushMirror, "previewMirror": settings.previewMirror, "previewOpen": settings.previewOpen,
            "bgmLoop": settings.bgmLoop, "bgmPlaying": settings.bgmPlaying, "denoise": settings.denoise.rawValue,
            "agc": settings.automaticGain, "voiceActivity": settings.voiceActivity, "earMonitor": settings.earMonitor,
            "earMonitorSink": settings.earMonitorSink ?? NSNull(),
        ]
    }

    public static func object(_ status: LivePusherStatus) -> [String: Any] {
        var volumes: [String: Any] = [:]
        for (source, percent) in status.volumePercent { volumes[name(of: source)] = percent }
        return [
            "state": status.state.rawValue, "capturing": status.capturing, "pushing": status.pushing, "paused": status.paused,
            "placeholder": status.placeholder ?? NSNull(), "muted": status.muted,
            "mutedSources": status.mutedSources.map { name(of: $0) },
            "volumePercent": volumes,
            "targetVideoBitrateKbps": status.targetVideoBitrateKbps, "minVideoBitrateKbps": status.minVideoBitrateKbps,
            "currentVideoBitrateKbps": status.currentVideoBitrateKbps, "autoBitrate": status.autoBitrate,
            "recordingPath": status.recordingPath ?? NSNull(), "recordingPaused": status.recordingPaused,
            "replayBufferSeconds": status.replayBufferSeconds ?? NSNull(),
            "settings": object(status.settings),
            "destinations": status.destinations.map(object), "statistics": object(status.statistics),
        ]
    }
}
