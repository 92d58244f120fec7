import Foundation
import LinuxSystem
import Media
import PreviewWindow
import Synchronization

/// How the preview window shows the stream (`LivePusher.startPreview`).
public struct PreviewConfig: Sendable, Equatable {
    /// How the picture fills a window of another shape: fit (black bars), fill (stretched), crop.
    public var mode: ScaleMode
    /// Mirrors the preview, left to right. Independent of `setPushMirror`, as in the reference
    /// SDKs: the preview is the screen mirrored exactly when this is set, whether the stream is.
    public var previewMirror: Bool
    /// The window's size at the start; nil: the stream's size.
    public var width: Int?
    public var height: Int?
    /// Where the window opens on the screen (a window manager may place it elsewhere).
    public var x: Int
    public var y: Int
    /// The X display; nil: `DISPLAY`.
    public var display: String?
    public var title: String

    public init(mode: ScaleMode = .fit, previewMirror: Bool = false, width: Int? = nil, height: Int? = nil, x: Int = 0,
                y: Int = 0, display: String? = nil, title: String = "LivePush preview")
    {
        self.mode = mode
        self.previewMirror = previewMirror
        self.width = width
        self.height = height
        self.x = x
        self.y = y
        self.display = display
        self.title = title
    }
}

/// The preview window's thread: it takes each outgoing picture from the compositor (what
/// viewers get, at the stream's frame rate) and puts it into the window. Closing the window
/// ends only this; the broadcast goes on.
final class LivePreview: @unchecked Sendable {
    let windowID: UInt32
    private let window: PreviewWindow
    private let compositor: VideoCompositor
    private let frame: VideoFrame
    private let renderer = PreviewRenderer()
    private let state: Mutex<(running: Bool, mirrored: Bool, mode: ScaleMode)>
    private let finished = DispatchSemaphore(value: 0)
    /// Called once, on the preview thread, when the window was closed by its user or its X server.
    var onClosed: (@Sendable () -> Void)?

    init(config: PreviewConfig, compositor: VideoCompositor) throws {
        window = try PreviewWindow(title: config.title, width: config.width ?? compositor.width,
                                   height: config.height ?? compositor.height, x: config.x, y: config.y,
                                   displayName: config.display)
        windowID = window.windowID
        self.compositor = compositor
        frame = try VideoFrame(width: compositor.width, height: compositor.height)
        state = Mutex((true, config.previewMirror, config.mode))
    }

    func start() {
        let thread = Thread { [self] in
            ThreadName.setCurrent("livepush-window")
            run()
        }
        thread.start()
    }

    /// Closes the window (after the picture in progress).
    func stop() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.running = false }
            return state.running
        }
        if wasRunning { finished.wait() }
    }

    func setMirrored(_ mirrored: Bool) { state.withLock { $0.mirrored = mirrored } }
    func setMode(_ mode: ScaleMode) { state.withLock { $0.mode = mode } }

    private func run() {
        defer { finished.signal() }
        var closedByUser = false
        while true {
            let (running, mirrored, mode) = state.withLock { ($0.running, $0.mirrored, $0.mode) }
            guard running else { break }
            guard compositor.capturePicture(into: frame, timeoutMs: 250) else {
                if !window.handleEvents() { closedByUser = true; break }
                continue
            }
            // The picture is the stream's, mirrored when the stream is: flipped once more when only
            // one of the two mirrors is on, so that the preview mirror alone decides.
            let flip = mirrored != compositor.isMirrored
            let open = window.draw { pixels, width, height, stride in
                renderer.render(frame, into: pixels, width: width, height: height, strideBytes: stride, scaleMode: mode,
                                mirrored: flip)
            }
            if !open { closedByUser = true; break }
        }
        window.close()
        if closedByUser {
            state.withLock { $0.running = false }
            onClosed?()
        }
    }
}
