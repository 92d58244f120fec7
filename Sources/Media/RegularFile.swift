import Glibc

/// Files a person names (over `ctl`, the dashboard, an option) are opened so that nothing can
/// block on them (issue 30): a FIFO opened for reading waits for a writer forever, a device may
/// never end. Reading opens with O_NONBLOCK and keeps only a regular file; writing replaces the
/// path with a new file of mode 0600, never opening what is there. Either names what the path
/// really is when it is not a regular file.
public enum RegularFile {
    /// Why a named file cannot be used: the path and what it is, or the system's words.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "'\(path)' \(reason)" }
    }

    /// What a file of `mode` (st_mode) is, in words, or nil for a regular file.
    public static func kind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a directory"
        default: "not a regular file"
        }
    }

    private static func notRegular(_ path: String, _ mode: mode_t) -> Failure {
        let what = kind(mode) ?? "not a regular file"
        return Failure(path: path, reason: what == "not a regular file" ? what : "is \(what), not a regular file")
    }

    private static func systemFailure(_ path: String, _ code: Int32) -> Failure {
        Failure(path: path, reason: code == ENOENT ? "does not exist"
            : "cannot be opened: " + String(cString: strerror(code)))
    }

    /// Opens `path` for reading without blocking (O_NONBLOCK, then blocking again for the reads)
    /// and returns the descriptor (O_CLOEXEC) of a regular file; the caller closes it.
    public static func openForReading(_ path: String) throws(Failure) -> Int32 {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw systemFailure(path, errno) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let code = errno
            close(fd)
            throw systemFailure(path, code)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw notRegular(path, status.st_mode)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// Why `path` cannot be read as a regular file (`openForReading`'s error, in words), or nil.
    public static func problem(readingFrom path: String) -> String? {
        do {
            close(try openForReading(path))
            return nil
        } catch {
            return error.description
        }
    }

    /// A path that names the file open on `fd` (`/proc/self/fd/N`), for libraries that open
    /// files by name: whatever is put at the original path meanwhile, they open the checked file.
    public static func path(of fd: Int32) -> String { "/proc/self/fd/\(fd)" }

    /// Writes `bytes` as the file `path`, mode `mode` (0600: only its owner reads it): into a new
    /// file beside it, then renamed over it, so a reader never sees half a file and nothing at
    /// the path is opened. A path that exists and is not a regular file (or a link to one) is
    /// refused, naming what it is.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(Failure) {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG { throw notRegular(path, status.st_mode) }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var temporary = ""
        var fd: Int32 = -1
        for attempt in 0..<100 {
            temporary = (directory.isEmpty ? "" : directory + "/") + ".\(name).\(getpid()).\(attempt).tmp"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else {
            throw Failure(path: path, reason: "cannot be written: " + String(cString: strerror(errno)))
        }
        _ = fchmod(fd, mode)  // whatever the umask
        var offset = 0
        var failure: Int32 = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                failure = errno
                break
            }
            offset += written
        }
        if close(fd) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw Failure(path: path, reason: "cannot be written: " + String(cString: strerror(failure)))
        }
    }
}
