import CaptureLink
import Foundation
import LinuxSystem
import Media
import Synchronization

/// Why the pipeline shows a placeholder instead of the screen.
enum PlaceholderReason: Int, Comparable, CaseIterable, Sendable {
    /// The helper went away (exited, crashed, hung, broke the protocol) and has not come back.
    case helperLost
    /// `pause()`, or the helper sent PAUSE.
    case paused
    /// The network has carried less than the minimum bitrate for a while.
    case networkPoor

    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    var notice: String {
        switch self {
        case .helperLost: "Screen capture interrupted"
        case .paused: "Paused"
        case .networkPoor: "Poor network"
        }
    }
}

/// The still pictures shown instead of the screen.
struct PlaceholderImages: Sendable {
    var pause: StillImage?
    var networkPoor: StillImage?
}

/// The outgoing picture, between conversion and encoding. Each tick the pipeline converts the
/// newest screen frame into `screen` (or, for an app that renders its own, writes it there), then
/// calls `compose()` once, which returns the picture to encode: the screen or the placeholder
/// shown instead, with the stream's drawing on top (watermarks, the mirror, the video hook).
/// The composed picture is what viewers, recordings, snapshots and the preview all get.
///
/// `compose` runs on the video thread only; every other method may be called from any thread.
final class VideoCompositor: @unchecked Sendable {
    let scaleMode: ScaleMode
    /// Where the converter writes the screen (black until the first frame). The three pictures
    /// are replaced by `resize` and used on the video thread only.
    private(set) var screen: VideoFrame
    /// What is shown while a placeholder reason is active (drawn when the reasons change).
    private var placeholder: VideoFrame
    /// The screen or placeholder with the drawing on top, when there is any drawing (the screen
    /// itself stays clean: a repeated picture is not drawn on twice).
    private var outgoing: VideoFrame
    private let images: PlaceholderImages
    private let state: Mutex<State>
    /// Where the next outgoing picture is copied (`capturePicture`), under `capture`.
    private let capture = NSCondition()
    private var captureTargets: [ObjectIdentifier: VideoFrame] = [:]

    private struct State {
        /// The size composed now (the configured one unless adaptive resolution changed it).
        var width: Int
        var height: Int
        /// Active reasons to show a placeholder; the highest one is shown.
        var placeholderReasons: Set<PlaceholderReason> = []
        var shownPlaceholder: PlaceholderReason?
        var framesPlaceholder = 0
        /// The watermarks, drawn in the order they were added.
        var watermarks: [Watermark] = []
        /// The stream mirrored left to right (`pushMirror`).
        var mirrored = false
        /// The video hook, called with the outgoing picture just before it is encoded.
        var processHook: (@Sendable (inout VideoProcessFrame) -> Void)?
        /// The hook's time since `takeProcessFigures`.
        var processNs: UInt64 = 0
        var processCalls = 0
    }

    /// A watermark: its image, where it goes (normalized), its opacity and its prepared overlay.
    private struct Watermark {
        let id: Int
        let image: WatermarkImage
        let position: WatermarkPosition
        var overlay: WatermarkOverlay
    }

    /// A composed picture: the frame to encode, and whether it starts a new picture (a
    /// placeholder appeared or left), which should be a keyframe.
    struct Composed {
        let frame: VideoFrame
        let startsNewPicture: Bool
    }

    init(width: Int, height: Int, scaleMode: ScaleMode, images: PlaceholderImages) throws(MediaError) {
        self.scaleMode = scaleMode
        self.images = images
        state = Mutex(State(width: width, height: height))
        screen = try VideoFrame(width: width, height: height)
        screen.fillBlack()
        placeholder = try VideoFrame(width: width, height: height)
        outgoing = try VideoFrame(width: width, height: height)
    }

    /// The size composed now.
    var width: Int { state.withLock { $0.width } }
    var height: Int { state.withLock { $0.height } }

