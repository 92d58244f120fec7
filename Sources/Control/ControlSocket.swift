import CaptureLink
import CLinuxShim
import Foundation
import Glibc

/// Where control sockets live and the Unix-socket calls both ends use:
/// `$XDG_RUNTIME_DIR/livepush/<name>.control` (else `/tmp/livepush-<uid>/`), beside the group
/// sockets, in the same private 0700 directory; the socket itself is 0600.
public enum ControlSocket {
    /// The socket of broadcast `name` (a group name: 1 to 64 of A-Z a-z 0-9 . _ -).
    public static func path(name: String, runtimeDirectory: String? = nil) throws(ControlError) -> String {
        let rendezvous: Rendezvous
        do { rendezvous = try Rendezvous(group: name, runtimeDirectory: runtimeDirectory) } catch {
            throw .invalidValue(command: "name", value: name, reason: "\(error)")
        }
        let path = rendezvous.directory + "/" + name + ".control"
        guard path.utf8.count < 108 else {
            throw .invalidValue(command: "name", value: name, reason: "the socket path \(path) is too long; use a shorter name")
        }
        return path
    }

    /// The directory holding every control socket of this user.
    public static func directory(runtimeDirectory: String? = nil) -> String {
        // "x" is a valid group, so this cannot fail.
        (try? Rendezvous(group: "x", runtimeDirectory: runtimeDirectory).directory) ?? "/tmp/livepush-\(getuid())"
    }

    /// The names of the broadcasts whose control socket answers (stale sockets are skipped), sorted.
    public static func runningNames(runtimeDirectory: String? = nil) -> [String] {
        let directory = directory(runtimeDirectory: runtimeDirectory)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.filter { $0.hasSuffix(".control") }.map { String($0.dropLast(".control".count)) }.filter { name in
            guard let fd = try? connect(path: directory + "/" + name + ".control") else { return false }
            close(fd)
            return true
        }.sorted()
    }

    static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            let utf8 = Array(path.utf8.prefix(107))
            bytes.copyBytes(from: utf8)
            bytes[utf8.count] = 0
        }
        return address
    }

    /// A connected stream socket to `path`.
    static func connect(path: String) throws(ControlError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotConnect(path: path, reason: String(cString: strerror(errno))) }
        var address = address(path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let reason = errno == ENOENT ? "no such socket (is the broadcast running?)"
                : errno == ECONNREFUSED ? "nobody listens (the broadcast ended)" : String(cString: strerror(errno))
            close(fd)
            throw .cannotConnect(path: path, reason: reason)
        }
        return fd
    }

    /// Writes all of `text` plus a newline; false when the peer is gone. Never raises SIGPIPE.
    static func writeLine(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// The uid of the process at the other end of `fd`, or nil when it cannot be read.
    static func peerUID(_ fd: Int32) -> uid_t? {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        return CLinuxShim_peer_credentials(fd, &pid, &uid, &gid) == 0 ? uid : nil
    }
}

/// Reads newline-terminated lines from a stream socket, each at most `maxBytes`.
final class LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    let maxBytes: Int

    enum Failure: Error { case closed, tooLong }

    init(fd: Int32, maxBytes: Int = 64 * 1024) {
        self.fd = fd
        self.maxBytes = maxBytes
    }

    /// The next line without its newline; `.closed` at the end of the stream.
    func next() throws(Failure) -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            guard buffer.count <= maxBytes else { throw .tooLong }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .closed }
            buffer += chunk[..<count]
        }
    }
}
