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
