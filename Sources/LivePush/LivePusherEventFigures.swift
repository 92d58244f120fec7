import Foundation

extension LivePusher {
    /// What the statistics event adds to the figures, without building the whole `status` (its
    /// placeholder text, audio switches and volume table) once a second.
    public var pausedAndDestinations: (paused: Bool, destinations: [LivePushDestinationStatus]) {
        (state.withLock { $0.userPaused }, outputs.destinationStatuses)
    }
}

extension LivePusher {
    /// Warning 1105: the pusher was off the clock for `durationMs` (stopped, or starved of CPU) and
    /// left `skipped` pictures out. Named as what it is: not the network, nothing dropped for it.
    func warnStalled(durationMs: Int, skipped: Int) {
        let seconds = String(format: "%.1f", Double(durationMs) / 1000)
        notify { $0.onWarning(code: LivePushWarningCode.pusherStalled,
                              message: "the pusher was stalled for \(seconds) s: \(skipped) pictures skipped "
                                  + "(the machine is too busy, or the process was stopped); the stream goes on",
                              extraInfo: ["durationMs": String(durationMs), "picturesSkipped": String(skipped)]) }
    }
}
