import CLinuxShim
import Glibc
import LinuxSystem

/// What one receive produced.
enum Received {
    /// A datagram of `count` bytes in the socket's buffer, with the descriptors that came with it
    /// (now owned by the caller) and whether the kernel cut the data or the descriptors.
    case datagram(count: Int, descriptors: [Int32], truncated: Bool, controlTruncated: Bool)
    /// Nothing to read now (non-blocking socket).
    case wouldBlock
    /// The peer closed the connection.
    case endOfStream
}

/// A connected AF_UNIX SOCK_SEQPACKET socket: one message per datagram, with descriptors.
///
/// Sending is safe from several threads at once (each message is one sendmsg; `bytesSent` is
/// then approximate); receiving is done by one thread.
final class SeqPacketSocket: @unchecked Sendable {
    let descriptor: Int32
    private let receiveBuffer: UnsafeMutableRawBufferPointer
    private let controlBuffer: UnsafeMutableRawBufferPointer
    private var closed = false
    /// Bytes of messages sent and received on this socket (payload of sendmsg/recvmsg).
    private(set) var bytesSent = 0
    private(set) var bytesReceived = 0

    init(adopting descriptor: Int32) {
        self.descriptor = descriptor
        receiveBuffer = .allocate(byteCount: CaptureLinkProtocol.messageMaxBytes, alignment: 16)
        let controlBytes = CLinuxShim_CMSG_SPACE(MemoryLayout<Int32>.size * CaptureLinkProtocol.maxDescriptorsPerMessage)
        controlBuffer = .allocate(byteCount: controlBytes, alignment: 16)
    }

    deinit {
        close()
        receiveBuffer.deallocate()
        controlBuffer.deallocate()
    }

    func close() {
        if !closed {
            closed = true
            Glibc.close(descriptor)
        }
    }

