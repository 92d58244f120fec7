import CaptureLink
import CLinuxShim
import Foundation
import Glibc
import LinuxSystem

/// The control socket of one broadcast: accepts connections from this user only (SO_PEERCRED),
/// answers each request line (docs/control.md) with one line, and streams events to clients that
/// ask for them. Each connection has its own thread; nothing a client sends or fails to read can
/// stop the broadcast (a slow event reader loses lines, never holds up the pusher).
public final class ControlServer: @unchecked Sendable {
    public let name: String
    public let path: String
    private let handler: ControlHandler
    private let listenFd: Int32
    private let running = NSLock()
    private var stopped = false
    private var started = false
    private let threadDone = DispatchSemaphore(value: 0)

    /// Binds `path(name:)`; a live socket of the same name is never taken over (`groupInUse`-like
    /// error), a stale one from a crashed broadcast is replaced.
    public init(name: String, runtimeDirectory: String? = nil, handler: ControlHandler) throws(ControlError) {
        self.name = name
        self.handler = handler
        path = try ControlSocket.path(name: name, runtimeDirectory: runtimeDirectory)
        do { try Rendezvous(group: name, runtimeDirectory: runtimeDirectory).preparePrivateDirectory() } catch {
            throw .cannotConnect(path: path, reason: "\(error)")
        }
        if let live = try? ControlSocket.connect(path: path) {
            close(live)
            throw .refused(command: "name", reason: "another broadcast named '\(name)' is running (\(path)); "
                + "stop it or give this one another --name")
        }
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotConnect(path: path, reason: String(cString: strerror(errno))) }
        var address = ControlSocket.address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .cannotConnect(path: path, reason: reason)
        }
        listenFd = fd
    }

    public func start() {
        running.withLock { started = true }
        let thread = Thread { [self] in
            ThreadName.setCurrent("livepush-ctl")
            acceptLoop()
        }
        thread.start()
    }

    /// Stops accepting and removes the socket; connections being served end with the process.
    public func stop() {
        let (wasStopped, wasStarted) = running.withLock { () -> (Bool, Bool) in
            defer { stopped = true }
            return (stopped, started)
        }
        guard !wasStopped else { return }
        if wasStarted { threadDone.wait() }
        unlink(path)
        close(listenFd)
    }

    private var isStopped: Bool { running.withLock { stopped } }

    private func acceptLoop() {
        defer { threadDone.signal() }
        while !isStopped {
            var poller = pollfd(fd: listenFd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let fd = CLinuxShim_accept_cloexec(listenFd)
            guard fd >= 0 else { continue }
            let thread = Thread { [self] in
                ThreadName.setCurrent("livepush-ctl-cl")
                serve(fd)
            }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        var keepOpen = false
        defer { if !keepOpen { close(fd) } }
        guard let uid = ControlSocket.peerUID(fd), uid == getuid() else {
            let uid = ControlSocket.peerUID(fd) ?? UInt32.max
            _ = ControlSocket.writeLine(fd, ControlHandler.failure(.peerRefused(uid: uid)))
            return
        }
        let reader = LineReader(fd: fd)
        while true {
            let line: String
            do {
                line = try reader.next()
            } catch LineReader.Failure.tooLong {
                _ = ControlSocket.writeLine(fd, ControlHandler.failure(.badRequest("a line longer than 64 KiB")))
                return
            } catch {
                return
            }
            if line.allSatisfy(\.isWhitespace) { continue }
            let (answer, command) = handler.answer(requestLine: line)
            guard ControlSocket.writeLine(fd, answer) else { return }
            if command == .events, let hub = handler.hub {
                keepOpen = true
                SocketEventSink(fd: fd, hub: hub).start()
                return
            }
        }
    }
}

/// One `events` client: lines queue here (at most `maxQueued`, the oldest lost first) and a
/// thread of its own writes them, so a reader that stalls never holds up the observer queue.
final class SocketEventSink: EventSink, @unchecked Sendable {
    private let fd: Int32
    private weak var hub: EventHub?
    private let condition = NSCondition()
    private var queue: [String] = []
    private let maxQueued = 1000

    init(fd: Int32, hub: EventHub) {
        self.fd = fd
        self.hub = hub
    }

    func start() {
        hub?.add(self)
        let thread = Thread { [self] in
            ThreadName.setCurrent("livepush-ctl-ev")
            run()
        }
        thread.start()
    }

    func write(line: String) {
        condition.lock()
        queue.append(line)
        if queue.count > maxQueued { queue.removeFirst(queue.count - maxQueued) }
        condition.signal()
        condition.unlock()
    }

    private func run() {
        defer {
            hub?.remove(self)
            close(fd)
        }
        while true {
            condition.lock()
            while queue.isEmpty { _ = condition.wait(until: Date(timeIntervalSinceNow: 1)); if queue.isEmpty { break } }
            let lines = queue
            queue = []
            condition.unlock()
            if lines.isEmpty {
                // Nothing to send for a second: is the client still there?
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 0) > 0 && poller.revents & Int16(POLLHUP | POLLERR | POLLIN) != 0 {
                    var byte: UInt8 = 0
                    if recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0 { return }
                }
                continue
            }
            for line in lines where !ControlSocket.writeLine(fd, line) { return }
        }
    }
}