    /// Composes at `width` x `height` from now on (adaptive resolution; video thread only): the
    /// last screen scaled into the new picture, the placeholder drawn again, every watermark
    /// prepared again for the new size.
    func resize(width: Int, height: Int) throws(MediaError) {
        let newScreen = try VideoFrame(width: width, height: height)
        newScreen.scalePicture(from: screen)
        let newPlaceholder = try VideoFrame(width: width, height: height)
        let newOutgoing = try VideoFrame(width: width, height: height)
        screen = newScreen
        placeholder = newPlaceholder
        outgoing = newOutgoing
        let watermarks = state.withLock { state in
            (state.width, state.height) = (width, height)
            state.shownPlaceholder = nil  // drawn again at the new size
            return state.watermarks
        }
        // Until each is prepared again, a watermark made for the old size is left out (`compose`).
        for watermark in watermarks {
            guard let overlay = try? Self.overlay(watermark.image, position: watermark.position, width: width,
                                                  height: height) else { continue }
            state.withLock { state in
                guard (state.width, state.height) == (width, height),
                      let index = state.watermarks.firstIndex(where: {
                          $0.id == watermark.id && $0.position == watermark.position
                              && ($0.overlay.pictureWidth, $0.overlay.pictureHeight) != (width, height)
                      })
                else { return }
                state.watermarks[index].overlay = overlay
            }
        }
    }

    // MARK: Watermarks, mirror, hook

    /// Puts watermark `id` on top of the stream from the next picture on (replacing one with the
    /// same id). The image is scaled and converted here, once, not on the video thread.
    func setWatermark(id: Int, image: WatermarkImage, position: WatermarkPosition) throws(PixelConversionError) {
        while true {
            let (width, height) = state.withLock { ($0.width, $0.height) }
            let overlay = try Self.overlay(image, position: position, width: width, height: height)
            let stored = state.withLock { state -> Bool in
                guard (state.width, state.height) == (width, height) else { return false }  // resized meanwhile
                let watermark = Watermark(id: id, image: image, position: position, overlay: overlay)
                if let index = state.watermarks.firstIndex(where: { $0.id == id }) {
                    state.watermarks[index] = watermark
                } else {
                    state.watermarks.append(watermark)
                }
                return true
            }
            if stored { return }
        }
    }

    /// Takes watermark `id` off the stream from the next picture on.
    func removeWatermark(id: Int) {
        state.withLock { $0.watermarks.removeAll { $0.id == id } }
    }

    /// Mirrors the stream left to right (or not) from the next picture on.
    func setMirrored(_ mirrored: Bool) { state.withLock { $0.mirrored = mirrored } }

    /// Whether the stream is mirrored now (the preview undoes it unless the preview is mirrored too).
    var isMirrored: Bool { state.withLock { $0.mirrored } }

    /// The hook called with every outgoing picture just before it is encoded (nil: none).
    func setProcessHook(_ hook: (@Sendable (inout VideoProcessFrame) -> Void)?) { state.withLock { $0.processHook = hook } }

    /// The hook's mean time per picture since the last call, in ms (0 without a hook), and the calls.
    func takeProcessFigures() -> (meanMs: Double, calls: Int) {
        state.withLock { state in
            defer { state.processNs = 0; state.processCalls = 0 }
            return (state.processCalls == 0 ? 0 : Double(state.processNs) / 1e6 / Double(state.processCalls), state.processCalls)
        }
    }

    private static func overlay(_ image: WatermarkImage, position: WatermarkPosition, width: Int, height: Int)
        throws(PixelConversionError) -> WatermarkOverlay
    {
        let placement = WatermarkPlacement(x: position.x, y: position.y, width: position.width, imageWidth: image.width,
                                           imageHeight: image.height, pictureWidth: width, pictureHeight: height)
        return try WatermarkOverlay(image: image, placement: placement, opacity: position.opacity, pictureWidth: width,
                                    pictureHeight: height)
    }

    // MARK: Placeholders

    /// Shows a placeholder for `reason` (until `hidePlaceholder(reason)`): the pause image or
    /// the poor-network image when configured, else the last picture dimmed with a notice.
    func showPlaceholder(_ reason: PlaceholderReason) {
        state.withLock { _ = $0.placeholderReasons.insert(reason) }
    }

