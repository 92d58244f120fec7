import CaptureLink
import Foundation
import LivePush
import SafeText

/// Where event lines go: a file, standard output, a control-socket client, the dashboard.
/// `write` is called on the observer queue and must not block (queue, then write elsewhere).
public protocol EventSink: AnyObject, Sendable {
    func write(line: String)
}

/// The observer callbacks as values: every callback of `LivePusherObserver` becomes one JSON
/// line (docs/events.md, docs/events.schema.json) with a sequence number, a CLOCK_MONOTONIC
/// and a wall-clock timestamp, written to every sink; then the call goes on to `downstream`
/// (the application's own observer). Keys are redacted from every text.
public final class EventHub: LivePusherObserver, @unchecked Sendable {
    private weak var downstream: (any LivePusherObserver)?
    /// The pusher whose destinations the statistics events list.
    public weak var pusher: LivePusher?
    private let lock = NSLock()
    /// Held for a whole `emit`, so every sink gets the lines in `seq` order whichever thread emits.
    private let order = NSLock()
    private var sinks: [ObjectIdentifier: any EventSink] = [:] {
        didSet { sinkList = Array(sinks.values) }
    }
    /// `sinks.values`, made when a sink comes or goes rather than for every line.
    private var sinkList: [any EventSink] = []
    /// The statistics and volume lines' buffer, kept from line to line (used under `lock`).
    private var writer = EventLineWriter()
    /// The last destination URLs seen and what `Redaction` made of them (they rarely change).
    private var redactedURLCache: [String: String] = [:]
    private var sequence = 0
    private var recentStatistics: [String] = []
    private var recentOthers: [String] = []
    /// How many statistics lines (seconds) and other lines `recent` keeps.
    public static let keptStatistics = 600
    public static let keptOthers = 200

    public init(forwardingTo downstream: (any LivePusherObserver)? = nil) {
        self.downstream = downstream
    }

    public func add(_ sink: any EventSink) { lock.withLock { sinks[ObjectIdentifier(sink)] = sink } }
    public func remove(_ sink: any EventSink) { _ = lock.withLock { sinks.removeValue(forKey: ObjectIdentifier(sink)) } }

    /// The latest lines, oldest first: up to `keptStatistics` statistics and `keptOthers` others,
    /// merged by sequence (what a dashboard that connects late draws first).
    public var recent: [String] {
        lock.withLock { recentOthers + recentStatistics }.sorted { Self.sequence(of: $0) < Self.sequence(of: $1) }
    }

    /// Writes an event of `type` with `fields` (texts redacted) to every sink.
    public func emit(_ type: String, _ fields: [String: Any] = [:]) {
        emitLine(statistics: type == "statistics") { stamp in
            var object = Self.redacted(fields)
            object["type"] = type
            object["seq"] = stamp.sequence
            object["monotonicNs"] = stamp.monotonicNs
            object["time"] = EventLineWriter.timestamp(stamp)
            return JSONLine.encode(object)
        }
    }

    /// Stamps a line (`make` runs under `lock`), keeps it in `recent` and writes it to every sink.
    private func emitLine(statistics: Bool, _ make: (EventStamp) -> String) {
        order.lock()
        defer { order.unlock() }
        let line = lock.withLock { () -> (String, [any EventSink]) in
            sequence += 1
            let line = make(EventStamp.now(sequence: sequence))
            if statistics {
                recentStatistics.append(line)
                if recentStatistics.count > Self.keptStatistics { recentStatistics.removeFirst() }
            } else {
                recentOthers.append(line)
                if recentOthers.count > Self.keptOthers { recentOthers.removeFirst() }
            }
            return (line, sinkList)
        }
        for sink in line.1 { sink.write(line: line.0) }
    }

