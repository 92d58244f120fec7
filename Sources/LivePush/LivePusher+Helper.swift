import CaptureLink

/// What the capture helper's session does to the broadcast: the screen, its placeholders, and
/// what the observer hears. Called on the endpoint's link thread, in order.
///
/// Each event takes `state` for a few instructions (a flag and the pipeline's placeholder under
/// it, so that they agree with `pause`/`resume` on other threads); nothing here blocks.
///
/// Every text here that came from the helper was neutralised where it entered (`PusherSession`,
/// SPEC §2.3); codes the SDK does not know are shown as their numbers.
extension LivePusher {
    func handle(_ event: CaptureLinkEvent) {
        switch event {
        case .started:
            state.withLock {
                $0.helperReturning = true
                $0.pipeline?.startNewSession()
            }
            notify { $0.onScreenCaptureStarted() }
        case .frame:
            // A helper that (re)started: its first frame brings the screen back, on a keyframe.
            let pipeline = state.withLock { state -> VideoPipeline? in
                if state.helperReturning {
                    state.helperReturning = false
                    state.pipeline?.hidePlaceholder(.helperLost)
                }
                return state.pipeline
            }
            pipeline?.frameArrived()
        case .paused(let code):
            state.withLock {
                $0.helperPaused = true
                $0.pipeline?.showPlaceholder(.paused)
            }
            notify { $0.onWarning(code: LivePushWarningCode.helperPaused,
                                  message: "the capture helper paused: \(PauseReason.describe(code: code)); the pause "
                                    + "picture is shown until it resumes",
                                  extraInfo: ["reason": String(code)]) }
        case .resumed:
            let shown = state.withLock { state -> Bool in
                state.helperPaused = false
                if !state.userPaused { state.pipeline?.hidePlaceholder(.paused) }
                return !state.userPaused
            }
            notify { $0.onWarning(code: LivePushWarningCode.helperResumed,
                                  message: "the capture helper resumed" + (shown ? "" : " (the broadcast stays paused)"),
                                  extraInfo: [:]) }
        case .finished(let code, let text):
            helperGone()
            let planned = code == FinishReason.user.rawValue || code == FinishReason.done.rawValue
            // RESTARTING: the captured display or output changed past what the session carries
            // (SPEC §5.7); the helper comes back at once: the reference's reason 2.
            let reason: Int32 = planned ? 0 : code == FinishReason.restarting.rawValue ? 2 : 1
            let message = "the capture helper finished: \(FinishReason.describe(code: code))"
                + (text.isEmpty ? "" : ": \(text)")
            // The answer to the pusher's own STOP (screen capture stopping) is no news.
            let answeringStop = state.withLock { $0.endpoint == nil }
            if !answeringStop {
                notify { $0.onWarning(code: planned ? LivePushWarningCode.helperFinished : LivePushWarningCode.helperLost,
                                      message: message, extraInfo: ["reason": String(code)]) }
            }
            notify { $0.onScreenCaptureStopped(reason: reason) }
        case .lost(let reason):
            helperGone()
            notify { $0.onWarning(code: LivePushWarningCode.helperLost, message: reason, extraInfo: [:]) }
            notify { $0.onScreenCaptureStopped(reason: 1) }
        case .violation(let violation, _):
            helperGone()
            notify { $0.onWarning(code: LivePushWarningCode.helperViolation, message: violation.description,
                                  extraInfo: ["rule": violation.code.name]) }
            notify { $0.onScreenCaptureStopped(reason: 1) }
        case .rejected(let code, let reason):
            notify { $0.onWarning(code: LivePushWarningCode.helperRejected, message: reason,
                                  extraInfo: ["rule": code.name]) }
        case .implausibleTimestamp(let warning):
            notify { $0.onWarning(code: LivePushWarningCode.helperClock, message: warning.description,
                                  extraInfo: ["message": warning.message, "aheadMs": String(warning.aheadMs)]) }
        case .audio(let audio):
            state.withLock { $0.audioPipeline }?.push(audio)
        case .unchangedFrame:
            pipeline?.frameArrived()
        case .connected:
            break
        }
    }

    /// The helper stopped or went away: the output goes on with the placeholder, at its frame
    /// rate, and audio goes on, until a helper comes back on the group.
    private func helperGone() {
        state.withLock {
            $0.helperReturning = false
            $0.helperPaused = false
            if !$0.userPaused { $0.pipeline?.hidePlaceholder(.paused) }
            $0.pipeline?.showPlaceholder(.helperLost)
        }
    }
}
