import Foundation
import Media

/// The preview window (issue 16): what viewers get, in an X11 window on this machine.
extension LivePusher {
    /// Opens an X11 window showing the outgoing picture (watermarks and placeholders included)
    /// as `config` says; nil: as the last window was, with the mirror and mode set since
    /// (`PreviewConfig()` at first). Returns 0, -1 when screen capture is not running, or
    /// `LivePushErrorCode.previewUnavailable` when no window can be opened (no X display, no
    /// MIT-SHM), also sent to `onError`. Closing the window never stops the broadcast: it is a
    /// warning (`previewClosed`); `startPreview` opens it again.
    @discardableResult
    public func startPreview(_ config: PreviewConfig? = nil) -> Int32 {
        do {
            let wasOpen = previewWindowID != nil
            let windowID = try picture.startPreview(config) { [weak self] in
                self?.notify { $0.onWarning(code: LivePushWarningCode.previewClosed,
                                            message: "the preview window was closed; the broadcast goes on",
                                            extraInfo: [:]) }
                self?.notify { $0.onPreviewStopped() }
            }
            guard windowID != nil else { return -1 }
            if !wasOpen { notify { $0.onPreviewStarted() } }
            return 0
        } catch {
            notify { $0.onError(code: LivePushErrorCode.previewUnavailable,
                                message: "cannot open the preview window: \(error)", extraInfo: [:]) }
            return LivePushErrorCode.previewUnavailable
        }
    }

    /// Closes the preview window, if open (`onPreviewStopped` then follows).
    public func stopPreview() {
        let wasOpen = previewWindowID != nil
        picture.stopPreview()
        if wasOpen { notify { $0.onPreviewStopped() } }
    }

    /// The preview window's X11 id while it is open (for tools such as `xwininfo -id`).
    public var previewWindowID: UInt32? { picture.preview?.windowID }

    /// Mirrors the preview (`previewMirror`), live, and the next window too. Independent of
    /// `setPushMirror`, as in the reference SDKs: the preview shows the screen mirrored exactly
    /// when this is set (so with the push mirror alone, the preview shows the screen unmirrored).
    public func setPreviewMirror(_ mirrored: Bool) { picture.setPreviewMirrored(mirrored) }

    /// Whether the preview is mirrored (`setPreviewMirror`, or the last `startPreview`'s config).
    public var previewMirror: Bool { picture.previewConfig.previewMirror }

    /// The preview's display mode (fit, fill, crop), live, and the next window's too.
    public func setPreviewMode(_ mode: ScaleMode) { picture.setPreviewMode(mode) }
}
