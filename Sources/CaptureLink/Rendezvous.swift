import CLinuxShim
import Glibc
import LinuxSystem

/// Where a group's socket lives, and how each side reaches it (SPEC "Rendezvous").
public struct Rendezvous: Sendable, Equatable {
    public let group: String
    /// The directory holding the group sockets: `$XDG_RUNTIME_DIR/livepush`, else `/tmp/livepush-<uid>`.
    public let directory: String

    public var socketPath: String { directory + "/" + group + ".sock" }
    /// The file a listening pusher holds an exclusive `flock()` on (SPEC §3.3).
    public var lockPath: String { directory + "/" + group + ".lock" }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case invalidGroup(String)
        case pathTooLong(String)
        case unsafeDirectory(path: String, reason: String)
        case groupInUse(group: String, path: String)
        case system(SystemCallError, path: String)
        case pusherNotListening(group: String, path: String, waitedMs: Int)
        /// The process listening on the group's socket runs as another user (helper side, SPEC §3.4).
        case foreignPusher(path: String, pid: Int32, uid: UInt32)

        public var description: String {
            switch self {
            case .invalidGroup(let group):
                return "invalid group name '\(group)': use 1 to 64 of the characters A-Z a-z 0-9 . _ -"
            case .pathTooLong(let path):
                return "socket path '\(path)' is longer than the 107 bytes a Unix socket allows; "
                    + "use a shorter group name or XDG_RUNTIME_DIR"
            case .unsafeDirectory(let path, let reason):
                return "refusing to use '\(path)': \(reason)"
            case .groupInUse(let group, let path):
                return "another pusher is already listening on group '\(group)' (\(path) is taken); "
                    + "stop it or choose another group"
            case .system(let error, let path):
                return "\(path): \(error)"
            case .pusherNotListening(let group, let path, let waitedMs):
                return "no pusher is listening on group '\(group)' (\(path)) after \(waitedMs) ms; "
                    + "start 'livepush' with the same group first"
            case .foreignPusher(let path, let pid, let uid):
                return "the process serving '\(path)' (pid \(pid)) runs as uid \(uid), not as this helper's user "
                    + "(\(getuid())): refusing to send it anything; run the pusher as this user"
            }
        }
    }

    /// The rendezvous of `group` for this user, from `runtimeDirectory` (default: XDG_RUNTIME_DIR).
    public init(group: String, runtimeDirectory: String? = nil) throws(Failure) {
        guard Self.isValidGroup(group) else { throw .invalidGroup(group) }
        self.group = group
        // An empty or relative XDG_RUNTIME_DIR counts as unset (SPEC §3).
        let base = runtimeDirectory ?? getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }
        if let base, base.hasPrefix("/") {
            directory = base + "/livepush"
        } else {
            directory = "/tmp/livepush-\(getuid())"
        }
        guard socketPath.utf8.count < 108 else { throw .pathTooLong(socketPath) }
    }

    public static func isValidGroup(_ group: String) -> Bool {
        let allowed = group.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        return allowed && (1...64).contains(group.utf8.count)
    }

    // MARK: Pusher side

    /// A listening pusher's descriptors: the socket, and the group's lock it holds while it listens.
    struct Listening {
        let socket: Int32
        let lock: Int32
    }

    /// Creates the private directory if needed, takes the group's lock (a second pusher on the
    /// group is refused there), replaces a stale socket from a crashed pusher (never a live
    /// one), binds and listens.
    func listen() throws(Failure) -> Listening {
        try preparePrivateDirectory()
        let lock = try takeLock()
        do throws(Failure) {
            return Listening(socket: try bindAndListen(), lock: lock)
        } catch {
            unlink(lockPath)
            close(lock)
            throw error
        }
    }

    /// Opens `<group>.lock` and takes `flock(LOCK_EX)` on it; the pusher that stops unlinks it
    /// before it closes it (so nothing is left behind), so a lock taken on a file that is no
    /// longer the one at the path is dropped and taken again on the new one.
    private func takeLock() throws(Failure) -> Int32 {
        for _ in 0..<10 {
            let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard lock >= 0 else { throw .system(SystemCallError("open", errno: errno), path: lockPath) }
            // A few tries over 100 ms: a process forked by another thread holds a copy of a
            // released lock's descriptor until it execs (O_CLOEXEC closes it only then).
            var locked = flock(lock, LOCK_EX | LOCK_NB) == 0
            for _ in 0..<10 where !locked && errno == EWOULDBLOCK {
                usleep(10_000)
                locked = flock(lock, LOCK_EX | LOCK_NB) == 0
            }
            guard locked else {
                let error = errno
                close(lock)
                if error == EWOULDBLOCK { throw .groupInUse(group: group, path: lockPath) }
                throw .system(SystemCallError("flock", errno: error), path: lockPath)
            }
            var held = stat(), atPath = stat()
            if fstat(lock, &held) == 0 && stat(lockPath, &atPath) == 0
                && held.st_dev == atPath.st_dev && held.st_ino == atPath.st_ino {
                return lock
            }
            close(lock)  // the pusher that held it unlinked it meanwhile: lock the new one
        }
        throw .groupInUse(group: group, path: lockPath)
    }

    /// With the group's lock held: the stale-socket check, bind and listen.
    private func bindAndListen() throws(Failure) -> Int32 {
        var existing = stat()
        if lstat(socketPath, &existing) == 0 {
            guard existing.st_mode & S_IFMT == S_IFSOCK else {
                throw .unsafeDirectory(path: socketPath, reason: "it exists and is not a socket; remove it by hand")
            }
            if let live = try? connectOnce() {
                close(live)
                throw .groupInUse(group: group, path: socketPath)
            }
            unlink(socketPath)  // stale: left by a pusher that crashed
        }
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(SystemCallError("socket", errno: errno), path: socketPath) }
        var address = socketAddress()
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let error = SystemCallError("bind", errno: errno)
            close(fd)
            throw .system(error, path: socketPath)
        }
        chmod(socketPath, 0o600)
        guard Glibc.listen(fd, 4) == 0 else {
            let error = SystemCallError("listen", errno: errno)
            close(fd)
            throw .system(error, path: socketPath)
        }
        return fd
    }

    /// Creates `directory` (mode 0700) if needed and checks that it is this user's and private
    /// (also used for the control sockets beside the group sockets).
    public func preparePrivateDirectory() throws(Failure) {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw .system(SystemCallError("mkdir", errno: errno), path: directory)
        }
        var status = stat()
        guard lstat(directory, &status) == 0 else { throw .system(SystemCallError("lstat", errno: errno), path: directory) }
        if let problem = Self.privateDirectoryProblem(status, path: directory) {
            throw .unsafeDirectory(path: directory, reason: problem)
        }
    }

    /// Why a directory with `status` (from lstat) is not this user's private directory, or nil:
    /// it must be a directory (not a symbolic link), owned by this uid, with no group or other
    /// permission (SPEC §3.3 for the pusher, §3.4 for the helper).
    static func privateDirectoryProblem(_ status: stat, path: String) -> String? {
        guard status.st_mode & S_IFMT == S_IFDIR else {
            return status.st_mode & S_IFMT == S_IFLNK ? "it is a symbolic link, not a directory" : "not a directory"
        }
        guard status.st_uid == getuid() else {
            return "owned by uid \(status.st_uid), not by this user (\(getuid()))"
        }
        guard status.st_mode & 0o077 == 0 else {
            let mode = String(status.st_mode & 0o777, radix: 8)
            return "mode \(mode) lets other users in; it must be 700 (chmod 700 \(path))"
        }
        return nil
    }

    // MARK: Helper side

    /// Connects once; throws the errno of a failed connect.
    func connectOnce() throws(SystemCallError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCallError("socket", errno: errno) }
        var address = socketAddress()
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let error = SystemCallError("connect", errno: errno)
            close(fd)
            throw error
        }
        return fd
    }

    /// Connects as a helper, retrying while the pusher is not there yet (100 ms, doubling to 1 s),
    /// for at most `retryMs`. Before each try the socket directory must be this user's private
    /// directory (a missing one means no pusher yet), and the process that accepted must run as
    /// this user (SO_PEERCRED); otherwise nothing is sent and the error says what was wrong
    /// (SPEC §3.4 step 5: another user could have made `/tmp/livepush-<uid>` first).
    func connect(retryMs: Int) throws(Failure) -> Int32 {
        let started = MonotonicClock.nowNs()
        var delayMs = 100
        while true {
            var status = stat()
            var missing = false
            if lstat(directory, &status) != 0 {
                guard errno == ENOENT else { throw .system(SystemCallError("lstat", errno: errno), path: directory) }
                missing = true
            } else if let problem = Self.privateDirectoryProblem(status, path: directory) {
                let foreign = status.st_uid != getuid()
                throw .unsafeDirectory(path: directory, reason: problem + (foreign ? "; another user may have made it "
                    + "to receive this screen: remove it and start the pusher again" : ""))
            }
            let fd: Int32
            do throws(SystemCallError) {
                guard !missing else { throw SystemCallError("connect", errno: ENOENT) }
                fd = try connectOnce()
            } catch {
                guard error.errno == ENOENT || error.errno == ECONNREFUSED || error.errno == EAGAIN else {
                    throw .system(error, path: socketPath)
                }
                let elapsedMs = Int((MonotonicClock.nowNs() - started) / 1_000_000)
                if elapsedMs >= retryMs { throw .pusherNotListening(group: group, path: socketPath, waitedMs: elapsedMs) }
                usleep(UInt32(min(delayMs, retryMs - elapsedMs)) * 1000)
                delayMs = min(delayMs * 2, 1000)
                continue
            }
            try checkPusher(fd)
            return fd
        }
    }

    /// Closes `fd` and throws unless the process that accepted it runs as this user.
    private func checkPusher(_ fd: Int32) throws(Failure) {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        guard CLinuxShim_peer_credentials(fd, &pid, &uid, &gid) == 0 else {
            let error = SystemCallError("getsockopt(SO_PEERCRED)", errno: errno)
            close(fd)
            throw .system(error, path: socketPath)
        }
        guard uid == getuid() else {
            close(fd)
            throw .foreignPusher(path: socketPath, pid: pid, uid: uid)
        }
    }

    private func socketAddress() -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { pathBytes in
            let utf8 = Array(socketPath.utf8)
            pathBytes.copyBytes(from: utf8)
            pathBytes[utf8.count] = 0
        }
        return address
    }
}
