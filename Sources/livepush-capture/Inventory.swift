import CommandLineSupport
import ScreenCapture

/// `livepush-capture --list`: the monitors and top-level windows this helper can capture.
enum Inventory {
    static func print(displayName: String?) -> Terminal.ExitCode {
        let display: X11Display
        do {
            display = try X11Display(displayName: displayName)
        } catch {
            Terminal.printError("livepush-capture: \(error)")
            return .failure
        }
        Swift.print("Display \(display.name): screen \(display.screenWidth)x\(display.screenHeight)")
        Swift.print("Monitors (--monitor NAME or INDEX):")
        for monitor in display.monitors() {
            Swift.print("  \(monitor.index)  \(monitor.name)  \(monitor.rect)\(monitor.isPrimary ? "  primary" : "")")
        }
        Swift.print("Windows (--window ID or --window-name TEXT):")
        let windows = display.topLevelWindows().filter(\.isViewable)
        if windows.isEmpty { Swift.print("  (no visible top-level windows)") }
        for window in windows.reversed() {
            Swift.print("  \(window.hexID)  \(window.rect)  \(window.name.isEmpty ? "(no name)" : "'\(window.name)'")")
        }
        return .success
    }
}