    /// The bytes of the last datagram received.
    func receivedBytes(_ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<count])
    }

    /// Sends one message, with `descriptors` attached when not empty; waits while the socket is full.
    func send(_ bytes: [UInt8], descriptors: [Int32] = []) throws(SystemCallError) {
        let sent = transmit(bytes, descriptors: descriptors, flags: Int32(MSG_NOSIGNAL))
        if sent < 0 { throw SystemCallError("sendmsg", errno: errno) }
        bytesSent += sent
    }

    /// Sends one message without waiting: false when the socket is full (EAGAIN), and nothing
    /// was sent. The pusher sends to helpers only this way (SPEC §4.1).
    func sendWithoutWaiting(_ bytes: [UInt8], descriptors: [Int32] = []) throws(SystemCallError) -> Bool {
        let sent = transmit(bytes, descriptors: descriptors, flags: Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        if sent < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { return false }
            throw SystemCallError("sendmsg", errno: errno)
        }
        bytesSent += sent
        return true
    }

    /// Raises the send buffer to the most an unprivileged process may ask for (twice the usual
    /// size), so that one last message fits behind what a peer that reads nothing left queued.
    func enlargeSendBuffer() {
        var bytes: Int32 = 1 << 30  // capped by the kernel at net.core.wmem_max (then doubled)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
    }

    /// One sendmsg (retried on EINTR): the bytes sent, or -1 with errno set.
    private func transmit(_ bytes: [UInt8], descriptors: [Int32], flags: Int32) -> Int {
        // Read in place: sendmsg does not write through iov_base (a mutable copy of the array cost
        // an allocation per message).
        bytes.withUnsafeBytes { payload in
            var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: payload.baseAddress), iov_len: payload.count)
            return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                var message = msghdr()
                message.msg_iov = vectorPointer
                message.msg_iovlen = 1
                if descriptors.isEmpty {
                    return sendLoop(&message, flags: flags)
                }
                let controlBytes = CLinuxShim_CMSG_SPACE(MemoryLayout<Int32>.size * descriptors.count)
                let control = UnsafeMutableRawPointer.allocate(byteCount: controlBytes, alignment: 16)
                defer { control.deallocate() }
                control.initializeMemory(as: UInt8.self, repeating: 0, count: controlBytes)
                message.msg_control = control
                message.msg_controllen = controlBytes
                let header = CLinuxShim_CMSG_FIRSTHDR(&message)!
                header.pointee.cmsg_level = SOL_SOCKET
                header.pointee.cmsg_type = Int32(SCM_RIGHTS)
                header.pointee.cmsg_len = CLinuxShim_CMSG_LEN(MemoryLayout<Int32>.size * descriptors.count)
                let data = UnsafeMutableRawPointer(CLinuxShim_CMSG_DATA(header)!)
                for (index, fd) in descriptors.enumerated() {
                    data.storeBytes(of: fd, toByteOffset: index * MemoryLayout<Int32>.size, as: Int32.self)
                }
                return sendLoop(&message, flags: flags)
            }
        }
    }

    private func sendLoop(_ message: inout msghdr, flags: Int32) -> Int {
        while true {
            let result = sendmsg(descriptor, &message, flags)
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }

    /// Receives one datagram into the socket's buffer.
    func receive(blocking: Bool) throws(SystemCallError) -> Received {
        var vector = iovec(iov_base: receiveBuffer.baseAddress, iov_len: receiveBuffer.count)
        var message = msghdr()
        let count: Int = withUnsafeMutablePointer(to: &vector) { vectorPointer in
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = controlBuffer.baseAddress
            message.msg_controllen = controlBuffer.count
            let flags = Int32(MSG_CMSG_CLOEXEC) | (blocking ? 0 : Int32(MSG_DONTWAIT))
            while true {
                let result = recvmsg(descriptor, &message, flags)
                if result < 0 && errno == EINTR { continue }
                return result
            }
        }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            if errno == ECONNRESET {
                // The peer closed with our last message unread. The kernel reports that error
                // before the messages still queued for us (a REJECT, an ERROR): read those first.
                let rest = try receive(blocking: false)
                if case .wouldBlock = rest { return .endOfStream }
                return rest
            }
            throw SystemCallError("recvmsg", errno: errno)
        }
        // Collect every descriptor that arrived, whatever happens next, so none leaks.
        var descriptors: [Int32] = []
        var header = CLinuxShim_CMSG_FIRSTHDR(&message)
        while let current = header {
            if current.pointee.cmsg_level == SOL_SOCKET && current.pointee.cmsg_type == Int32(SCM_RIGHTS) {
                let data = UnsafeRawPointer(CLinuxShim_CMSG_DATA(current)!)
                // With MSG_CTRUNC, cmsg_len may claim more than the buffer holds: read only what
                // the kernel wrote (msg_controllen), never past the buffer.
                let controlEnd = UnsafeRawPointer(controlBuffer.baseAddress!) + Int(message.msg_controllen)
                let dataBytes = min(Int(current.pointee.cmsg_len) - Int(CLinuxShim_CMSG_LEN(0)), controlEnd - data)
                for index in 0..<(dataBytes / MemoryLayout<Int32>.size) {
                    descriptors.append(data.loadUnaligned(fromByteOffset: index * 4, as: Int32.self))
                }
            }
            header = CLinuxShim_CMSG_NXTHDR(&message, current)
        }
        if count == 0 && descriptors.isEmpty { return .endOfStream }
        bytesReceived += count
        return .datagram(count: count, descriptors: descriptors,
                         truncated: message.msg_flags & Int32(MSG_TRUNC) != 0,
                         controlTruncated: message.msg_flags & Int32(MSG_CTRUNC) != 0)
    }

    /// The peer's process credentials (SO_PEERCRED, taken when it connected).
    func peerCredentials() throws(SystemCallError) -> (pid: pid_t, uid: uid_t) {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        try systemCall("getsockopt(SO_PEERCRED)") { CLinuxShim_peer_credentials(descriptor, &pid, &uid, &gid) }
        return (pid, uid)
    }
}

/// Closes descriptors the receiver did not expect.
func closeAll(_ descriptors: [Int32]) {
    for fd in descriptors { Glibc.close(fd) }
}
