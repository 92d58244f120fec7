import CLinuxShim
import Synchronization

/// While a stream key is in this process's memory, the process is not dumpable
/// (`PR_SET_DUMPABLE` 0, issue 30): no core file is written that would hold the key, and no other
/// process of the same user may ptrace it or read its `/proc/PID/mem` or `environ` (root still
/// can). `livepush --allow-core-dump` keeps it dumpable, for a bug report's core (then with a test
/// key). The CLI calls `holdKey` when its URLs hold a key; `ControlHandler` when `add` brings one.
public enum KeyCustody {
    private static let coreDumpsAllowed = Mutex(false)

    /// `--allow-core-dump`: from now on `holdKey` leaves the process dumpable.
    public static func allowCoreDumps() { coreDumpsAllowed.withLock { $0 = true } }

    /// A key is now held: the process stops being dumpable (once; it stays so until it exits,
    /// since the key may stay in freed memory). Returns whether the process is now not dumpable.
    @discardableResult
    public static func holdKey() -> Bool {
        guard !coreDumpsAllowed.withLock({ $0 }) else { return false }
        return CLinuxShim_get_dumpable() == 0 || CLinuxShim_set_dumpable(0) == 0
    }

    /// Whether the process may be dumped now (PR_GET_DUMPABLE).
    public static var isDumpable: Bool { CLinuxShim_get_dumpable() != 0 }
}
