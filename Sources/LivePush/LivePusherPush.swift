import Foundation
import RTMP

extension LivePusher {
    // MARK: Push
    //
    // The lifecycle (docs/guide.md, "Push state"): a destination is live from `startPush` or
    // `addPushDestination` while it connects, publishes or reconnects; when it gives up (the
    // server refused, or the retries ran out) it leaves the live set with `onError`, and is kept
    // as given up so that `reconnectPush` and `restartPush` can start it again. `isPushing` is
    // true while any destination is live; `stopPush` forgets them all.

    /// Starts publishing to `url` (rtmp://host[:port]/app/key, rtmps://... over TLS, or
    /// srt://host:port?streamid=...&passphrase=...&latency=MS): 0, or -2 for a URL that cannot
    /// be used (the reason goes to `onError`), or -1 when screen capture is not started or a
    /// push is already running (more destinations: `addPushDestination`). Status changes arrive
    /// in `onPushStatusUpdate`; the key never appears in any of them. Destinations that gave up
    /// earlier are forgotten.
    @discardableResult
    public func startPush(url text: String) -> Int32 {
        guard !isPushing else { return -1 }
        lock.withLock { givenUpPushes = [] }
        return addPushDestination(url: text)
    }

    /// Publishes the same encode to one more RTMP destination; codes as `startPush`. Each
    /// destination has its own queue, sender thread and reconnections: a slow or failing one
    /// does not hold the others back. Its status carries its (redacted) URL in `extraInfo["url"]`.
    @discardableResult
    public func addPushDestination(url text: String) -> Int32 {
        let url: PushDestination
        do {
            url = try PushDestination(text)
        } catch {
            notify { $0.onError(code: LivePushErrorCode.invalidURL, message: "invalid push URL: \(error)", extraInfo: [:]) }
            return LivePushErrorCode.invalidURL
        }
        return startOutput(url)
    }

    /// Starts one destination: 0, or -1 (no screen capture, already live, or its output could
    /// not be built: then `onError(pushFailed)` says why).
    func startOutput(_ url: PushDestination) -> Int32 {
        lock.lock()
        guard let pipeline, !pushes.contains(where: { $0.url == url }) else {
            lock.unlock()
            return -1
        }
        givenUpPushes.removeAll { $0 == url }
        let redacted = url.description
        let output: PushOutput
        do {
            output = try PushOutput(url: url, encoder: pipeline.videoEncoder, audioEncoder: audioPipeline?.encoder,
                                    retryIntervalMs: config.connectRetryIntervalMs, retryCount: config.connectRetryCount,
                                    caFile: config.caFile)
        } catch {
            lock.unlock()
            notify { $0.onError(code: LivePushErrorCode.pushFailed,
                                message: "cannot push to \(redacted): \(error); restart screen capture to get a new encoder",
                                extraInfo: ["url": redacted]) }
            return -1
        }
        let outputID = ObjectIdentifier(output)
        output.onStatus = { [weak self] status, message, failure in
            if let self { self.lock.withLock { self.destinationStatus[outputID] = status } }
            // A give-up carries its cause, as the error it follows does: a listener tells it from a stop by that.
            let extraInfo = failure.map { ["url": redacted, "cause": $0.kind.rawValue] } ?? ["url": redacted]
            self?.notify { $0.onPushStatusUpdate(status: status, message: message, extraInfo: extraInfo) }
        }
        output.onRetry = { [weak self] error, attempt in
            self?.notify { $0.onWarning(code: LivePushWarningCode.pushReconnecting,
                                        message: "push to \(redacted) failed (\(error)); retrying",
                                        extraInfo: ["url": redacted, "cause": error.kind.rawValue, "attempt": String(attempt)]) }
        }
        output.onFailure = { [weak self, weak output] error in
            if let self, let output { self.outputGaveUp(output) }
            let hint = error.kind == .rejected && error.step == .publish
                ? " (a server refuses a second publisher on a stream key already in use: stop the other one or use another key)"
                : ""
            self?.notify { $0.onError(code: LivePushErrorCode.push(error.kind), message: "push to \(redacted) failed: \(error)\(hint)",
                                      extraInfo: ["url": redacted, "cause": error.kind.rawValue]) }
        }
        output.onNeedKeyframe = { [weak pipeline] in pipeline?.requestKeyframe() }
        output.onCongestion = { [weak self] dropped in
            self?.notify { $0.onWarning(code: LivePushWarningCode.networkBusy,
                                        message: "the network to \(redacted) is slower than the stream: \(dropped) video frames dropped",
                                        extraInfo: ["url": redacted, "framesDropped": String(dropped)]) }
        }
        pushes.append(output)
        output.start()
        pipeline.add(output)
        audioPipeline?.add(output)
        lock.unlock()
        return 0
    }

    /// A destination gave up (on its sender thread, which then ends by itself): it leaves the
    /// live set and the pipelines, and is kept for `reconnectPush` and `restartPush`.
    private func outputGaveUp(_ output: PushOutput) {
        lock.withLock {
            guard pushes.contains(where: { $0 === output }) else { return }
            pushes.removeAll { $0 === output }
            pipeline?.remove(output)
            audioPipeline?.remove(output)
            recordTotals(of: output)
            if !givenUpPushes.contains(output.url) { givenUpPushes.append(output.url) }
        }
    }

