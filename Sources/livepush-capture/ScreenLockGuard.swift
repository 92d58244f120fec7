import CaptureLink
import CommandLineSupport
import LinuxSystem
import PipeWireScreen
import ScreenCapture

/// Watches for the screen locking and keeps the pusher told: PAUSE {SCREEN_LOCKED} when it locks,
/// RESUME when it unlocks (SPEC §5.5). The signs, any of which means locked: the X screen saver
/// (MIT-SCREEN-SAVER, X11 capture only) and the session bus's `ActiveChanged` of
/// org.gnome.ScreenSaver / org.freedesktop.ScreenSaver (SessionLockSignals).
///
/// Owned by the capture loop's thread; `check` asks the sources at most every `checkIntervalNs`.
final class ScreenLockGuard {
    static let checkIntervalNs: UInt64 = 200_000_000
    let policy: LockPolicy
    private let screenSaver: X11ScreenSaver?
    private let bus: SessionLockSignals?
    private var lastCheckNs: UInt64 = 0
    /// What the sources said at the last check.
    private var screenLocked = false
    /// Whether this session's pusher was sent PAUSE {SCREEN_LOCKED} (and no RESUME since).
    private(set) var pausedPusher = false

    /// Nil for `--on-lock ignore`.
    init?(policy: LockPolicy, display: X11Display?) {
        guard policy != .ignore else { return nil }
        self.policy = policy
        screenSaver = display.flatMap(X11ScreenSaver.init(display:))
        bus = SessionLockSignals()
        if display != nil && screenSaver == nil {
            CaptureLoop.warn("the X server has no MIT-SCREEN-SAVER extension: a locked screen is seen only if the "
                + "desktop says so on the session bus")
        }
    }

    /// Whether the desktop's sound is to be withheld now.
    var withholdsSound: Bool { pausedPusher && policy == .mute }

    /// A new session: its pusher has not been told anything yet.
    func sessionStarted() {
        pausedPusher = false
        lastCheckNs = 0
    }

    /// Asks the sources (when due) and sends PAUSE or RESUME on a change. Returns true while frames
    /// must not be sent (the pusher was paused).
    func check(_ endpoint: HelperEndpoint) throws(HelperLinkError) -> Bool {
        let nowNs = MonotonicClock.nowNs()
        if nowNs >= lastCheckNs + Self.checkIntervalNs {
            lastCheckNs = nowNs
            let busLocked = bus?.poll() ?? false
            let saverOn = screenSaver?.isActive() ?? false
            screenLocked = busLocked || saverOn
        }
        if screenLocked && !pausedPusher {
            try endpoint.pause(.screenLocked)
            pausedPusher = true
            CaptureLoop.note("the screen is locked: frames paused (the pusher shows its pause picture)"
                + (policy == .mute ? ", the desktop's sound withheld" : ""))
        } else if !screenLocked && pausedPusher {
            try endpoint.resume()
            pausedPusher = false
            CaptureLoop.note("the screen is unlocked: frames resumed")
        }
        return pausedPusher
    }
}