    /// The statistics line, written into the kept buffer (the same JSON as `emit` would write).
    func emitStatistics(_ figures: LivePusherStatistics, paused: Bool, destinations: [LivePushDestinationStatus]) {
        emitLine(statistics: true) { stamp in
            let urls = destinations.map { redactedURL($0.url) }
            writer.statistics(figures, destinations: destinations, redactedURLs: urls, paused: paused, stamp: stamp)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
    }

    /// `Redaction.redact(url)`, remembered: called under `lock`.
    private func redactedURL(_ url: String) -> String {
        if let known = redactedURLCache[url] { return known }
        if redactedURLCache.count > 64 { redactedURLCache.removeAll() }
        let redacted = Redaction.redact(url)
        redactedURLCache[url] = redacted
        return redacted
    }

    private static func sequence(of line: String) -> Int {
        guard let range = line.range(of: "\"seq\":") else { return 0 }
        return Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    private static func redacted(_ value: [String: Any]) -> [String: Any] {
        value.mapValues { redactedValue($0) }
    }

    private static func redactedValue(_ value: Any) -> Any {
        switch value {
        case let text as String: return Redaction.redact(text)
        case let object as [String: Any]: return redacted(object)
        case let array as [Any]: return array.map(redactedValue)
        default: return value
        }
    }

    // MARK: LivePusherObserver: encode, then forward

    public func onError(code: Int32, message: String, extraInfo: [String: String]) {
        emit("error", ["code": Int(code), "message": message, "extraInfo": extraInfo])
        downstream?.onError(code: code, message: message, extraInfo: extraInfo)
    }

    public func onWarning(code: Int32, message: String, extraInfo: [String: String]) {
        emit("warning", ["code": Int(code), "message": message, "extraInfo": extraInfo])
        downstream?.onWarning(code: code, message: message, extraInfo: extraInfo)
    }

    public func onCaptureFirstVideoFrame() {
        emit("firstVideoFrame")
        downstream?.onCaptureFirstVideoFrame()
    }

    public func onScreenCaptureStarted() {
        emit("captureStarted")
        downstream?.onScreenCaptureStarted()
    }

    public func onScreenCaptureStopped(reason: Int32) {
        emit("captureStopped", ["reason": Int(reason)])
        downstream?.onScreenCaptureStopped(reason: reason)
    }

    public func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
        emit("pushStatus", ["status": ControlJSON.name(of: status), "statusCode": Int(status.rawValue),
                            "message": message, "url": extraInfo["url"] ?? "", "extraInfo": extraInfo])
        downstream?.onPushStatusUpdate(status: status, message: message, extraInfo: extraInfo)
    }

    public func onStatisticsUpdate(_ statistics: LivePusherStatistics) {
        let figures = pusher?.pausedAndDestinations
        emitStatistics(statistics, paused: figures?.paused ?? false, destinations: figures?.destinations ?? [])
        downstream?.onStatisticsUpdate(statistics)
    }

    public func onLocalRecordBegin(code: Int32, storagePath: String) {
        emit("recordBegin", ["code": Int(code), "path": storagePath])
        downstream?.onLocalRecordBegin(code: code, storagePath: storagePath)
    }

    public func onLocalRecording(durationMs: Int, storagePath: String) {
        emit("recordProgress", ["durationMs": durationMs, "path": storagePath])
        downstream?.onLocalRecording(durationMs: durationMs, storagePath: storagePath)
    }

    public func onLocalRecordComplete(code: Int32, storagePath: String) {
        emit("recordComplete", ["code": Int(code), "path": storagePath])
        downstream?.onLocalRecordComplete(code: code, storagePath: storagePath)
    }

    public func onReplaySaved(code: Int32, path: String, durationMs: Int) {
        emit("replaySaved", ["code": Int(code), "path": path, "durationMs": durationMs])
        downstream?.onReplaySaved(code: code, path: path, durationMs: durationMs)
    }

    public func onLocalRecordPaused(storagePath: String) {
        emit("recordPaused", ["path": storagePath])
        downstream?.onLocalRecordPaused(storagePath: storagePath)
    }

    public func onLocalRecordResumed(storagePath: String) {
        emit("recordResumed", ["path": storagePath])
        downstream?.onLocalRecordResumed(storagePath: storagePath)
    }

    public func onLocalRecordSplit(previousPath: String, durationMs: Int, sizeBytes: Int64, nextPath: String) {
        emit("recordSplit", ["previousPath": previousPath, "durationMs": durationMs, "sizeBytes": Int(sizeBytes),
                             "path": nextPath])
        downstream?.onLocalRecordSplit(previousPath: previousPath, durationMs: durationMs, sizeBytes: sizeBytes,
                                       nextPath: nextPath)
    }

    public func onCaptureFirstAudioFrame() {
        emit("firstAudioFrame")
        downstream?.onCaptureFirstAudioFrame()
    }

    public func onMicrophoneVolumeUpdate(volume: Int) {
        onMicrophoneVolumeUpdate(volume: volume, muted: false)
    }

    public func onMicrophoneVolumeUpdate(volume: Int, muted: Bool) {
        emitLine(statistics: false) { stamp in
            writer.volume(volume, muted: muted, stamp: stamp)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        downstream?.onMicrophoneVolumeUpdate(volume: volume, muted: muted)
    }

    public func onProcessAudioFrame(_ frame: inout AudioFrame) {
        downstream?.onProcessAudioFrame(&frame)
    }

    public func onBGMStarted(path: String, durationMs: Int) {
        emit("bgmStarted", ["path": path, "durationMs": durationMs])
        downstream?.onBGMStarted(path: path, durationMs: durationMs)
    }

    public func onBGMProgress(positionMs: Int, durationMs: Int) {
        emit("bgmProgress", ["positionMs": positionMs, "durationMs": durationMs])
        downstream?.onBGMProgress(positionMs: positionMs, durationMs: durationMs)
    }

    public func onBGMComplete(path: String) {
        emit("bgmComplete", ["path": path])
        downstream?.onBGMComplete(path: path)
    }

    public func onBGMError(code: Int32, message: String, path: String) {
        emit("bgmError", ["code": Int(code), "message": message, "path": path])
        downstream?.onBGMError(code: code, message: message, path: path)
    }

    public func onVoiceActivityDetected(_ active: Bool) {
        emit("voiceActivity", ["active": active])
        downstream?.onVoiceActivityDetected(active)
    }

    /// Forwarded only (a picture is no event line): the application's video hook.
    public func onProcessVideoFrame(_ frame: inout VideoProcessFrame) {
        downstream?.onProcessVideoFrame(&frame)
    }

    public func onStateChanged(_ state: LivePusherState) {
        emit("state", ["state": state.rawValue])
        downstream?.onStateChanged(state)
    }

    public func onPushPaused() {
        emit("pushPaused")
        downstream?.onPushPaused()
    }

    public func onPushResumed() {
        emit("pushResumed")
        downstream?.onPushResumed()
    }

    public func onNetworkPoor() {
        emit("networkPoor")
        downstream?.onNetworkPoor()
    }

    public func onNetworkRecovered() {
        emit("networkRecovered")
        downstream?.onNetworkRecovered()
    }

    public func onPreviewStarted() {
        emit("previewStarted")
        downstream?.onPreviewStarted()
    }

    public func onPreviewStopped() {
        emit("previewStopped")
        downstream?.onPreviewStopped()
    }

    /// Forwarded only: the PNG is the application's.
    public func onSnapshotComplete(image: [UInt8]?, error: String?) {
        downstream?.onSnapshotComplete(image: image, error: error)
    }
}
