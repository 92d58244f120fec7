import CaptureLink
import Foundation

/// Collects a pusher endpoint's events from its link thread and lets a test wait for one.
public final class EventRecorder: @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [CaptureLinkEvent] = []
    /// When set, called on the link thread for each frame event (to borrow at once, as a consumer does).
    public var onFrame: (@Sendable (FrameInfo) -> Void)?

    public init() {}

    public func record(_ event: CaptureLinkEvent) {
        if case .frame(let info) = event { onFrame?(info) }
        condition.lock()
        events.append(event)
        condition.broadcast()
        condition.unlock()
    }

    public var all: [CaptureLinkEvent] {
        condition.lock()
        defer { condition.unlock() }
        return events
    }

    /// Waits until an event matching `predicate` arrives; returns it, or nil after `timeoutSeconds`.
    public func wait(timeoutSeconds: Double = 5, for predicate: (CaptureLinkEvent) -> Bool) -> CaptureLinkEvent? {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        condition.lock()
        defer { condition.unlock() }
        var checked = 0
        while true {
            while checked < events.count {
                if predicate(events[checked]) { return events[checked] }
                checked += 1
            }
            if !condition.wait(until: deadline) { return nil }
        }
    }
}

/// A private, short runtime directory for one test's rendezvous (Unix socket paths are short).
public func privateRuntimeDirectory() -> String {
    let path = "/tmp/lpl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    mkdir(path, 0o700)
    return path
}

extension CaptureLinkEvent {
    public var isConnected: Bool { if case .connected = self { return true } else { return false } }
    public var isStarted: Bool { if case .started = self { return true } else { return false } }
    public var violation: ProtocolViolation? { if case .violation(let v, _) = self { return v } else { return nil } }
    public var frame: FrameInfo? { if case .frame(let info) = self { return info } else { return nil } }
    public var lostReason: String? { if case .lost(let reason) = self { return reason } else { return nil } }
    public var rejection: (ErrorCode, String)? { if case .rejected(let code, let text) = self { return (code, text) } else { return nil } }
    public var finished: (UInt32, String)? { if case .finished(let code, let text) = self { return (code, text) } else { return nil } }
}
