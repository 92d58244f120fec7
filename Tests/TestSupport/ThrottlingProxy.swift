import Foundation
import Glibc

/// A TCP proxy on 127.0.0.1 that forwards to `targetPort` and lets the client send at most
/// `rateKbps` (a token bucket, 1 KiB at a time; replies pass freely). Its sockets have small
/// buffers, so a client sending faster than the rate feels it within a fraction of a second,
/// as on a slow uplink. `rateKbps` may change while it runs; 0 means unlimited.
public final class ThrottlingProxy: @unchecked Sendable {
    public let port: UInt16
    private let targetPort: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var rate: Int
    private var closed = false
    private var connections: [Int32] = []
    private let bufferBytes: Int32 = 16 * 1024

    public init(targetPort: UInt16, rateKbps: Int) throws {
        self.targetPort = targetPort
        rate = rateKbps
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var small: Int32 = 16 * 1024
        setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in acceptLoop() }.start()
    }

    public var rateKbps: Int {
        get { lock.withLock { rate } }
        set { lock.withLock { rate = newValue } }
    }

    /// Stops accepting and closes every connection.
    public func close() {
        let open = lock.withLock { () -> [Int32] in
            closed = true
            return connections
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for descriptor in open { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var small = bufferBytes
            setsockopt(server, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            var address = Self.loopback(port: targetPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let accepted = lock.withLock { () -> Bool in
                guard !closed else { return false }
                connections += [client, server]
                return true
            }
            guard connected == 0, accepted else {
                Glibc.close(client)
                Glibc.close(server)
                continue
            }
            Thread { [self] in pump(from: client, to: server, throttled: true) }.start()
            Thread { [self] in pump(from: server, to: client, throttled: false) }.start()
        }
    }

    private func pump(from source: Int32, to destination: Int32, throttled: Bool) {
        var buffer = [UInt8](repeating: 0, count: 1024)
        var budgetBytes = 0.0
        var lastNs = DispatchTime.now().uptimeNanoseconds
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, 1024, 0) }
            if count <= 0 { break }
            if throttled {
                while true {
                    let rateKbps = self.rateKbps
                    if rateKbps <= 0 { break }
                    let nowNs = DispatchTime.now().uptimeNanoseconds
                    budgetBytes = min(budgetBytes + Double(nowNs - lastNs) / 1e9 * Double(rateKbps) * 125, 4096)
                    lastNs = nowNs
                    if budgetBytes >= Double(count) {
                        budgetBytes -= Double(count)
                        break
                    }
                    usleep(2000)
                }
            }
            var sent = 0
            while sent < count {
                let result = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                if result <= 0 { break }
                sent += result
            }
            if sent < count { break }
        }
        shutdown(destination, Int32(SHUT_WR))
        shutdown(source, Int32(SHUT_RD))
    }
}

/// An nginx-rtmp of its own (tools/testenv with only nginx), for tests that stop and start the
/// server: the shared one must stay up for every other test.
public final class PrivateNginx: @unchecked Sendable {
    public let directory: String
    public let rtmpURL: String
    public let recordDirectory: String
    private var process: Process?

    public init() throws {
        directory = "/tmp/lpn-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let start = try ProcessRunner.run(Repository.path("tools/testenv"),
                                          ["start", directory, "--no-x11", "--no-pipewire"], timeoutSeconds: 30)
        guard start.exitCode == 0 else { throw POSIXError(.EIO) }
        let env = try String(contentsOfFile: directory + "/env", encoding: .utf8)
        func value(_ name: String) -> String {
            env.split(separator: "\n").first { $0.hasPrefix("export \(name)=") }
                .map { String($0.dropFirst("export \(name)=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "'")) } ?? ""
        }
        rtmpURL = value("LIVEPUSH_TEST_RTMP_URL")
        recordDirectory = value("LIVEPUSH_TEST_RTMP_RECORD_DIR")
    }

    public var port: UInt16 { UInt16(rtmpURL.split(separator: ":").last ?? "") ?? 0 }

    /// Stops the server (its testenv one, or the one `start` made) and waits until it is gone.
    public func stop() {
        if let process {
            process.terminate()
            process.waitUntilExit()
            self.process = nil
        } else {
            _ = try? ProcessRunner.run(Repository.path("tools/testenv"), ["stop", directory], timeoutSeconds: 15)
        }
    }

    /// Starts the server again on the same ports, with the same configuration.
    public func start() throws {
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = ["-p", directory + "/nginx/", "-c", directory + "/nginx/nginx.conf",
                           "-e", directory + "/logs/nginx-again.log"]
        nginx.standardInput = FileHandle.nullDevice
        nginx.standardOutput = FileHandle.nullDevice
        nginx.standardError = FileHandle.nullDevice
        try nginx.run()
        process = nginx
        for _ in 0..<100 {  // listening within 5 s
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            Glibc.close(probe)
            if connected == 0 { return }
            usleep(50_000)
        }
    }

    deinit {
        stop()
        _ = try? ProcessRunner.run(Repository.path("tools/testenv"), ["stop", directory, "--clean"], timeoutSeconds: 15)
    }
}
