import CaptureLink
import CommandLineSupport
import ScreenCapture

/// What the command line asked for, validated.
struct CaptureRequest {
    var group: String = ""
    var displayName: String?
    var target = CaptureTarget.screen
    var drawCursor = true
    var trackDamage = false
    var reportsStats = false
    var fps: Int?
    /// `--scale`: how X11 frames shrink to CONFIG's maximum; nil crops (no LPC_CAP_SCALE).
    var scaleMethod: X11ScaleMethod? = .render
    var connectTimeoutMs = CaptureLinkProtocol.connectRetryMsDefault
    /// `--desktop-audio`: also send the default sink's monitor as AUDIO (DesktopAudio.swift).
    var desktopAudio = false
    // PipeWire screen capture (--source pipewire|portal): see PipeWireRequest.swift.
    var source = CaptureSourceKind.x11
    var pipeWire = PipeWireRequest()
    /// `--source camera`: CameraRequest (PipeWireRequest.swift).
    var camera = CameraRequest()
    /// `--on-lock`: what to do while the screen is locked (ScreenLockGuard.swift).
    var onLock = LockPolicy.pause

    init(_ parsed: ParsedArguments) throws(ArgumentError) {
        try parsePipeWireOptions(parsed)
        displayName = parsed.value("display")
        drawCursor = !parsed.has("no-cursor")
        trackDamage = parsed.has("damage")
        reportsStats = parsed.has("stats")
        desktopAudio = parsed.has("desktop-audio")
        let targets = ["monitor", "region", "window", "window-name"].filter { parsed.value($0) != nil }
        if targets.count > 1 {
            throw .invalidValue(option: targets[1], value: parsed.value(targets[1])!,
                                reason: "choose one of --monitor, --region, --window, --window-name")
        }
        if let monitor = parsed.value("monitor") { target = .monitor(monitor) }
        if let region = parsed.value("region") { target = .region(try Self.parseRegion(region)) }
        if let window = parsed.value("window") { target = .window(try Self.parseWindowID(window)) }
        if let name = parsed.value("window-name") { target = .windowName(name) }
        if let text = parsed.value("fps") {
            guard let fps = Int(text), (1...240).contains(fps) else {
                throw .invalidValue(option: "fps", value: text, reason: "use a whole number from 1 to 240")
            }
            self.fps = fps
            camera.mode.fps = Double(fps)
        }
        if let text = parsed.value("scale") {
            guard text == "crop" || X11ScaleMethod(rawValue: text) != nil else {
                throw .invalidValue(option: "scale", value: text, reason: "use render, yuv or crop")
            }
            scaleMethod = X11ScaleMethod(rawValue: text)
        }
        if let text = parsed.value("connect-timeout-ms") {
            guard let ms = Int(text), ms >= 0 else {
                throw .invalidValue(option: "connect-timeout-ms", value: text, reason: "use a whole number of ms")
            }
            connectTimeoutMs = ms
        }
        if let text = parsed.value("on-lock") { onLock = try LockPolicy.parse(text) }
        if parsed.has("list") { return }
        guard let group = parsed.value("group") else { throw .missingArgument("--group NAME") }
        guard Rendezvous.isValidGroup(group) else {
            throw .invalidValue(option: "group", value: group, reason: "use 1 to 64 of A-Z a-z 0-9 . _ -")
        }
        self.group = group
    }

    /// `text` without the blanks around it (FoundationEssentials has no `trimmingCharacters(in:)`).
    static func trimmingWhitespace(_ text: Substring) -> Substring {
        let start = text.firstIndex { !$0.isWhitespace } ?? text.endIndex
        let end = text.lastIndex { !$0.isWhitespace }.map { text.index(after: $0) } ?? start
        return text[start..<end]
    }

    static func parseRegion(_ text: String) throws(ArgumentError) -> ScreenRect {
        let numbers = text.split(separator: ",").map { Int(Self.trimmingWhitespace($0)) }
        guard numbers.count == 4, numbers.allSatisfy({ $0 != nil }), numbers[2]! > 0, numbers[3]! > 0,
              numbers[0]! >= 0, numbers[1]! >= 0
        else {
            throw .invalidValue(option: "region", value: text, reason: "use X,Y,W,H with W and H above 0, e.g. 0,0,1280,720")
        }
        return ScreenRect(x: numbers[0]!, y: numbers[1]!, width: numbers[2]!, height: numbers[3]!)
    }

    static func parseWindowID(_ text: String) throws(ArgumentError) -> UInt32 {
        let lower = text.lowercased()
        let value = lower.hasPrefix("0x") ? UInt32(lower.dropFirst(2), radix: 16) : UInt32(lower)
        guard let value, value != 0 else {
            throw .invalidValue(option: "window", value: text, reason: "use a window id such as 0x3a00007 (see --list)")
        }
        return value
    }
}

