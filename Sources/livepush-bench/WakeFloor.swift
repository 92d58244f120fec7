import CaptureLink
import CommandLineSupport
import Foundation
import LinuxSystem

/// The floor under the hand-off latency: one process sends a bare 16-byte timestamp over a
/// SOCK_SEQPACKET socket at 60 Hz, another blocks in recv and notes how late it woke. No
/// protocol, no ring, no validation: what the kernel and the scheduler cost on this machine.
enum WakeFloor {
    /// The receiving side, run by `livepush-bench link`; returns the wake-up delays in µs.
    static func measureUs(seconds: Double) throws -> [Double] {
        let directory = "/tmp/lpf-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(directory, 0o700)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/floor.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw CaptureBenchmark.Failure(description: "floor socket") }
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        sender.arguments = ["wake-floor-sender", path, String(seconds)]
        try sender.run()
        let connection = accept(listener, nil, nil)
        defer { close(connection) }
        var delays: [Double] = []
        var sentNs: UInt64 = 0
        while recv(connection, &sentNs, 8, 0) == 8 {
            delays.append(Double(MonotonicClock.nowNs() - sentNs) / 1000)
        }
        sender.waitUntilExit()
        return delays
    }

    /// The sending side: `livepush-bench wake-floor-sender PATH SECONDS`.
    static func send(_ arguments: [String]) -> Never {
        guard arguments.count == 2, let seconds = Double(arguments[1]) else { Terminal.exit(.usage) }
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(arguments[0].utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { Terminal.exit(.failure) }
        let startNs = MonotonicClock.nowNs(), intervalNs: UInt64 = 1_000_000_000 / 60
        var tick: UInt64 = 1
        while Double(tick) / 60 < seconds {
            MonotonicClock.sleep(untilNs: startNs + tick * intervalNs)
            var nowNs = MonotonicClock.nowNs()
            _ = Glibc.send(fd, &nowNs, 8, 0)
            tick += 1
        }
        close(fd)
        Terminal.exit(.success)
    }
}
