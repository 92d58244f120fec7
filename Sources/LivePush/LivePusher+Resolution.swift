import CaptureLink

extension LivePushWarningCode {
    /// Adaptive resolution changed the encoded size (`extraInfo`: "width", "height"; issue 16b's range).
    public static let resolutionChanged: Int32 = 1540
}

extension LivePusher {
    // MARK: Adaptive resolution

    /// With `enableAutoResolution`, a `ResolutionController` for the configured size; every size
    /// change is a warning naming the new size.
    func startAutoResolution(_ pipeline: VideoPipeline) {
        guard config.enableAutoResolution else { return }
        resolutionController = ResolutionController(width: config.videoWidth, height: config.videoHeight)
        pipeline.onSizeChanged = { [weak self] width, height in
            self?.notify { $0.onWarning(code: LivePushWarningCode.resolutionChanged,
                                        message: "adaptive resolution: the video is now encoded at \(width)x\(height)",
                                        extraInfo: ["width": String(width), "height": String(height)]) }
        }
    }

    /// One second of adaptive resolution (called by the statistics tick with the lock held):
    /// the destinations' queues and auto bitrate's position decide; the pipeline switches the
    /// encoder before its next frame. A helper granted LPC_CAP_SCALE is asked with CONFIG for
    /// the smaller size, so that it grabs less (and for WELCOME's maximum again at the configured
    /// size); one without it keeps sending full frames, which the pusher scales, because it may
    /// crop to a smaller CONFIG (SPEC §12.5, clarification 28).
    func updateResolution(_ outputs: [PushOutputFigures], pipeline: VideoPipeline) {
        guard var controller = resolutionController, !outputs.isEmpty else { return }
        let congested = outputs.contains { $0.queuedMs > BitrateController.congestedQueueMs }
        let calm = outputs.allSatisfy { $0.queuedMs < BitrateController.calmQueueMs }
        let size = controller.update(congested: congested, calm: calm, bitrateKbps: bitrateController.currentKbps,
                                     minKbps: bitrateController.minKbps)
        resolutionController = controller
        guard let size else { return }
        pipeline.requestSize(width: size.width, height: size.height)
        if controller.rung == 0 {
            endpoint?.requestFullSize()
        } else {
            endpoint?.requestMaxSize(width: UInt32(size.width), height: UInt32(size.height))
        }
    }
}
