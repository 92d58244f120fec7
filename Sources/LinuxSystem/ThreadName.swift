import CLinuxShim
import Glibc

/// The name Linux shows for a thread (`top -H`, `ps -L`, gdb, /proc/PID/task/TID/comm).
///
/// Foundation's `Thread.name`, set before `start()`, names nothing on Linux (swift-corelibs-foundation
/// applies it only when set from the thread itself), and `pthread_setname_np` refuses a name longer
/// than the kernel's 15 bytes: so a thread names itself first thing, with a name that fits.
public enum ThreadName {
    /// The kernel's limit, without the terminating NUL.
    public static let maxBytes = 15

    /// Names the calling thread. A name longer than `maxBytes` is a programming error: a debug
    /// build (the tests) stops on it; a release build names the thread with its first 15 bytes.
    public static func setCurrent(_ name: String) {
        assert(name.utf8.count <= maxBytes, "thread name '\(name)' is longer than \(maxBytes) bytes")
        _ = CLinuxShim_set_thread_name(name)
    }

    /// The calling thread's name, as the kernel keeps it.
    public static func current() -> String {
        var buffer = [CChar](repeating: 0, count: 32)
        let descriptor = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        let count = read(descriptor, &buffer, buffer.count - 1)
        guard count > 0 else { return "" }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .trimmingSuffix("\n")
    }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
