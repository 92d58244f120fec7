import CaptureLink
import LinuxSystem
import Media
import Synchronization

/// SEI messages waiting for the access units they go into (`LivePusher.sendMessage`): each is
/// an H.264 SEI `user_data_unregistered` whose payload is `LivePushSEI.uuid` followed by the
/// text in UTF-8, inserted into `repeatCount` consecutive frames (or keyframes, with
/// `keyFrameOnly`) once `delayMs` has passed. Frames carry every message due at once.
struct SEIMessageQueue {
    struct Message {
        var payload: [UInt8]
        var remaining: Int
        var dueNs: UInt64
        var keyFrameOnly: Bool
        /// Frames since this keyframe-only message last went out (huge until it first does).
        var framesSinceSent = Int.max / 2
    }

    private(set) var messages: [Message] = []

    mutating func add(text: String, repeatCount: Int, delayMs: Int, keyFrameOnly: Bool, nowNs: UInt64) {
        messages.append(Message(payload: LivePushSEI.uuid + Array(text.utf8), remaining: repeatCount,
                                dueNs: nowNs + UInt64(delayMs) * 1_000_000, keyFrameOnly: keyFrameOnly))
    }

    /// Whether the next frame should be a keyframe for a keyframe-only message: one is due and
    /// has not gone out within the last `gopFrames` frames. Its first keyframe thus comes at
    /// once, the repeats a GOP apart (where libx264 puts its own keyframes, counted from the
    /// forced one). A keyframe the encoder makes by itself (a scene cut) cannot be foreseen, so
    /// these keyframes are asked for.
    func wantsKeyframe(nowNs: UInt64, gopFrames: Int) -> Bool {
        messages.contains { $0.keyFrameOnly && $0.dueNs <= nowNs && $0.framesSinceSent + 1 >= gopFrames }
    }

    /// The payloads for a frame encoded now (a keyframe or not); each counts one of its repeats.
    mutating func take(nowNs: UInt64, isKeyframe: Bool) -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        for index in messages.indices {
            let message = messages[index]
            if message.dueNs <= nowNs && (isKeyframe || !message.keyFrameOnly) {
                payloads.append(message.payload)
                messages[index].remaining -= 1
                messages[index].framesSinceSent = 0
            } else if message.keyFrameOnly {
                messages[index].framesSinceSent = min(Int.max / 2, message.framesSinceSent + 1)
            }
        }
        messages.removeAll { $0.remaining <= 0 }
        return payloads
    }
}

/// What the SEI messages of LivePush are: their UUID and limits (docs/guide.md, "SEI messages").
public enum LivePushSEI {
    /// The UUID (ISO/IEC 11578) that starts every LivePush SEI payload:
    /// 9e9fd6a1-7229-4520-b968-715582e61058. A player looks for it to tell our messages from
    /// others (x264 writes its own options in a user_data_unregistered SEI of its own UUID).
    public static let uuid: [UInt8] = [0x9E, 0x9F, 0xD6, 0xA1, 0x72, 0x29, 0x45, 0x20,
                                       0xB9, 0x68, 0x71, 0x55, 0x82, 0xE6, 0x10, 0x58]
    /// The longest text, in UTF-8 bytes.
    public static let maxTextBytes = UserDataSEI.maxPayloadBytes
    /// Repeat counts accepted (frames, or keyframes with keyFrameOnly).
    public static let repeatCountRange = 1...1000
    /// Delays accepted, ms.
    public static let delayMsRange = 0...600_000

    /// Why a message cannot be sent, or nil when it can.
    public static func problem(text: String, repeatCount: Int, delayMs: Int) -> String? {
        let bytes = text.utf8.count
        if bytes == 0 { return "the message is empty; send some text (JSON is a good choice)" }
        if bytes > maxTextBytes { return "the message has \(bytes) bytes; send at most \(maxTextBytes)" }
        if !repeatCountRange.contains(repeatCount) {
            return "repeat count \(repeatCount): use \(repeatCountRange.lowerBound) to \(repeatCountRange.upperBound) frames"
        }
        if !delayMsRange.contains(delayMs) {
            return "delay \(delayMs) ms: use \(delayMsRange.lowerBound) to \(delayMsRange.upperBound) ms"
        }
        return nil
    }
}

/// The video pipeline's SEI stage, just before encoding: it attaches the due messages to the
/// picture and asks for the keyframes that keyframe-only messages go into. Thread-safe:
/// messages arrive from any thread, frames from the pipeline's.
final class SEIInjector: Sendable {
    private let queue = Mutex(SEIMessageQueue())
    private let gopFrames: Int

    init(gopFrames: Int) {
        self.gopFrames = max(1, gopFrames)
    }

    func add(text: String, repeatCount: Int, delayMs: Int, keyFrameOnly: Bool) {
        let nowNs = MonotonicClock.nowNs()
        queue.withLock { $0.add(text: text, repeatCount: repeatCount, delayMs: delayMs, keyFrameOnly: keyFrameOnly,
                                nowNs: nowNs) }
    }

    /// Messages not yet sent in full.
    var pendingCount: Int { queue.withLock { $0.messages.count } }

    /// Attaches the messages due to `frame`; returns whether to make it a keyframe (`forceKeyframe`,
    /// or one that a keyframe-only message asks for).
    func prepare(_ frame: VideoFrame, forceKeyframe: Bool) -> Bool {
        let nowNs = MonotonicClock.nowNs()
        let (keyframe, payloads) = queue.withLock { queue -> (Bool, [[UInt8]]) in
            guard !queue.messages.isEmpty else { return (forceKeyframe, []) }
            let keyframe = forceKeyframe || queue.wantsKeyframe(nowNs: nowNs, gopFrames: gopFrames)
            return (keyframe, queue.take(nowNs: nowNs, isKeyframe: keyframe))
        }
        if !payloads.isEmpty { try? frame.setUserDataSEI(payloads) }  // only fails without memory: the frame goes without
        return keyframe
    }
}
