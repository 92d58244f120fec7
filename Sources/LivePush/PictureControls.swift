import Foundation
import Media
import Synchronization

/// What the user set on the picture (watermarks, mirror, the video hook), kept across screen
/// captures and applied to each new pipeline's compositor: `LivePusher+Picture.swift`.
final class PictureControls: @unchecked Sendable {
    private struct State {
        var watermarks: [(id: Int, image: WatermarkImage, position: WatermarkPosition)] = []
        var nextWatermarkID: Int32 = 1
        var mirrored = false
        var processHook: (@Sendable (inout VideoProcessFrame) -> Void)?
        var compositor: VideoCompositor?
        var loadedConfiguredWatermarks = false
        var preview: LivePreview?
        /// The preview's settings: those of the last `startPreview`, with the mirror and mode set since.
        var previewConfig = PreviewConfig()
    }

    private let state = Mutex(State())

    /// The configuration's watermarks and mirror, once (the first screen capture).
    func configure(watermarks: [WatermarkFile], mirrored: Bool, warn: (String, String) -> Void) {
        let first = state.withLock { state -> Bool in
            defer { state.loadedConfiguredWatermarks = true }
            if !state.loadedConfiguredWatermarks && mirrored { state.mirrored = true }
            return !state.loadedConfiguredWatermarks
        }
        guard first else { return }
        for watermark in watermarks {
            do {
                let image = try WatermarkImage.load(path: watermark.path)
                _ = try add(image, position: watermark.position)
            } catch {
                warn(watermark.path, "\(error)")
            }
        }
    }

    /// Adds a watermark; its id.
    func add(_ image: WatermarkImage, position: WatermarkPosition) throws(PixelConversionError) -> Int32 {
        let (id, compositor) = state.withLock { state -> (Int32, VideoCompositor?) in
            let id = state.nextWatermarkID
            state.nextWatermarkID += 1
            state.watermarks.append((Int(id), image, position))
            return (id, state.compositor)
        }
        do {
            try compositor?.setWatermark(id: Int(id), image: image, position: position)
        } catch {
            state.withLock { $0.watermarks.removeAll { $0.id == Int(id) } }
            throw error
        }
        return id
    }

    /// Removes watermark `id`; false when there is none.
    func remove(id: Int32) -> Bool {
        let (found, compositor) = state.withLock { state -> (Bool, VideoCompositor?) in
            let count = state.watermarks.count
            state.watermarks.removeAll { $0.id == Int(id) }
            return (state.watermarks.count != count, state.compositor)
        }
        compositor?.removeWatermark(id: Int(id))
        return found
    }

    /// The watermarks' ids and positions, in drawing order.
    var watermarks: [(id: Int32, position: WatermarkPosition)] {
        state.withLock { $0.watermarks.map { (Int32($0.id), $0.position) } }
    }

    func setMirrored(_ mirrored: Bool) {
        state.withLock {
            $0.mirrored = mirrored
            $0.compositor?.setMirrored(mirrored)
        }
    }

    var mirrored: Bool { state.withLock { $0.mirrored } }

    func setProcessHook(_ hook: (@Sendable (inout VideoProcessFrame) -> Void)?) {
        state.withLock {
            $0.processHook = hook
            $0.compositor?.setProcessHook(hook)
        }
    }

    /// A new pipeline's compositor gets everything set so far.
    func attach(_ compositor: VideoCompositor) {
        let watermarks = state.withLock { state in
            state.compositor = compositor
            compositor.setMirrored(state.mirrored)
            compositor.setProcessHook(state.processHook)
            return state.watermarks
        }
        for watermark in watermarks {
            try? compositor.setWatermark(id: watermark.id, image: watermark.image, position: watermark.position)
        }
    }

    /// Ends the capture's picture path: the preview closes with it.
    func detach() {
        let preview = state.withLock { state -> LivePreview? in
            state.compositor = nil
            defer { state.preview = nil }
            return state.preview
        }
        preview?.stop()
    }

    /// Opens the preview window on the running capture's compositor, as `config` says (nil: the
    /// last settings); nil when capture is not running.
    func startPreview(_ config: PreviewConfig?, onClosed: @escaping @Sendable () -> Void) throws -> UInt32? {
        guard let (compositor, config) = state.withLock({ state -> (VideoCompositor, PreviewConfig)? in
            guard let compositor = state.compositor else { return nil }
            if let config { state.previewConfig = config }
            return (compositor, state.previewConfig)
        }) else { return nil }
        stopPreview()
        let preview = try LivePreview(config: config, compositor: compositor)
        preview.onClosed = { [weak self, weak preview] in
            self?.state.withLock { state in if let preview, state.preview === preview { state.preview = nil } }
            onClosed()
        }
        state.withLock { $0.preview = preview }
        preview.start()
        return preview.windowID
    }

    func stopPreview() {
        let preview = state.withLock { state -> LivePreview? in
            defer { state.preview = nil }
            return state.preview
        }
        preview?.stop()
    }

    var preview: LivePreview? { state.withLock { $0.preview } }

    /// The preview's mirror, kept for the next window when none is open.
    func setPreviewMirrored(_ mirrored: Bool) {
        state.withLock {
            $0.previewConfig.previewMirror = mirrored
            $0.preview?.setMirrored(mirrored)
        }
    }

    func setPreviewMode(_ mode: ScaleMode) {
        state.withLock {
            $0.previewConfig.mode = mode
            $0.preview?.setMode(mode)
        }
    }

    var previewConfig: PreviewConfig { state.withLock { $0.previewConfig } }
}
