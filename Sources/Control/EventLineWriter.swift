import CaptureLink
import CLinuxShim
import Glibc
import LinuxSystem
import LivePush

/// What every event line carries besides its fields: its sequence number and its two clocks.
struct EventStamp {
    var sequence: Int
    var monotonicNs: UInt64
    /// CLOCK_REALTIME, whole seconds and the milliseconds after them.
    var wallSeconds: Int64
    var wallMilliseconds: Int32

    static func now(sequence: Int) -> EventStamp {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        return EventStamp(sequence: sequence, monotonicNs: MonotonicClock.nowNs(), wallSeconds: Int64(wall.tv_sec),
                          wallMilliseconds: Int32(wall.tv_nsec / 1_000_000))
    }
}

/// The once-a-second event lines (statistics, volume) written straight into one byte buffer kept
/// from line to line: no dictionary, no boxed values, no Foundation formatter (issue 22 item 6).
/// The bytes are the same as `JSONLine.encode` of the same fields (keys in sorted order, the same
/// number and string spelling); ControlTests compare the two.
struct EventLineWriter {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(2048) }

    /// The statistics event: `ControlJSON.object(statistics)` with `destinations` and `paused`.
    mutating func statistics(_ figures: LivePusherStatistics, destinations: [LivePushDestinationStatus],
                             redactedURLs: [String], paused: Bool, stamp: EventStamp) {
        begin()
        int("appCpu", figures.appCpu)
        int("audioBitrateKbps", figures.audioBitrateKbps)
        int("audioChannels", figures.audioChannels)
        int("audioGapMs", figures.audioGapMs)
        int("audioSampleRateHz", figures.audioSampleRateHz)
        int("bytesSent", figures.bytesSent)
        int("delayMs", figures.delayMs)
        int("desktopLevel", figures.desktopLevel)
        key("destinations")
        bytes.append(UInt8(ascii: "["))
        for (index, destination) in destinations.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            self.destination(destination, redactedURL: redactedURLs[index])
        }
        bytes.append(UInt8(ascii: "]"))
        int("encoderBitrateKbps", figures.encoderBitrateKbps)
        int("fps", figures.fps)
        int("framesDropped", figures.framesDropped)
        int("framesRepeated", figures.framesRepeated)
        int("framesSkipped", figures.framesSkipped)
        int("height", figures.height)
        int("jitterMs", figures.jitterMs)
        int("keyframesForced", figures.keyframesForced)
        int("micLevel", figures.micLevel)
        unsigned("monotonicNs", stamp.monotonicNs)
        bool("paused", paused)
        int("queueDelayMs", figures.queueDelayMs)
        int("queueJitterMs", figures.queueJitterMs)
        int("queueMs", figures.queueMs)
        int("recordingBytes", Int(figures.recordingBytes))
        int("replayBufferBytes", Int(figures.replayBufferBytes))
        int("sendBitrateKbps", figures.sendBitrateKbps)
        int("seq", stamp.sequence)
        int("sourceHeight", figures.sourceHeight)
        int("sourceWidth", figures.sourceWidth)
        int("systemCpu", figures.systemCpu)
        time(stamp)
        string("type", "statistics")
        int("videoBitrateKbps", figures.videoBitrateKbps)
        double("videoProcessMs", figures.videoProcessMs)
        int("videoSkippedFrames", figures.videoSkippedFrames)
        int("width", figures.width)
        end()
    }

    /// The volume event.
    mutating func volume(_ volume: Int, muted: Bool = false, stamp: EventStamp) {
        begin()
        unsigned("monotonicNs", stamp.monotonicNs)
        bool("muted", muted)
        int("seq", stamp.sequence)
        time(stamp)
        string("type", "volume")
        int("volume", volume)
        end()
    }

    /// `ControlJSON.object(destination)`, keys sorted; `redactedURL` is its URL through `Redaction`.
    private mutating func destination(_ destination: LivePushDestinationStatus, redactedURL: String) {
        bytes.append(UInt8(ascii: "{"))
        int("bytesSent", destination.bytesSent)
        int("delayMs", destination.delayMs)
        int("framesDropped", destination.framesDropped)
        int("index", destination.index)
        int("jitterMs", destination.jitterMs)
        string("keyFingerprint", destination.keyFingerprint)
        if let label = destination.label { string("label", label) }
        int("queueDelayMs", destination.queueDelayMs)
        int("queueMs", destination.queueMs)
        int("sendBitrateKbps", destination.sendBitrateKbps)
        string("status", ControlJSON.name(of: destination.status))
        string("url", redactedURL)
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func begin() {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(UInt8(ascii: "{"))
    }

    private mutating func end() { bytes.append(UInt8(ascii: "}")) }

    /// `"name":`, after a comma unless it opens its object.
    private mutating func key(_ name: StaticString) {
        if bytes.last != UInt8(ascii: "{") { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func int(_ name: StaticString, _ value: Int) {
        key(name)
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        digits(value.magnitude)
    }

    private mutating func unsigned(_ name: StaticString, _ value: UInt64) {
        key(name)
        digits(UInt(value))
    }

    private mutating func digits(_ value: UInt) {
        var divisor: UInt = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8((value / divisor) % 10))
            divisor /= 10
        }
    }

    private mutating func bool(_ name: StaticString, _ value: Bool) {
        key(name)
        if value { append("true") } else { append("false") }
    }

    /// Swift's own spelling of a Double (what `JSONLine` writes); a short text needs no allocation.
    private mutating func double(_ name: StaticString, _ value: Double) {
        key(name)
        guard value.isFinite else { return append("null") }
        var text = value.description
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A JSON string with `JSONLine`'s escapes.
    private mutating func string(_ name: StaticString, _ text: String) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case UInt8(ascii: "\n"): append("\\n")
            case UInt8(ascii: "\r"): append("\\r")
            case UInt8(ascii: "\t"): append("\\t")
            case 0..<0x20:
                append("\\u00")
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// `"time":"YYYY-MM-DDTHH:MM:SS.mmmZ"`, formatted in place.
    private mutating func time(_ stamp: EventStamp) {
        key("time")
        timeValue(stamp)
    }

    private mutating func timeValue(_ stamp: EventStamp) {
        bytes.append(UInt8(ascii: "\""))
        var text = (Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0),
                    Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0),
                    Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0), Int8(0),
                    Int8(0), Int8(0))
        withUnsafeMutableBytes(of: &text) { raw in
            let out = raw.bindMemory(to: CChar.self)
            let length = CLinuxShim_format_utc_ms(out.baseAddress, out.count, stamp.wallSeconds,
                                                  stamp.wallMilliseconds)
            if length > 0 { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[..<Int(length)])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The same text, timestamp alone (for the other events, still written through `JSONLine`).
    static func timestamp(_ stamp: EventStamp) -> String {
        var writer = EventLineWriter()
        writer.timeValue(stamp)
        return String(decoding: writer.bytes.dropFirst().dropLast(), as: UTF8.self)  // between the quotes
    }
}
