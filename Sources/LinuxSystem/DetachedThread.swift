import Glibc

/// A thread of its own for a loop that runs until it is told to stop, without Foundation's `Thread`
/// (issue 36: a module that needs only this links FoundationEssentials, not Foundation and its ICU).
///
/// The thread is detached: whoever starts it waits for its end by its own means (a semaphore, a
/// flag). It names itself (`ThreadName`) before it runs `body`.
public enum DetachedThread {
    /// Starts `body` on a new thread named `name` (at most `ThreadName.maxBytes` bytes). A thread
    /// that cannot be created (out of memory or processes) is a fatal error, as with `Thread.start()`.
    /// The corresponding C function is `pthread_create`.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { argument in
            let body = Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue()
            ThreadName.setCurrent(body.name)
            body.run()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            fatalError("pthread_create for thread '\(name)' failed: \(String(cString: strerror(status)))")
        }
        pthread_detach(thread)
    }

    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }
}
