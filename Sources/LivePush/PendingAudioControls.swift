/// The audio controls of `LivePusher`, applied to its audio pipeline whenever one runs.
struct PendingAudioControls {
    var volumesPercent: [AudioSourceKind: Int] = [:]
    var muted = false
    /// Each source's own mute switch (`setMute(_:source:)`).
    var mutedSources: [AudioSourceKind: Bool] = [:]
    var levelIntervalMs = 0

    func apply(to pipeline: AudioPipeline) {
        for (source, percent) in volumesPercent { pipeline.setVolume(percent, for: source) }
        pipeline.setMuted(muted)
        for (source, muted) in mutedSources { pipeline.setMuted(muted, source: source) }
        pipeline.setLevelInterval(ms: levelIntervalMs)
    }
}
