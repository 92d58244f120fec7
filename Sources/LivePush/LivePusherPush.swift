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
    public func startPush(url text: String, label: String? = nil) -> Int32 {
        inTurn {
            guard outputs.isEmpty else { return -1 }
            outputs.forgetGivenUp()
            return addPushDestinationLocked(url: text, label: label)
        }
    }

    /// Publishes the same encode to one more RTMP destination; codes as `startPush`. Each
    /// destination has its own queue, sender thread and reconnections: a slow or failing one
    /// does not hold the others back. Its status carries its (redacted) URL in `extraInfo["url"]`,
    /// its key's fingerprint in `extraInfo["keyFingerprint"]` and its label, when it has one, in
    /// `extraInfo["label"]`: `label` (or the `LABEL=URL` form of `text`) names it in `status`, the
    /// events, the dashboard and the report; a label in use by a live destination is refused (-2).
    @discardableResult
    public func addPushDestination(url text: String, label: String? = nil) -> Int32 {
        inTurn { addPushDestinationLocked(url: text, label: label) }
    }

    /// `addPushDestination`, in turn (`inTurn`).
    private func addPushDestinationLocked(url text: String, label: String?) -> Int32 {
        let url: PushDestination
        let name: String?
        do throws(PushURLError) {
            let written = try LabelledPushURL(text)
            name = label ?? written.label
            if let name, let problem = LabelledPushURL.problem(label: name) { throw PushURLError(reason: problem) }
            url = try PushDestination(written.url)
        } catch {
            notify { $0.onError(code: LivePushErrorCode.invalidURL, message: "invalid push URL: \(error)", extraInfo: [:]) }
            return LivePushErrorCode.invalidURL
        }
        if let name, let index = outputs.index(labelled: name) {
            notify { $0.onError(code: LivePushErrorCode.invalidParameter,
                                message: "the label '\(name)' already names destination \(index): choose another one",
                                extraInfo: ["label": name]) }
            return LivePushErrorCode.invalidParameter
        }
        return startOutputLocked(url, label: name)
    }

    /// Starts one destination: 0, or -1 (no screen capture, already live, or its output could
    /// not be built: then `onError(pushFailed)` says why). Called in turn (`inTurn`): the output
    /// is built with `state` free, and joins the live set and the pipelines once it runs.
    private func startOutputLocked(_ url: PushDestination, label: String?) -> Int32 {
        let parts = state.withLock { ($0.pipeline, $0.audioPipeline) }
        guard let pipeline = parts.0, !outputs.isLive(url) else { return -1 }
        let audioPipeline = parts.1
        // The first destination: auto bitrate starts from the initial bitrate (with nothing pushed,
        // the encoder ran at the target).
        if outputs.isEmpty { tick.restartBitrate(pipeline: pipeline) }
        outputs.forgetGivenUp(url)
        let redacted = url.description
        // What tells this destination from another on the same server, in every status, warning and error.
        let identity = ["url": redacted, "keyFingerprint": url.keyFingerprint].merging(label.map { ["label": $0] } ?? [:]) { $1 }
        let output: PushOutput
        do {
            output = try PushOutput(url: url, encoder: pipeline.videoEncoder, audioEncoder: audioPipeline?.encoder,
                                    schedule: reconnectSchedule, caFile: config.caFile)
        } catch {
            notify { $0.onError(code: LivePushErrorCode.pushFailed,
                                message: "cannot push to \(redacted): \(error); restart screen capture to get a new encoder",
                                extraInfo: identity) }
            return -1
        }
        output.onStatus = { [weak self, weak output] status, message, failure, retry in
            if let self, let output { self.outputs.setStatus(status, of: output) }
            // A give-up carries its cause, as the error it follows does: a listener tells it from a stop by that.
            var extraInfo = failure.map { identity.merging(["cause": $0.kind.rawValue]) { $1 } } ?? identity
            if let retry {
                extraInfo["attempt"] = String(retry.attempt)
                extraInfo["nextRetryMs"] = String(retry.waitMs)
            }
            let info = extraInfo
            self?.notify { $0.onPushStatusUpdate(status: status, message: message, extraInfo: info) }
            self?.refreshState()
        }
        output.onRetry = { [weak self] error, retry in
            self?.notify { $0.onWarning(code: LivePushWarningCode.pushReconnecting,
                                        message: "push to \(redacted) failed (\(error)); retrying in \(retry.waitMs) ms",
                                        extraInfo: identity.merging(["cause": error.kind.rawValue, "attempt": String(retry.attempt),
                                                                     "nextRetryMs": String(retry.waitMs)]) { $1 }) }
        }
        output.onFailure = { [weak self, weak output] error in
            if let self, let output { self.outputGaveUp(output) }
            let hint = error.kind == .rejected && error.step == .publish
                ? " (a server refuses a second publisher on a stream key already in use: stop the other one or use another key)"
                : ""
            self?.notify { $0.onError(code: LivePushErrorCode.push(error.kind), message: "push to \(redacted) failed: \(error)\(hint)",
                                      extraInfo: identity.merging(["cause": error.kind.rawValue]) { $1 }) }
        }
        output.onNeedKeyframe = { [weak pipeline] in pipeline?.requestKeyframe() }
        output.onCongestion = { [weak self] dropped in
            self?.notify { $0.onWarning(code: LivePushWarningCode.networkBusy,
                                        message: "the network to \(redacted) is slower than the stream: \(dropped) video frames dropped",
                                        extraInfo: identity.merging(["framesDropped": String(dropped)]) { $1 }) }
        }
        guard outputs.insert(output, label: label) else { return -1 }
        refreshState()
        output.start()
        pipeline.add(output)
        audioPipeline?.add(output)
        return 0
    }

    /// When a destination reconnects and gives up, from the configuration.
    private var reconnectSchedule: ReconnectSchedule {
        ReconnectSchedule(firstWaitMs: config.connectRetryIntervalMs, retryForMs: config.connectRetryForMs,
                          maxAttempts: config.connectRetryCount)
    }

    /// A destination gave up (on its sender thread, which then ends by itself): it leaves the
    /// live set and the pipelines, and is kept for `reconnectPush` and `restartPush`.
    private func outputGaveUp(_ output: PushOutput) {
        guard outputs.gaveUp(output, totals: output.totals) else { return }
        let (pipeline, audioPipeline) = state.withLock { ($0.pipeline, $0.audioPipeline) }
        pipeline?.remove(output)
        audioPipeline?.remove(output)
    }

    /// Stops publishing to every destination (FCUnpublish, deleteStream) and forgets those that
    /// gave up; encoding and recording go on.
    public func stopPush() {
        inTurn { stopPushLocked() }
    }

    /// `stopPush`, in turn (`inTurn`).
    func stopPushLocked() {
        let stopped = outputs.removeAll()
        let (pipeline, audioPipeline) = state.withLock { ($0.pipeline, $0.audioPipeline) }
        for output in stopped {
            pipeline?.remove(output)
            audioPipeline?.remove(output)
        }
        refreshState()
        for output in stopped { output.stop() }
        for output in stopped { outputs.recordTotals(of: output.url, output.totals) }
    }

    /// Drops every live RTMP connection and connects again (Reconnecting, then ConnectSuccess),
    /// and starts the destinations that gave up again with their full retries; the streams
    /// restart on a keyframe. Encoding and recording go on. 0, or -1 when there is no
    /// destination (none was started, or `stopPush` ended them).
    @discardableResult
    public func reconnectPush() -> Int32 {
        inTurn {
            let (live, givenUp) = (outputs.live, outputs.givenUp)
            guard !live.isEmpty || !givenUp.isEmpty else { return -1 }
            for output in live { output.reconnect() }
            return givenUp.map { startOutputLocked($0.url, label: $0.label) }.first { $0 != 0 } ?? 0
        }
    }

    /// Stops every destination, live or given up, and starts them all again with new
    /// connections and full retries, at the initial bitrate (auto bitrate climbs again from
    /// there) and on a keyframe. The encoders and the recording go on. 0, or startPush's codes
    /// (-1 when there is no destination).
    @discardableResult
    public func restartPush() -> Int32 {
        inTurn {
            let urls = outputs.allDestinations
            guard !urls.isEmpty else { return -1 }
            stopPushLocked()
            tick.restartBitrate(pipeline: pipeline)
            return urls.map { startOutputLocked($0.url, label: $0.label) }.first { $0 != 0 } ?? 0
        }
    }

    /// Whether a destination is connecting, publishing or reconnecting; false once every one
    /// gave up (or after `stopPush`).
    public var isPushing: Bool { !outputs.isEmpty }

    /// The first push URL with its key replaced by ****, or nil.
    public var pushURL: String? { pushURLs.first }

    /// Every live push destination, keys replaced by ****.
    public var pushURLs: [String] { outputs.live.map(\.url.description) }

    /// What each destination of this pusher carried: how long it published and how many bytes of
    /// media it sent, over all its connections (also after it stopped or gave up).
    public var pushTotals: [PushTotals] { outputs.totals }

    // MARK: Bitrate

    /// The bitrate auto bitrate climbs back to on a good network (or, without it, the bitrate);
    /// 0, or -2 outside 100...50000 kbps or below the minimum.
    @discardableResult
    public func setTargetVideoBitrate(kbps: Int) -> Int32 {
        guard LivePushConfig.videoBitrateKbpsRange.contains(kbps) else { return LivePushErrorCode.invalidParameter }
        return tick.setTarget(kbps: kbps, pipeline: pipeline) ? 0 : LivePushErrorCode.invalidParameter
    }

    /// The lowest bitrate auto bitrate goes down to; 0, or -2 outside 100...50000 kbps or above the target.
    @discardableResult
    public func setMinVideoBitrate(kbps: Int) -> Int32 {
        guard LivePushConfig.videoBitrateKbpsRange.contains(kbps) else { return LivePushErrorCode.invalidParameter }
        return tick.setMin(kbps: kbps, pipeline: pipeline) ? 0 : LivePushErrorCode.invalidParameter
    }

    /// The bitrate the video encoder runs at now.
    public var currentVideoBitrateKbps: Int { tick.bitratesKbps.current }
}

/// What one push destination carried (`LivePusher.pushTotals`).
public struct PushTotals: Sendable, Equatable {
    /// The destination, its key replaced by ****.
    public var url: String
    /// Its label, if it has one, and its key's fingerprint (`PushDestination.keyFingerprint`).
    public var label: String?
    public var keyFingerprint = ""
    /// How long it published (connected and sending), over all its connections.
    public var publishedMs: Int
    /// Bytes of FLV tag bodies it sent.
    public var bytesSent: Int64
}
