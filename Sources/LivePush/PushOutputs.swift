import Synchronization

/// The pusher's push destinations: the live outputs, those that gave up (for `reconnectPush` and
/// `restartPush`), what the stopped ones carried, and each live one's latest status and figures.
///
/// Owner: `state`, its own `Mutex`, held for a few instructions. Nothing is called on an output
/// under it: an output's figures and totals (its `NSCondition`) are read before or after, and
/// stored or merged under it. No other lock is taken under it. The pusher's public calls that add
/// or remove outputs run one at a time (`LivePusher.inTurn`); an output's own thread calls
/// `setStatus` and `gaveUp`.
final class PushOutputs: Sendable {
    private struct State {
        var live: [PushOutput] = []
        var givenUp: [PushDestination] = []
        /// The labels of the destinations live or given up (`LABEL=URL`), kept for `reconnectPush`
        /// and `restartPush` and the totals.
        var labels: [(url: PushDestination, label: String)] = []
        var finishedTotals: [(url: PushDestination, totals: PushOutputTotals)] = []

        func label(of url: PushDestination) -> String? { labels.first { $0.url == url }?.label }
        /// Each live output's latest status (from its thread) and figures (from the statistics tick).
        var status: [ObjectIdentifier: PushStatus] = [:]
        var figures: [ObjectIdentifier: PushOutputFigures] = [:]

        mutating func forget(_ output: PushOutput) {
            status[ObjectIdentifier(output)] = nil
            figures[ObjectIdentifier(output)] = nil
        }
    }

    private let state = Mutex(State())

    /// The live outputs, in the order they started (`pushURLs`' order).
    var live: [PushOutput] { state.withLock { $0.live } }

    /// Whether any destination is live.
    var isEmpty: Bool { state.withLock { $0.live.isEmpty } }

    /// The destinations that gave up and were not started again, with their labels.
    var givenUp: [(url: PushDestination, label: String?)] {
        state.withLock { state in state.givenUp.map { ($0, state.label(of: $0)) } }
    }

    /// Every destination, live first, then those that gave up, with their labels.
    var allDestinations: [(url: PushDestination, label: String?)] {
        state.withLock { state in (state.live.map(\.url) + state.givenUp).map { ($0, state.label(of: $0)) } }
    }

    /// The index of the live destination labelled `label`, if one is.
    func index(labelled label: String) -> Int? {
        state.withLock { state in state.live.firstIndex { state.label(of: $0.url) == label } }
    }

    /// Whether `url` is live.
    func isLive(_ url: PushDestination) -> Bool { state.withLock { $0.live.contains { $0.url == url } } }

    /// `url` is being started again: it is no longer one that gave up.
    func forgetGivenUp(_ url: PushDestination) { state.withLock { $0.givenUp.removeAll { $0 == url } } }

    /// Forgets every destination that gave up.
    func forgetGivenUp() { state.withLock { $0.givenUp = [] } }

    /// Adds `output` to the live set, named `label` if given: false when a live output already has its URL.
    func insert(_ output: PushOutput, label: String? = nil) -> Bool {
        state.withLock {
            guard !$0.live.contains(where: { $0.url == output.url }) else { return false }
            $0.live.append(output)
            $0.labels.removeAll { $0.url == output.url }
            if let label { $0.labels.append((output.url, label)) }
            $0.givenUp.removeAll { $0 == output.url }
            return true
        }
    }

    /// `output` gave up (on its thread): it leaves the live set, what it carried (`totals`, read by
    /// the caller) is kept, and so is its URL, for `reconnectPush`. False when it was not live any
    /// more (`stopPush` or `removePushDestination` took it first).
    func gaveUp(_ output: PushOutput, totals: PushOutputTotals) -> Bool {
        state.withLock {
            guard $0.live.contains(where: { $0 === output }) else { return false }
            $0.live.removeAll { $0 === output }
            $0.forget(output)
            Self.merge(output.url, totals, into: &$0.finishedTotals)
            if !$0.givenUp.contains(output.url) { $0.givenUp.append(output.url) }
            return true
        }
    }

