/// What a pusher is doing, in one value (`LivePusher.pusherState`, `onStateChanged`, `status`'s
/// `state`). With several destinations the best of them decides: one publishing makes it `pushing`
/// while another reconnects.
public enum LivePusherState: String, CaseIterable, Sendable {
    /// Nothing runs: before `startScreenCapture`, after `stopScreenCapture` or `destroy`.
    case idle
    /// The pipelines run (encoding, recording, the preview), and no destination is live.
    case capturing
    /// A destination connects for the first time, and none publishes.
    case connecting
    /// At least one destination publishes.
    case pushing
    /// A destination lost its connection (or never made one) and tries again, and none publishes;
    /// `onPushStatusUpdate` gives the attempt and the wait before it.
    case reconnecting
    /// Every destination gave up (the server refused, or reconnecting ran out of time or attempts);
    /// the pipelines and any recording go on. `reconnectPush` or `restartPush` starts them again.
    case failed
}

extension LivePusher {
    /// What the pusher is doing now.
    public var pusherState: LivePusherState {
        guard state.withLock({ $0.pipeline != nil }) else { return .idle }
        return outputs.pusherState
    }

    /// Reports `pusherState` to `onStateChanged` if it changed since the last report. Called after
    /// everything that may change it (capture started or stopped, a destination added, removed, or
    /// its status changed); the value is read and the call queued under `reportedState`, so that
    /// the observer gets the changes in the order they happened.
    func refreshState() {
        reportedState.withLock { reported in
            let current = pusherState
            guard current != reported else { return }
            reported = current
            notify { $0.onStateChanged(current) }
        }
    }
}

extension PushOutputs {
    /// The state the destinations make (capture running): `LivePusherState`'s rules.
    var pusherState: LivePusherState {
        let (statuses, givenUp) = statusesAndGivenUp
        if statuses.contains(.connectSuccess) { return .pushing }
        if statuses.contains(.reconnecting) { return .reconnecting }
        if !statuses.isEmpty { return .connecting }
        return givenUp ? .failed : .capturing
    }
}
