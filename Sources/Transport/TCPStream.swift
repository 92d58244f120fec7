import Glibc

/// A TCP connection with a deadline on every read and write. Errors name the step.
public final class TCPStream: ByteStream {
    let descriptor: Int32
    public private(set) var bytesReceived: UInt64 = 0

    /// Resolves `host` and connects within `timeoutMs`.
    public init(host: String, port: UInt16, timeoutMs: Int, sendBufferBytes: Int) throws(TransportError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw TransportError("cannot resolve '\(host)': \(String(cString: gai_strerror(status)))", kind: .dnsFailed)
        }
        defer { freeaddrinfo(results) }
        var lastError = "no address"
        var lastKind = TransportError.Kind.connectionRefused
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd >= 0 {
                Self.setTimeout(fd, timeoutMs)
                // A modest send buffer: when the network is slower than the stream, the backlog
                // builds in the sender's queue, where it is measured and dropped by priority,
                // rather than unseen in the kernel.
                var bufferBytes = Int32(clamping: sendBufferBytes)
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, socklen_t(MemoryLayout<Int32>.size))
                if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    descriptor = fd
                    return
                }
                lastKind = errno == ECONNREFUSED ? .connectionRefused : errno == EINPROGRESS || errno == EAGAIN || errno == ETIMEDOUT
                    ? .timedOut : .connectionRefused
                lastError = errno == ECONNREFUSED ? "connection refused (is a server listening on port \(port)?)"
                    : String(cString: strerror(errno))
                close(fd)
            } else {
                // Out of descriptors (EMFILE), say: the words of the cause, not "no address".
                lastError = "cannot make a socket: " + String(cString: strerror(errno))
            }
            entry = address.pointee.ai_next
        }
        throw TransportError("cannot connect to \(host):\(port): \(lastError)", kind: lastKind)
    }

    deinit { close(descriptor) }

    /// Makes a blocked read or write on another thread fail at once.
    public func abort() { shutdown(descriptor, Int32(SHUT_RDWR)) }

    /// TCP_INFO's smoothed round-trip time and its variation.
    public func roundTrip() -> RoundTrip? {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return nil }
        return RoundTrip(rttUs: Int(info.tcpi_rtt), rttVarianceUs: Int(info.tcpi_rttvar))
    }

    private static func setTimeout(_ fd: Int32, _ timeoutMs: Int) {
        var timeout = timeval(tv_sec: timeoutMs / 1000, tv_usec: (timeoutMs % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    public func write(_ bytes: [UInt8], step: String) throws(TransportError) {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if result < 0 {
                if errno == EINTR { continue }
                let code = errno
                let reason = code == EAGAIN ? "timed out" : String(cString: strerror(code))
                throw TransportError(step: step, reason: "sending failed: \(reason)",
                                     kind: code == EAGAIN ? .timedOut : .networkLost)
            }
            sent += result
        }
    }

    public func read(_ count: Int, step: String) throws(TransportError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var received = 0
        while received < count {
            let result = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + received, count - received, 0) }
            if result == 0 {
                throw TransportError(step: step, reason: "the server closed the connection", kind: .networkLost)
            }
            if result < 0 {
                if errno == EINTR { continue }
                let code = errno
                let reason = code == EAGAIN ? "no answer in time" : String(cString: strerror(code))
                throw TransportError(step: step, reason: reason, kind: code == EAGAIN ? .timedOut : .networkLost)
            }
            received += result
        }
        bytesReceived += UInt64(count)
        return buffer
    }
}