    /// Takes every live output out (`stopPush`) and forgets those that gave up.
    func removeAll() -> [PushOutput] {
        state.withLock {
            let outputs = $0.live
            $0.live = []
            $0.givenUp = []
            // The labels stay: the totals read after the stop name their destinations by them.
            $0.status = [:]
            $0.figures = [:]
            return outputs
        }
    }

    /// Takes the live output at `index` out; nil when there is none there.
    func remove(at index: Int) -> PushOutput? {
        state.withLock {
            guard $0.live.indices.contains(index) else { return nil }
            let output = $0.live.remove(at: index)
            $0.forget(output)
            return output
        }
    }

    /// Keeps what a stopped output carried (`totals`, read by the caller after it stopped).
    func recordTotals(of url: PushDestination, _ totals: PushOutputTotals) {
        state.withLock { Self.merge(url, totals, into: &$0.finishedTotals) }
    }

    /// An output's status changed (on its thread); kept while it is live.
    func setStatus(_ status: PushStatus, of output: PushOutput) {
        state.withLock {
            guard $0.live.contains(where: { $0 === output }) else { return }
            $0.status[ObjectIdentifier(output)] = status
        }
    }

    /// Each live output's latest status (connecting before its first), and whether any destination gave up.
    var statusesAndGivenUp: ([PushStatus], Bool) {
        state.withLock { state in
            (state.live.map { state.status[ObjectIdentifier($0)] ?? .connecting }, !state.givenUp.isEmpty)
        }
    }

    /// Each live output's figures of the last second (the statistics tick's: taking them starts the
    /// next second's), kept for `destinationStatuses`.
    func takeFigures() -> [PushOutputFigures] {
        let outputs = live
        let figures = outputs.map { $0.takeFigures() }
        state.withLock { state in
            for (output, figures) in zip(outputs, figures) where state.live.contains(where: { $0 === output }) {
                state.figures[ObjectIdentifier(output)] = figures
            }
        }
        return figures
    }

    /// Each live destination with its status and last-second figures.
    var destinationStatuses: [LivePushDestinationStatus] {
        state.withLock { state in
            state.live.enumerated().map { index, output in
                let figures = state.figures[ObjectIdentifier(output)] ?? PushOutputFigures()
                var destination = LivePushDestinationStatus(
                    index: index, url: output.url.description,
                    status: state.status[ObjectIdentifier(output)] ?? .connecting,
                    sendBitrateKbps: figures.sendRateKbps, queueMs: figures.queuedMs,
                    delayMs: PushOutputFigures.wholeMs(figures.roundTripMs ?? 0),
                    framesDropped: figures.framesDropped, bytesSent: figures.bytesSent)
                destination.jitterMs = figures.roundTripMs == nil ? 0 : PushOutputFigures.wholeMs(figures.roundTripVariationMs)
                destination.queueDelayMs = figures.queueDelayMs
                destination.label = state.label(of: output.url)
                destination.keyFingerprint = output.url.keyFingerprint
                return destination
            }
        }
    }

    /// What each destination carried, live ones included.
    var totals: [PushTotals] {
        let outputs = live
        let liveTotals = outputs.map { ($0.url, $0.totals) }
        var totals = state.withLock { $0.finishedTotals }
        for (url, outputTotals) in liveTotals { Self.merge(url, outputTotals, into: &totals) }
        let labels = state.withLock { $0.labels }
        return totals.map { total in
            PushTotals(url: total.url.description, label: labels.first { $0.url == total.url }?.label,
                       keyFingerprint: total.url.keyFingerprint, publishedMs: total.totals.publishedMs,
                       bytesSent: total.totals.bytesSent)
        }
    }


    /// Adds `totals` to the entry for `url` (a destination started again adds up).
    private static func merge(_ url: PushDestination, _ totals: PushOutputTotals,
                              into list: inout [(url: PushDestination, totals: PushOutputTotals)])
    {
        if let index = list.firstIndex(where: { $0.url == url }) {
            list[index].totals.publishedMs += totals.publishedMs
            list[index].totals.bytesSent += totals.bytesSent
        } else {
            list.append((url, totals))
        }
    }
}
