import Foundation
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
    let width: Int
    let height: Int
    let scaleMode: ScaleMode
    /// Where the converter writes the screen (black until the first frame).
    let screen: VideoFrame
    /// What is shown while a placeholder reason is active (drawn when the reasons change).
    private let placeholder: VideoFrame
    private let images: PlaceholderImages
    private let state = Mutex(State())
    /// Where the next outgoing picture is copied (`capturePicture`), under `capture`.
    private let capture = NSCondition()
    private var captureTarget: VideoFrame?

    private struct State {
        /// Active reasons to show a placeholder; the highest one is shown.
        var placeholderReasons: Set<PlaceholderReason> = []
        var shownPlaceholder: PlaceholderReason?
        var framesPlaceholder = 0
    }

    /// A composed picture: the frame to encode, and whether it starts a new picture (a
    /// placeholder appeared or left), which should be a keyframe.
    struct Composed {
        let frame: VideoFrame
        let startsNewPicture: Bool
    }

    init(width: Int, height: Int, scaleMode: ScaleMode, images: PlaceholderImages) throws(MediaError) {
        self.width = width
        self.height = height
        self.scaleMode = scaleMode
        self.images = images
        screen = try VideoFrame(width: width, height: height)
        screen.fillBlack()
        placeholder = try VideoFrame(width: width, height: height)
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

    /// The picture to encode now (video thread only).
    func compose() -> Composed {
        let (wanted, shown) = state.withLock { ($0.placeholderReasons.max(), $0.shownPlaceholder) }
        let changed = wanted != shown
        if changed {
            if let wanted { drawPlaceholder(wanted) }
            state.withLock { $0.shownPlaceholder = wanted }
        }
        if wanted != nil { state.withLock { $0.framesPlaceholder += 1 } }
        let frame = wanted == nil ? screen : placeholder
        copyCapture(from: frame)
        return Composed(frame: frame, startsNewPicture: changed)
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

    /// Copies the next picture composed (what viewers get) into `target`, which has the output
    /// size; false when none was composed within `timeoutMs`. One caller at a time.
    func capturePicture(into target: VideoFrame, timeoutMs: Int) -> Bool {
        capture.lock()
        defer { capture.unlock() }
        captureTarget = target
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        while captureTarget != nil {
            if !capture.wait(until: deadline) {
                captureTarget = nil
                return false
            }
        }
        return true
    }

    private func copyCapture(from frame: VideoFrame) {
        capture.lock()
        defer { capture.unlock() }
        guard let target = captureTarget else { return }
        target.copyPicture(from: frame)
        captureTarget = nil
        capture.broadcast()
    }
}
