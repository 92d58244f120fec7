import CLinuxShim
import Glibc
import Testing

/// The shim's calls do what the kernel documents, on this kernel.
@Suite(.timeLimit(.minutes(10))) struct CLinuxShimTests {
    @Test func sealedMemfdRefusesToGrowOrShrinkButStaysWritable() throws {
        let fd = CLinuxShim_memfd_create("livepush-test", CLinuxShim_MFD_CLOEXEC | CLinuxShim_MFD_ALLOW_SEALING)
        #expect(fd >= 0, "memfd_create: errno \(errno)")
        defer { close(fd) }
        #expect(ftruncate(fd, 4096) == 0)
        let seals = CLinuxShim_F_SEAL_SHRINK | CLinuxShim_F_SEAL_GROW | CLinuxShim_F_SEAL_SEAL
        #expect(CLinuxShim_fcntl_int(fd, CLinuxShim_F_ADD_SEALS, seals) == 0)
        #expect(CLinuxShim_fcntl_int(fd, CLinuxShim_F_GET_SEALS, 0) == seals)

        #expect(ftruncate(fd, 8192) == -1)
        #expect(errno == EPERM)
        #expect(ftruncate(fd, 0) == -1)
        #expect(errno == EPERM)
        // Sealed against further seals too.
        #expect(CLinuxShim_fcntl_int(fd, CLinuxShim_F_ADD_SEALS, CLinuxShim_F_SEAL_WRITE) == -1)
        #expect(errno == EPERM)

        let written = [UInt8](repeating: 0xAB, count: 16).withUnsafeBytes { pwrite(fd, $0.baseAddress, 16, 100) }
        #expect(written == 16)
    }

    @Test func eventfdCountsWritesUntilRead() throws {
        let fd = CLinuxShim_eventfd(0, CLinuxShim_EFD_CLOEXEC | CLinuxShim_EFD_NONBLOCK)
        #expect(fd >= 0)
        defer { close(fd) }
        var value: UInt64 = 0
        #expect(read(fd, &value, 8) == -1)
        #expect(errno == EAGAIN)
        var two: UInt64 = 2
        var three: UInt64 = 3
        #expect(write(fd, &two, 8) == 8)
        #expect(write(fd, &three, 8) == 8)
        #expect(read(fd, &value, 8) == 8)
        #expect(value == 5)
    }

    @Test func descriptorCrossesASeqpacketSocketWithScmRights() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let memfd = CLinuxShim_memfd_create("livepush-pass", CLinuxShim_MFD_CLOEXEC)
        defer { close(memfd) }
        #expect(Array("ring".utf8).withUnsafeBytes { write(memfd, $0.baseAddress, 4) } == 4)

        try sendDescriptor(memfd, payload: 0x4C50, over: pair[0])
        let (payload, received) = try receiveDescriptor(from: pair[1])
        defer { close(received) }
        #expect(payload == 0x4C50)
        #expect(received >= 0 && received != memfd)
        var text = [UInt8](repeating: 0, count: 4)
        #expect(pread(received, &text, 4, 0) == 4)
        #expect(String(decoding: text, as: UTF8.self) == "ring")
    }

    @Test func peerCredentialsNameThisProcess() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        #expect(CLinuxShim_peer_credentials(pair[0], &pid, &uid, &gid) == 0)
        #expect(pid == getpid())
        #expect(uid == getuid())
        #expect(gid == getgid())
    }

    @Test func futexWaitReturnsAtOnceWhenTheWordChangedAndTimesOutOtherwise() throws {
        let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        defer { word.deallocate() }
        word.pointee = 7
        #expect(CLinuxShim_futex_wait(word, 8, nil) == -1)
        #expect(errno == EAGAIN)
        var timeout = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        #expect(CLinuxShim_futex_wait(word, 7, &timeout) == -1)
        #expect(errno == ETIMEDOUT)
        #expect(CLinuxShim_futex_wake(word, 1) == 0)
    }

    // MARK: Helpers: one message carrying a UInt32 payload and one descriptor.

    private struct SocketError: Error { let call: String; let code: Int32 }

    private func sendDescriptor(_ descriptor: Int32, payload: UInt32, over socket: Int32) throws {
        var payload = payload
        let controlBytes = CLinuxShim_CMSG_SPACE(MemoryLayout<Int32>.size)
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlBytes, alignment: 8)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: controlBytes)
        try withUnsafeMutableBytes(of: &payload) { payloadBytes in
            var vector = iovec(iov_base: payloadBytes.baseAddress, iov_len: payloadBytes.count)
            try withUnsafeMutablePointer(to: &vector) { vectorPointer in
                var message = msghdr()
                message.msg_iov = vectorPointer
                message.msg_iovlen = 1
                message.msg_control = control
                message.msg_controllen = controlBytes
                let header = CLinuxShim_CMSG_FIRSTHDR(&message)!
                header.pointee.cmsg_level = SOL_SOCKET
                header.pointee.cmsg_type = Int32(SCM_RIGHTS)
                header.pointee.cmsg_len = CLinuxShim_CMSG_LEN(MemoryLayout<Int32>.size)
                CLinuxShim_CMSG_DATA(header).withMemoryRebound(to: Int32.self, capacity: 1) { $0.pointee = descriptor }
                guard sendmsg(socket, &message, 0) == 4 else { throw SocketError(call: "sendmsg", code: errno) }
            }
        }
    }

    private func receiveDescriptor(from socket: Int32) throws -> (UInt32, Int32) {
        var payload: UInt32 = 0
        let controlBytes = CLinuxShim_CMSG_SPACE(MemoryLayout<Int32>.size)
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlBytes, alignment: 8)
        defer { control.deallocate() }
        var descriptor: Int32 = -1
        try withUnsafeMutableBytes(of: &payload) { payloadBytes in
            var vector = iovec(iov_base: payloadBytes.baseAddress, iov_len: payloadBytes.count)
            try withUnsafeMutablePointer(to: &vector) { vectorPointer in
                var message = msghdr()
                message.msg_iov = vectorPointer
                message.msg_iovlen = 1
                message.msg_control = control
                message.msg_controllen = controlBytes
                guard recvmsg(socket, &message, Int32(MSG_CMSG_CLOEXEC)) == 4 else {
                    throw SocketError(call: "recvmsg", code: errno)
                }
                guard message.msg_flags & Int32(MSG_CTRUNC) == 0, let header = CLinuxShim_CMSG_FIRSTHDR(&message),
                      header.pointee.cmsg_type == Int32(SCM_RIGHTS)
                else { throw SocketError(call: "recvmsg control", code: 0) }
                descriptor = CLinuxShim_CMSG_DATA(header).withMemoryRebound(to: Int32.self, capacity: 1) { $0.pointee }
            }
        }
        return (payload, descriptor)
    }
}
