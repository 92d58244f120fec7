import CaptureLink
import Foundation
import Synchronization

/// A pusher endpoint in a private runtime directory whose consumer borrows and releases every frame
/// and counts them: what the capture benchmarks feed a helper into. `inspect` sees each borrowed frame
/// on the link thread before it is released (the camera benchmark reads its time stamp there).
final class CountingEndpoint: Sendable {
    let runtime: String
    let endpoint: PusherEndpoint
    private let counter: Counter

    private final class Counter: Sendable { let frames = Atomic<Int>(0) }

    /// Frames received so far.
    var count: Int { counter.frames.load(ordering: .relaxed) }

    init(group: String, fps: UInt32 = 30, inspect: (@Sendable (BorrowedFrame) -> Void)? = nil) throws {
        let runtime = "/tmp/lpb-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(runtime, 0o700)
        let counter = Counter()
        let box = Mutex<PusherEndpoint?>(nil)
        var configuration = PusherEndpointConfiguration(group: group)
        configuration.runtimeDirectory = runtime
        configuration.fps = fps
        let made = try PusherEndpoint(configuration: configuration) { event in
            if case .frame = event {
                if let frame = box.withLock({ $0 })?.acquireLatestFrame() {
                    inspect?(frame)
                    frame.release()
                }
                counter.frames.add(1, ordering: .relaxed)
            }
        }
        box.withLock { $0 = made }
        endpoint = made
        self.runtime = runtime
        self.counter = counter
    }

    /// Stops the endpoint and removes its runtime directory.
    func stop() {
        endpoint.stop()
        try? FileManager.default.removeItem(atPath: runtime)
    }
}