    /// Stops publishing to every destination (FCUnpublish, deleteStream) and forgets those that
    /// gave up; encoding and recording go on.
    public func stopPush() {
        lock.lock()
        let outputs = pushes
        pushes = []
        givenUpPushes = []
        for output in outputs {
            pipeline?.remove(output)
            audioPipeline?.remove(output)
        }
        lock.unlock()
        for output in outputs { output.stop() }
        lock.withLock { outputs.forEach(recordTotals) }
    }

    /// Drops every live RTMP connection and connects again (Reconnecting, then ConnectSuccess),
    /// and starts the destinations that gave up again with their full retries; the streams
    /// restart on a keyframe. Encoding and recording go on. 0, or -1 when there is no
    /// destination (none was started, or `stopPush` ended them).
    @discardableResult
    public func reconnectPush() -> Int32 {
        let (outputs, givenUp) = lock.withLock { (pushes, givenUpPushes) }
        guard !outputs.isEmpty || !givenUp.isEmpty else { return -1 }
        for output in outputs { output.reconnect() }
        return givenUp.map { startOutput($0) }.first { $0 != 0 } ?? 0
    }

    /// Stops every destination, live or given up, and starts them all again with new
    /// connections and full retries, at the initial bitrate (auto bitrate climbs again from
    /// there) and on a keyframe. The encoders and the recording go on. 0, or startPush's codes
    /// (-1 when there is no destination).
    @discardableResult
    public func restartPush() -> Int32 {
        let urls = lock.withLock { pushes.map(\.url) + givenUpPushes }
        guard !urls.isEmpty else { return -1 }
        stopPush()
        lock.withLock {
            if let newKbps = bitrateController.restart() { pipeline?.setBitrate(kbps: newKbps) }
        }
        return urls.map { startOutput($0) }.first { $0 != 0 } ?? 0
    }

    /// Whether a destination is connecting, publishing or reconnecting; false once every one
    /// gave up (or after `stopPush`).
    public var isPushing: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !pushes.isEmpty
    }

    /// The first push URL with its key replaced by ****, or nil.
    public var pushURL: String? { pushURLs.first }

    /// Every live push destination, keys replaced by ****.
    public var pushURLs: [String] {
        lock.lock()
        defer { lock.unlock() }
        return pushes.map(\.url.description)
    }

    /// What each destination of this pusher carried: how long it published and how many bytes of
    /// media it sent, over all its connections (also after it stopped or gave up).
    public var pushTotals: [PushTotals] {
        lock.lock()
        defer { lock.unlock() }
        var totals = finishedPushTotals
        for output in pushes { Self.merge(output.url, output.totals, into: &totals) }
        return totals.map { PushTotals(url: $0.url.description, publishedMs: $0.totals.publishedMs,
                                       bytesSent: $0.totals.bytesSent) }
    }

    /// Keeps what a stopped output carried (called with the lock held).
    private func recordTotals(of output: PushOutput) {
        Self.merge(output.url, output.totals, into: &finishedPushTotals)
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

    // MARK: Bitrate

    /// The bitrate auto bitrate climbs back to on a good network (or, without it, the bitrate);
    /// 0, or -2 outside 100...50000 kbps or below the minimum.
    @discardableResult
    public func setTargetVideoBitrate(kbps: Int) -> Int32 {
        guard LivePushConfig.videoBitrateKbpsRange.contains(kbps) else { return LivePushErrorCode.invalidParameter }
        lock.lock()
        defer { lock.unlock() }
        guard kbps >= bitrateController.minKbps else { return LivePushErrorCode.invalidParameter }
        if let newKbps = bitrateController.setTarget(kbps) { pipeline?.setBitrate(kbps: newKbps) }
        return 0
    }

    /// The lowest bitrate auto bitrate goes down to; 0, or -2 outside 100...50000 kbps or above the target.
    @discardableResult
    public func setMinVideoBitrate(kbps: Int) -> Int32 {
        guard LivePushConfig.videoBitrateKbpsRange.contains(kbps) else { return LivePushErrorCode.invalidParameter }
        lock.lock()
        defer { lock.unlock() }
        guard kbps <= bitrateController.targetKbps else { return LivePushErrorCode.invalidParameter }
        if let newKbps = bitrateController.setMin(kbps) { pipeline?.setBitrate(kbps: newKbps) }
        return 0
    }

    /// The bitrate the video encoder runs at now.
    public var currentVideoBitrateKbps: Int {
        lock.lock()
        defer { lock.unlock() }
        return bitrateController.currentKbps
    }
}

/// What one push destination carried (`LivePusher.pushTotals`).
public struct PushTotals: Sendable, Equatable {
    /// The destination, its key replaced by ****.
    public var url: String
    /// How long it published (connected and sending), over all its connections.
    public var publishedMs: Int
    /// Bytes of FLV tag bodies it sent.
    public var bytesSent: Int64
}
