import Foundation
import Glibc

/// A TLS front of its own (nginx's stream module with ssl, the test CA's good certificate) before
/// the shared nginx-rtmp, for tests that stop and restart TLS: the environment's fronts must stay
/// up for every other test. Same port across restarts.
public final class PrivateTLSFront: @unchecked Sendable {
    public let port: UInt16
    private let directory: String
    private var process: Process?

    public init() throws {
        let certificates = try TestEnvironment.value("LIVEPUSH_TEST_TLS_DIR", of: .rtmps)
        let module = try TestEnvironment.value("LIVEPUSH_TEST_NGINX_STREAM_MODULE", of: .rtmps)
        let rtmpURL = try TestEnvironment.value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp)
        let rtmpPort = rtmpURL.split(separator: ":").last.map(String.init) ?? ""
        directory = "/tmp/lpt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try freeTCPPort()
        let config = """
            load_module \(module);
            daemon off;
            master_process on;
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log info;
            events { worker_connections 64; }
            stream {
                server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(certificates)/good.pem;
                    ssl_certificate_key \(certificates)/good.key;
                    proxy_pass 127.0.0.1:\(rtmpPort);
                }
            }
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/nginx.conf"))
        try start()
    }

    /// `rtmps://127.0.0.1:PORT/<app>/<key>` through this front.
    public func url(app: String = "record", key: String) -> String { "rtmps://127.0.0.1:\(port)/\(app)/\(key)" }

    /// Starts nginx and waits (5 s at most) until the port accepts connections.
    public func start() throws {
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = ["-p", directory + "/", "-c", directory + "/nginx.conf", "-e", directory + "/error.log"]
        nginx.standardInput = FileHandle.nullDevice
        nginx.standardOutput = FileHandle.nullDevice
        nginx.standardError = FileHandle.nullDevice
        try nginx.run()
        process = nginx
        let deadline = Date().addingTimeInterval(5)
        while !tcpPortAccepts(port) {
            guard nginx.isRunning, Date() < deadline else { throw POSIXError(.ECONNREFUSED) }
            usleep(20_000)
        }
    }

    /// Stops nginx (master and worker: every TLS connection through it breaks) and waits until it is gone.
    public func stop() {
        guard let process else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
        let deadline = Date().addingTimeInterval(5)
        while tcpPortAccepts(port) && Date() < deadline { usleep(20_000) }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A free TCP port on 127.0.0.1.
public func freeTCPPort() throws -> UInt16 { try freeLoopbackPort(type: SOCK_STREAM) }

/// Whether a TCP connection to 127.0.0.1:`port` is accepted.
public func tcpPortAccepts(_ port: UInt16) -> Bool {
    let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { Glibc.close(probe) }
    var address = loopbackAddress(port: port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
