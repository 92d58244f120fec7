import Foundation
import Media

/// The picture's SDK surface (issue 16): watermarks, the mirror, the video hook, PNG snapshots.
/// The work itself is the compositor's (`VideoCompositor`), between conversion and encoding.
extension LivePusher {
    // MARK: Watermarks

    /// Draws the PNG (alpha kept) or JPEG at `path` on the stream from the next picture on, at
    /// `x`, `y` (fractions of the picture's size from its top left) and `width` (a fraction of
    /// its width; the height follows the image), mixed at `opacity` (0 to 1). Returns the
    /// watermark's id (1 or more) for `removeWatermark`, or `LivePushErrorCode.watermarkUnreadable`
    /// / `watermarkInvalid`; a failure is also reported to `onError` with what to fix.
    /// Watermarks may be added before screen capture starts, and stay across captures.
    @discardableResult
    public func addWatermark(path: String, x: Double, y: Double, width: Double, opacity: Double = 1) -> Int32 {
        let position = WatermarkPosition(x: x, y: y, width: width, opacity: opacity)
        if let problem = position.problem { return watermarkFailed(.watermarkInvalid, "watermark '\(path)': \(problem)") }
        let image: WatermarkImage
        do {
            image = try WatermarkImage.load(path: path)
        } catch {
            return watermarkFailed(.watermarkUnreadable, "cannot use '\(path)' as a watermark (\(error)); use a PNG or JPEG file")
        }
        return addWatermark(image, position: position)
    }

    /// Draws `image` (B G R A bytes) on the stream, as `addWatermark(path:...)`.
    @discardableResult
    public func addWatermark(_ image: WatermarkImage, position: WatermarkPosition) -> Int32 {
        if let problem = position.problem { return watermarkFailed(.watermarkInvalid, "watermark: \(problem)") }
        do {
            return try picture.add(image, position: position)
        } catch {
            return watermarkFailed(.watermarkInvalid, "cannot scale the watermark to the picture (\(error))")
        }
    }

    /// Takes watermark `id` off the stream from the next picture on. Returns 0, or
    /// `LivePushErrorCode.watermarkNotFound` when no watermark has that id.
    @discardableResult
    public func removeWatermark(id: Int32) -> Int32 {
        picture.remove(id: id) ? 0 : LivePushErrorCode.watermarkNotFound
    }

    /// The watermarks on the stream, in drawing order (the later on top).
    public var watermarks: [(id: Int32, position: WatermarkPosition)] { picture.watermarks }

    private func watermarkFailed(_ code: WatermarkFailure, _ message: String) -> Int32 {
        notify { $0.onError(code: code.code, message: message, extraInfo: [:]) }
        return code.code
    }

    private enum WatermarkFailure {
        case watermarkInvalid, watermarkUnreadable
        var code: Int32 {
            self == .watermarkInvalid ? LivePushErrorCode.watermarkInvalid : LivePushErrorCode.watermarkUnreadable
        }
    }

    // MARK: Mirror

    /// Mirrors the stream left to right (viewers and recordings see it mirrored) from the next
    /// picture on; the reference SDKs' `setPushMirror`. Watermarks stay readable: they are drawn
    /// after the mirror. The preview follows `setPreviewMirror` alone.
    public func setPushMirror(_ mirrored: Bool) { picture.setMirrored(mirrored) }

    /// Whether the stream is mirrored (`setPushMirror`, or the configuration's `pushMirror`).
    public var pushMirror: Bool { picture.mirrored }

    // MARK: Video hook

    /// Hands every outgoing picture to the observer's `onProcessVideoFrame` just before it is
    /// encoded (after watermarks), to read or draw on in place; false stops. The time it takes
    /// is `LivePusherStatistics.videoProcessMs`.
    public func enableCustomVideoProcess(_ enable: Bool) {
        guard enable else { return picture.setProcessHook(nil) }
        picture.setProcessHook { [weak self] frame in
            // On the video thread, synchronously: the observer changes the picture in place.
            self?.currentObserver?.onProcessVideoFrame(&frame)
        }
    }

    // MARK: Snapshot

    /// Takes the next outgoing picture (what viewers get: the screen or the placeholder, with
    /// watermarks) as a PNG and hands it to `onSnapshotComplete`. Returns 0, or -1 when screen
    /// capture is not running (then `onSnapshotComplete` reports that too).
    @discardableResult
    public func snapshot() -> Int32 {
        let running = pipeline != nil
        DispatchQueue.global().async { [weak self] in self?.takeSnapshot() }
        return running ? 0 : -1
    }

    /// One picture, handed to `onSnapshotComplete` (or why there is none).
    private func takeSnapshot() {
        let result = snapshotPNG()
        notify { observer in
            switch result {
            case .success(let png): observer.onSnapshotComplete(image: png, error: nil)
            case .failure(let error): observer.onSnapshotComplete(image: nil, error: error.description)
            }
        }
    }

    /// Takes `count` pictures `intervalMs` apart (the reference SDKs' `snapshot:interval:`), each
    /// handed to `onSnapshotComplete` as it is taken. 0; -1 when screen capture is not running;
    /// -2 for a count outside 1 to 100 or an interval outside 100 to 60000 ms (nothing is taken).
    @discardableResult
    public func snapshot(count: Int, intervalMs: Int) -> Int32 {
        guard Self.snapshotCounts.contains(count), Self.snapshotIntervalsMs.contains(intervalMs) else { return -2 }
        guard pipeline != nil else { return snapshot() }
        DispatchQueue.global().async { [weak self] in
            let startNs = DispatchTime.now().uptimeNanoseconds
            for index in 0..<count {
                // On the clock, not after each picture: a slow PNG does not stretch the series.
                let dueNs = startNs + UInt64(index) * UInt64(intervalMs) * 1_000_000
                let nowNs = DispatchTime.now().uptimeNanoseconds
                if dueNs > nowNs { usleep(useconds_t((dueNs - nowNs) / 1000)) }
                guard let self else { return }
                self.takeSnapshot()
            }
        }
        return 0
    }

    /// How many pictures one `snapshot(count:intervalMs:)` may take, and how far apart.
    public static let snapshotCounts = 1...100
    public static let snapshotIntervalsMs = 100...60_000

    /// The next outgoing picture as a PNG file's bytes (libavcodec's png encoder), waiting up to `timeoutMs`.
    public func snapshotPNG(timeoutMs: Int = 2000) -> Result<[UInt8], SnapshotError> {
        guard let pipeline = pipeline else { return .failure(.notCapturing) }
        let width = pipeline.settings.width, height = pipeline.settings.height
        do {
            let frame = try VideoFrame(width: width, height: height)
            guard pipeline.capturePreview(into: frame, timeoutMs: timeoutMs) else { return .failure(.noPicture(timeoutMs: timeoutMs)) }
            return .success(try PNGEncoder(width: width, height: height).encode(frame))
        } catch {
            return .failure(.encoder(error.description))
        }
    }
}

/// Why `snapshot` has no picture.
public enum SnapshotError: Error, Equatable, CustomStringConvertible {
    case notCapturing
    case noPicture(timeoutMs: Int)
    case encoder(String)

    public var description: String {
        switch self {
        case .notCapturing: "no picture to take: screen capture is not running (startScreenCapture first)"
        case .noPicture(let timeoutMs): "no picture went out within \(timeoutMs) ms"
        case .encoder(let message): "cannot encode the PNG: \(message)"
        }
    }
}