    /// The screen again once no reason is left.
    func hidePlaceholder(_ reason: PlaceholderReason) {
        state.withLock { _ = $0.placeholderReasons.remove(reason) }
    }

    /// The placeholder shown now, if any.
    var shownPlaceholder: PlaceholderReason? { state.withLock { $0.placeholderReasons.max() } }

    /// Frames that showed a placeholder, since the start.
    var framesPlaceholder: Int { state.withLock { $0.framesPlaceholder } }

    // MARK: Composing

    /// The picture to encode now (video thread only); `ptsMs` is its place on the stream's timeline.
    func compose(ptsMs: Int64) -> Composed {
        let (wanted, shown) = state.withLock { ($0.placeholderReasons.max(), $0.shownPlaceholder) }
        let changed = wanted != shown
        if changed {
            if let wanted { drawPlaceholder(wanted) }
            state.withLock { $0.shownPlaceholder = wanted }
        }
        if wanted != nil { state.withLock { $0.framesPlaceholder += 1 } }
        let base = wanted == nil ? screen : placeholder
        let (drawsWatermarks, mirrored, hook) = state.withLock { (!$0.watermarks.isEmpty, $0.mirrored, $0.processHook) }
        var frame = base
        if drawsWatermarks || mirrored || hook != nil {
            if mirrored { outgoing.copyMirrored(from: base) } else { outgoing.copyPicture(from: base) }
            // Under the lock, so that no array of them is made per frame (a blend takes microseconds).
            let size = (outgoing.width, outgoing.height)
            state.withLock { state in
                for watermark in state.watermarks where (watermark.overlay.pictureWidth, watermark.overlay.pictureHeight) == size {
                    watermark.overlay.blend(into: outgoing)
                }
            }
            if let hook { runHook(hook, ptsMs: ptsMs) }
            frame = outgoing
        }
        copyCapture(from: frame)
        return Composed(frame: frame, startsNewPicture: changed)
    }

    private func runHook(_ hook: @Sendable (inout VideoProcessFrame) -> Void, ptsMs: Int64) {
        let startNs = MonotonicClock.nowNs()
        outgoing.withPlanes { planes in
            var frame = VideoProcessFrame(planes: planes, ptsMs: ptsMs)
            hook(&frame)
        }
        let elapsedNs = MonotonicClock.nowNs() - startNs
        state.withLock {
            $0.processNs += elapsedNs
            $0.processCalls += 1
        }
    }

    /// Draws the placeholder for `reason`: its image when configured, else the last picture
    /// dimmed with a notice.
    private func drawPlaceholder(_ reason: PlaceholderReason) {
        let image = reason == .networkPoor ? images.networkPoor ?? images.pause : images.pause
        if let image, (try? image.render(into: placeholder, scaleMode: scaleMode)) != nil { return }
        placeholder.copyPicture(from: screen)
        placeholder.dim(toPercent: 40)
        placeholder.drawNotice(reason.notice)
    }

    // MARK: Copies of the outgoing picture

    /// Copies the next picture composed (what viewers get) into `target` (scaled to its size when
    /// adaptive resolution changed the output's); false when none was composed within `timeoutMs`. Several callers may wait at once
    /// (a snapshot, the preview, the dashboard), each with its own target.
    func capturePicture(into target: VideoFrame, timeoutMs: Int) -> Bool {
        capture.lock()
        defer { capture.unlock() }
        let key = ObjectIdentifier(target)
        captureTargets[key] = target
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        while captureTargets[key] != nil {
            if !capture.wait(until: deadline) {
                captureTargets[key] = nil
                return false
            }
        }
        return true
    }

    private func copyCapture(from frame: VideoFrame) {
        capture.lock()
        defer { capture.unlock() }
        guard !captureTargets.isEmpty else { return }
        for target in captureTargets.values { target.scalePicture(from: frame) }
        captureTargets.removeAll()
        capture.broadcast()
    }
}
