extension LivePushWarningCode {
    /// Adaptive resolution changed the encoded size (`extraInfo`: "width", "height"; issue 16b's range).
    public static let resolutionChanged: Int32 = 1540
}

extension LivePusher {
    // MARK: Adaptive resolution

    /// With `enableAutoResolution`, every size change the pipeline makes (decided by the
    /// statistics tick, `StatisticsTick`) is a warning naming the new size.
    func watchAutoResolution(_ pipeline: VideoPipeline) {
        guard config.enableAutoResolution else { return }
        pipeline.onSizeChanged = { [weak self] width, height in
            self?.notify { $0.onWarning(code: LivePushWarningCode.resolutionChanged,
                                        message: "adaptive resolution: the video is now encoded at \(width)x\(height)",
                                        extraInfo: ["width": String(width), "height": String(height)]) }
        }
    }
}
