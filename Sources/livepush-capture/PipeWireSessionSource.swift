import CaptureLink
import CommandLineSupport
import PipeWireScreen

/// What a PipeWire source does where a screen and a camera differ, in `PipeWireCaptureLoop`'s
/// session: what HELLO announces, what CONFIG changes, and what happens when the node goes away
/// (a screen cast ends the session; a camera pauses it until the camera is back). Used on the
/// helper's main thread only.
protocol PipeWireSessionSource: AnyObject {
    /// The stream pictures come from now (a camera's is replaced when the camera comes back).
    var stream: PipeWireVideoStream { get }
    /// START's source info (JSON).
    var sourceInfo: String { get }
    /// The largest frame HELLO announces.
    var helloSize: (width: Int, height: Int) { get }
    var capabilities: Capabilities { get }
    /// How pictures reach the slot, for `--stats`: "copy", "convert", "decode".
    var transfer: String { get }
    /// Whether pictures must be held back to the pusher's rate `fps` (a screen can produce faster than
    /// the pusher takes; a camera at or under that rate is sent as each picture comes, without waiting).
    func pacesTo(fps: Int) -> Bool
    /// WELCOME came with the pusher's rate (`fps`, or `--fps`); a camera starts its stream here.
    func sessionStarting(fps: Int) -> SourceEnd?
    /// WELCOME's limit is below `helloSize`.
    func pusherLimits(maxWidth: Int, maxHeight: Int)
    /// CONFIG's maximum size (advice).
    func configure(maxWidth: Int, maxHeight: Int)
    /// The stream reported its node closed or lost (`.sourceClosed`, `.sourceLost`); the slot is withdrawn.
    func sourceEnded(_ event: ScreenStreamEvent, endpoint: HelperEndpoint, fps: inout Int,
                     sessionSize: (width: Int, height: Int)) throws(HelperLinkError) -> SourceEnd
}

/// How a source's end turns out.
enum SourceEnd {
    /// FINISH with this reason and text; the helper exits with `code` (a failure prints the text).
    case finish(FinishReason, String, Terminal.ExitCode)
    /// FINISH {RESTARTING} with this text and a new session (frames larger than this one's).
    case restart(String)
    /// A new stream took over (`stream`); the session goes on after a RESUME.
    case resumed
}

/// A screen on PipeWire (`--source pipewire`) or what the ScreenCast portal granted (`--source portal`).
final class ScreenSessionSource: PipeWireSessionSource {
    private let screen: PipeWireScreenStream
    let sourceInfo: String
    private let fromPortal: Bool
    private let monitorsAtStart: [String]?

    init(stream: PipeWireScreenStream, sourceInfo: String, fromPortal: Bool, monitorsAtStart: [String]?) {
        screen = stream
        self.sourceInfo = sourceInfo
        self.fromPortal = fromPortal
        self.monitorsAtStart = monitorsAtStart
    }

    /// The producer's size now: a session after FINISH {RESTARTING} asks for the larger one.
    var helloSize: (width: Int, height: Int) { (screen.format.width, screen.format.height) }

    var stream: PipeWireVideoStream { screen }
    var capabilities: Capabilities { [.damage] }
    var transfer: String { "copy" }

    func sessionStarting(fps: Int) -> SourceEnd? { nil }

    func pacesTo(fps: Int) -> Bool { true }

    func pusherLimits(maxWidth: Int, maxHeight: Int) {
        // The pusher's limit: ask the producer to scale; frames it still sends larger are cropped.
        screen.requestMaximumSize(width: maxWidth, height: maxHeight)
        CaptureLoop.warn("the pusher takes at most \(maxWidth)x\(maxHeight); frames of \(helloSize.width)x"
            + "\(helloSize.height) are cropped unless the producer scales them")
    }

    func configure(maxWidth: Int, maxHeight: Int) {
        // CONFIG's size is advice: ask the producer to scale down; never crop for it.
        let current = screen.format
        if maxWidth < current.width || maxHeight < current.height {
            screen.requestMaximumSize(width: maxWidth, height: maxHeight)
        }
    }

    func sourceEnded(_ event: ScreenStreamEvent, endpoint: HelperEndpoint, fps: inout Int,
                     sessionSize: (width: Int, height: Int)) -> SourceEnd
    {
        switch event {
        case .sourceClosed(let text) where fromPortal && WaylandCompositor.exited(withinMs: 500):
            // Not the user ending the share: the desktop itself is gone. Lost, not closed.
            return .finish(.sourceLost, text + ": the Wayland compositor exited (\(WaylandCompositor.socketPath!) "
                + "accepts no connection); the screen cast is lost", .failure)
        case .sourceClosed(let text) where fromPortal && monitorsAtStart != nil
            && DesktopMonitors.layout() != monitorsAtStart:
            // mutter ends its screen casts when the monitors change; the portal asked again follows.
            let before = monitorsAtStart!.joined(separator: ", ")
            let now = DesktopMonitors.layout()?.joined(separator: ", ") ?? "unknown"
            return .finish(.sourceLost, text + ": the desktop's monitors were reconfigured (\(before) -> \(now)), which "
                + "ends the compositor's screen cast; the screen cast is lost", .failure)
        case .sourceClosed(let text):
            return .finish(.sourceClosed, text, .success)
        case .sourceLost(let text):
            return .finish(.sourceLost, text, .failure)
        default:
            return .finish(.error, "unexpected stream event \(event)", .failure)
        }
    }
}
