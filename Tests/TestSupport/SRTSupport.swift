import Foundation
import Glibc

/// A free UDP port on 127.0.0.1 (bound to port 0, read, released).
public func freeUDPPort() throws -> UInt16 { try freeLoopbackPort(type: SOCK_DGRAM) }

/// A free port of socket `type` on 127.0.0.1: bound to port 0, read, released.
func freeLoopbackPort(type: __socket_type) throws -> UInt16 {
    let probe = socket(AF_INET, Int32(type.rawValue), 0)
    defer { Glibc.close(probe) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return UInt16(bigEndian: address.sin_port)
}

func loopbackAddress(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// Whether something has a UDP socket bound to 127.0.0.1:`port` (read from /proc/net/udp).
public func udpPortIsBound(_ port: UInt16) -> Bool {
    let table = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
    let local = String(format: "0100007F:%04X", port)
    return table.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first == Substring(local) }
}

/// A real SRT receiver: `ffmpeg -i 'srt://127.0.0.1:PORT?mode=listener...' -c copy FILE.ts`, which
/// keeps what one caller sends, as MPEG-TS, until the caller goes away.
public final class SRTListener: @unchecked Sendable {
    public let port: UInt16
    public let outputPath: String
    private let command: RunningCommand

    /// Starts ffmpeg listening (with `passphrase` when given) and waits until its UDP port is bound.
    public init(passphrase: String? = nil, latencyMs: Int = 120, port: UInt16? = nil) throws {
        self.port = try port ?? freeUDPPort()
        outputPath = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("srt")).path + ".ts"
        var url = "srt://127.0.0.1:\(self.port)?mode=listener&latency=\(latencyMs * 1000)"
        if let passphrase { url += "&passphrase=\(passphrase)" }
        command = try ProcessRunner.start("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", url, "-c", "copy",
                                                     "-f", "mpegts", outputPath])
        let deadline = Date().addingTimeInterval(10)
        while !udpPortIsBound(self.port) {
            guard command.isRunning, Date() < deadline else {
                if command.isRunning { Glibc.kill(command.processIdentifier, SIGKILL) }
                throw MediaProbe.Failed(result: command.finish())
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// The URL a caller uses, with `query` (e.g. `streamid=...&passphrase=...`).
    public func callerURL(_ query: String = "") -> String {
        "srt://127.0.0.1:\(port)" + (query.isEmpty ? "" : "?" + query)
    }

    /// Kills ffmpeg at once (SIGKILL), as a crashed server goes: the caller hears nothing more.
    public func kill() {
        Glibc.kill(command.processIdentifier, SIGKILL)
        _ = command.finish()
    }

    /// Waits (at most `timeoutSeconds`) for ffmpeg to end after the caller left; SIGINT after that.
    public func finish(timeoutSeconds: Double = 15) -> CommandResult {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while command.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let timedOut = command.isRunning
        if timedOut { Glibc.kill(command.processIdentifier, SIGKILL) }
        return command.finish(timedOut: timedOut)
    }

    deinit {
        // A listener no caller ever reached (a refused passphrase) ignores SIGINT in its accept:
        // SIGKILL, and reap it.
        if command.isRunning {
            Glibc.kill(command.processIdentifier, SIGKILL)
            _ = command.finish()
        }
        try? FileManager.default.removeItem(atPath: outputPath)
    }
}

/// A UDP relay on 127.0.0.1 in front of `targetPort`, for SRT: it drops `dropPercent` of the
/// datagrams in each direction (at random) and can hold the caller's side to `rateKbps` (a token
/// bucket over a queue of at most `queueMs` of traffic at that rate; what does not fit is dropped,
/// as a slow router does). `rateKbps` may change while it runs; 0 means unlimited.
///
/// The random loss spares SRT's handshake packets (control type 0): the receiver, ffmpeg's
/// listener, takes one caller and closes its listening socket once it has accepted it, so when
/// its answer to the caller's conclusion request is lost, the caller's repeats go unanswered, its
/// connect fails, and no retry finds a listener again (a real server keeps listening and answers
/// the repeat). With 5 % loss both ways that ended about one run in twenty with no stream at all.
/// What the loss tests measure is the retransmission of media, so only that is lost.
public final class UDPProxy: @unchecked Sendable {
    public let port: UInt16
    private let socketToCaller: Int32
    private let socketToServer: Int32
    private let lock = NSLock()
    private var rate: Int
    private let dropPercent: Double
    private let queueMs: Int
    private var callerAddress: sockaddr_in?
    private var closed = false
    private var counts = (forwarded: 0, dropped: 0)
    private var handshakes = 0
    /// How long each datagram from the server waits before it goes on to the caller (a longer path
    /// back: SRT's acknowledgements come later, so the round trip grows by this much).
    private let returnDelayMs: Int
    private let returnQueue = DispatchQueue(label: "udp-proxy-return")

    public init(targetPort: UInt16, dropPercent: Double = 0, rateKbps: Int = 0, queueMs: Int = 200,
                returnDelayMs: Int = 0) throws {
        rate = rateKbps
        self.returnDelayMs = returnDelayMs
        self.dropPercent = dropPercent
        self.queueMs = queueMs
        let toCaller = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let toServer = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(toCaller, $0, length) == 0 && getsockname(toCaller, $0, &length) == 0
            }
        }
        var target = loopbackAddress(port: targetPort)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(toServer, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        socketToCaller = toCaller
        socketToServer = toServer
        guard bound, connected else { throw POSIXError(.EADDRINUSE) }
        port = UInt16(bigEndian: address.sin_port)
        for descriptor in [socketToCaller, socketToServer] {
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        Thread { [self] in fromCaller() }.start()
        Thread { [self] in fromServer() }.start()
    }

    public var rateKbps: Int {
        get { lock.withLock { rate } }
        set { lock.withLock { rate = newValue } }
    }

    /// Datagrams forwarded and dropped so far, both directions.
    public var forwardedAndDropped: (forwarded: Int, dropped: Int) { lock.withLock { counts } }

    /// SRT handshake packets seen (and always forwarded), both directions.
    public var handshakesForwarded: Int { lock.withLock { handshakes } }

    public func close() {
        lock.withLock { closed = true }
    }

    deinit {
        close()
        Glibc.close(socketToCaller)
        Glibc.close(socketToServer)
    }

    private var isClosed: Bool { lock.withLock { closed } }

    /// Whether `datagram` is an SRT handshake: a control packet (first bit set) of type 0.
    static func isSRTHandshake(_ datagram: ArraySlice<UInt8>) -> Bool {
        guard datagram.count >= 2, let first = datagram.first else { return false }
        return first & 0x80 != 0 && (first & 0x7f) == 0 && datagram[datagram.startIndex + 1] == 0
    }

    private func shouldDrop(_ datagram: ArraySlice<UInt8>) -> Bool {
        let handshake = Self.isSRTHandshake(datagram)
        let drop = dropPercent > 0 && !handshake && Double.random(in: 0..<100) < dropPercent
        lock.withLock {
            if drop { counts.dropped += 1 } else { counts.forwarded += 1 }
            if handshake { handshakes += 1 }
        }
        return drop
    }

    private func fromCaller() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var budgetBytes = 0.0
        var lastNs = DispatchTime.now().uptimeNanoseconds
        var pending: [[UInt8]] = []
        var pendingBytes = 0
        while !isClosed {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(socketToCaller, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                    }
                }
            }
            let rateKbps = self.rateKbps
            if count > 0 {
                lock.withLock { callerAddress = from }
                if !shouldDrop(buffer[0..<count]) {
                    if rateKbps <= 0 {
                        _ = buffer.withUnsafeBytes { send(socketToServer, $0.baseAddress, count, 0) }
                    } else if pendingBytes + count <= rateKbps * 125 * queueMs / 1000 {
                        pending.append(Array(buffer[0..<count]))
                        pendingBytes += count
                    } else {
                        lock.withLock { counts.dropped += 1; counts.forwarded -= 1 }
                    }
                }
            }
            let nowNs = DispatchTime.now().uptimeNanoseconds
            budgetBytes = min(budgetBytes + Double(nowNs - lastNs) / 1e9 * Double(max(rateKbps, 0)) * 125, 4096)
            lastNs = nowNs
            while let first = pending.first, rateKbps <= 0 || budgetBytes >= Double(first.count) {
                if rateKbps > 0 { budgetBytes -= Double(first.count) }
                _ = first.withUnsafeBytes { send(socketToServer, $0.baseAddress, first.count, 0) }
                pending.removeFirst()
                pendingBytes -= first.count
            }
            if count <= 0 { usleep(500) }
        }
    }

    private func fromServer() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !isClosed {
            let count = buffer.withUnsafeMutableBytes { recv(socketToServer, $0.baseAddress, $0.count, 0) }
            guard count > 0, var caller = lock.withLock({ callerAddress }), !shouldDrop(buffer[0..<count]) else {
                continue
            }
            if returnDelayMs > 0 {
                let datagram = Array(buffer[0..<count]), socket = socketToCaller, address = caller
                returnQueue.asyncAfter(deadline: .now() + .milliseconds(returnDelayMs)) { [self] in
                    guard !isClosed else { return }
                    var caller = address
                    _ = datagram.withUnsafeBytes { bytes in
                        withUnsafePointer(to: &caller) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                sendto(socket, bytes.baseAddress, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                            }
                        }
                    }
                }
                continue
            }
            _ = buffer.withUnsafeBytes { bytes in
                withUnsafePointer(to: &caller) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(socketToCaller, bytes.baseAddress, count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
    }
}

/// Polls `condition` every `intervalSeconds` until it holds or `timeoutSeconds` pass; returns whether it held.
public func waitUntil(timeoutSeconds: Double, intervalSeconds: Double = 0.05, _ condition: () throws -> Bool) rethrows
    -> Bool
{
    let deadline = Date().addingTimeInterval(timeoutSeconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: intervalSeconds)
    }
    return try condition()
}
