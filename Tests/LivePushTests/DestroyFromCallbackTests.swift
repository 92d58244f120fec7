import Dispatch
import Foundation
import LivePush
import Testing
import TestSupport

/// Issue 29's deadlock: `LivePusher.destroy()` waited for its callback queue with `sync`, so
/// called from an observer callback (on that queue), or run by `deinit` when a callback dropped
/// the last reference, it waited for itself: libdispatch stops the process ("dispatch_sync called
/// on queue already owned by current thread"). Each test makes one callback happen (an invalid
/// push URL: `onError` at once, no server needed) and has the observer end the pusher in it.
@Suite(.timeLimit(.minutes(10))) struct DestroyFromCallbackTests {
    /// Ends the pusher in its first `onError`: by `destroy()`, or by dropping the only reference.
    final class Ender: LivePusherObserver, @unchecked Sendable {
        enum Way { case destroy, dropLastReference }
        let way: Way
        let lock = NSLock()
        var pusher: LivePusher?
        let ended = DispatchSemaphore(value: 0)

        init(_ way: Way) { self.way = way }

        func onError(code: Int32, message: String, extraInfo: [String: String]) {
            let pusher = lock.withLock { () -> LivePusher? in
                defer { if way == .dropLastReference { self.pusher = nil } }
                return way == .destroy ? self.pusher : nil
            }
            pusher?.destroy()
            ended.signal()
        }
    }

    private func config() -> LivePushConfig {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        return config
    }

    @Test func destroyCalledFromAnObserverCallbackReturns() throws {
        let ender = Ender(.destroy)
        let pusher = try LivePusher(config: config(), observer: ender)
        ender.lock.withLock { ender.pusher = pusher }
        #expect(pusher.startPush(url: "not a url") == LivePushErrorCode.invalidURL)
        #expect(ender.ended.wait(timeout: .now() + 10) == .success, "destroy() in onError never returned")
        pusher.destroy()  // a second destroy, from this thread, waits for the queue and returns
    }

    @Test func theLastReferenceDroppedInACallbackEndsThePusher() throws {
        let ender = Ender(.dropLastReference)
        weak var weakPusher: LivePusher?
        do {
            let pusher = try LivePusher(config: config(), observer: ender)
            weakPusher = pusher
            ender.lock.withLock { ender.pusher = pusher }
            #expect(pusher.startPush(url: "not a url") == LivePushErrorCode.invalidURL)
        }  // the observer now holds the only reference; the callback drops it (deinit on the queue)
        #expect(ender.ended.wait(timeout: .now() + 10) == .success, "the callback that ended the pusher never returned")
        #expect(waitUntil(timeoutSeconds: 5) { weakPusher == nil }, "the pusher was not freed")
    }
}
