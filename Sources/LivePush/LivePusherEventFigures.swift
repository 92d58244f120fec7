import Foundation

extension LivePusher {
    /// What the statistics event adds to the figures, without building the whole `status` (its
    /// placeholder text, audio switches and volume table) once a second.
    public var pausedAndDestinations: (paused: Bool, destinations: [LivePushDestinationStatus]) {
        lock.lock()
        defer { lock.unlock() }
        return (userPaused, destinationStatusesLocked())
    }

    /// Each destination with its status and last-second figures. Called with `lock` held.
    func destinationStatusesLocked() -> [LivePushDestinationStatus] {
        pushes.enumerated().map { index, output in
            let figures = destinationFigures[ObjectIdentifier(output)] ?? PushOutputFigures()
            return LivePushDestinationStatus(
                index: index, url: output.url.description, status: destinationStatus[ObjectIdentifier(output)] ?? .connecting,
                sendBitrateKbps: figures.sendRateKbps, queueMs: figures.queuedMs, delayMs: figures.delayMs,
                framesDropped: figures.framesDropped, bytesSent: figures.bytesSent)
        }
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
