import CLinuxShim
import CXCB

#if canImport(Glibc)
import Glibc
import LinuxSystem
#endif

/// The physical floor of X11 capture, for benchmarks: a bare loop of `xcb_shm_get_image`
/// of the whole screen into a plain shared-memory segment, nothing else.
public enum X11GrabFloor {
    /// Times `count` grabs of the whole screen, in milliseconds, one every `intervalMs` (0: back
    /// to back). Paced like a capture, the X server and the caches are as cold as they are then.
    public static func measureMs(displayName: String?, count: Int, intervalMs: Double = 0) throws -> [Double] {
        let display = try X11Display(displayName: displayName)
        let bytes = display.screenWidth * display.screenHeight * 4
        let memfd = CLinuxShim_memfd_create("livepush-floor", CLinuxShim_MFD_CLOEXEC)
        guard memfd >= 0, ftruncate(memfd, off_t(bytes)) == 0 else { throw X11GrabError.serverGone("memfd failed") }
        defer { close(memfd) }
        let grabber = X11Grabber(display: display, memoryDescriptor: memfd)
        guard grabber.path == .sharedMemory else { throw X11GrabError.serverGone("no MIT-SHM on this display") }
        let rect = ScreenRect(x: 0, y: 0, width: display.screenWidth, height: display.screenHeight)
        let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes, alignment: 64)
        defer { destination.deallocate() }
        var times: [Double] = []
        times.reserveCapacity(count)
        for _ in 0..<count {
            let startNs = MonotonicClock.nowNs()
            _ = try grabber.grab(rect, offset: 0, destination: destination)
            let elapsedMs = Double(MonotonicClock.nowNs() - startNs) / 1e6
            times.append(elapsedMs)
            if intervalMs > elapsedMs { usleep(UInt32((intervalMs - elapsedMs) * 1000)) }
        }
        return times
    }
}
