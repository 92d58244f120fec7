import CXCB

#if canImport(Glibc)
import Glibc
#endif

/// What part of the X screen to capture.
public enum CaptureTarget: Equatable, Sendable {
    case screen
    /// A monitor by RandR name (`HDMI-1`) or index (`0`).
    case monitor(String)
    case region(ScreenRect)
    case window(UInt32)
    /// The first top-level window whose name contains this text.
    case windowName(String)
}

/// Why capture cannot start or cannot go on. Each case says what to do.
public enum X11CaptureError: Error, Equatable, CustomStringConvertible {
    case unknownMonitor(String, available: [X11Monitor])
    case unknownWindow(String, available: [X11Window])
    case regionOutsideScreen(ScreenRect, screenWidth: Int, screenHeight: Int)
    case windowClosed(UInt32)
    case monitorGone(String)
    case serverLost(String)
    case grab(X11GrabError)

    public var description: String {
        switch self {
        case .unknownMonitor(let name, let available):
            let list = available.map { "\($0.index) \($0.name) \($0.rect)" }.joined(separator: ", ")
            return "no monitor '\(name)'; the monitors are: \(list)"
        case .unknownWindow(let name, let available):
            let list = available.filter(\.isViewable).prefix(20).map { "\($0.hexID) '\($0.name)'" }
                .joined(separator: ", ")
            return "no window '\(name)'; visible top-level windows: \(list.isEmpty ? "none" : list) "
                + "(livepush-capture --list shows them all)"
        case .regionOutsideScreen(let rect, let width, let height):
            return "region \(rect) is not inside the \(width)x\(height) screen"
        case .windowClosed(let id):
            return "the captured window 0x\(String(id, radix: 16)) was closed"
        case .monitorGone(let name):
            return "monitor '\(name)' was disconnected"
        case .serverLost(let reason):
            return "the X server went away: \(reason)"
        case .grab(let error):
            return error.description
        }
    }
}

/// One grabbed frame: BGRx, `strideBytes` per row, in the destination given to `grab`.
public struct GrabbedFrame: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public let strideBytes: Int
    public let cursorDrawn: Bool
}

/// X11 screen capture for a helper: resolves the target, follows it (window moves and
/// resizes, screen resolution changes), grabs it into shared memory, and draws the cursor.
/// Use from one thread.
public final class X11CaptureSource {
    public let display: X11Display
    public let target: CaptureTarget
    /// The rectangle the next grab takes, in root coordinates.
    public private(set) var rect: ScreenRect
    public var grabPath: GrabPath? { grabber?.path }
    /// False with damage tracking on and nothing changed inside `rect` since the last grab.
    public private(set) var hasChanges = true

    private let windowID: UInt32?
    private let monitorName: String?
    private var grabber: X11Grabber?
    private let cursor: X11Cursor?
    private var damage: UInt32?
    private var damageFirstEvent: UInt8 = 0
    private var randrFirstEvent: UInt8?

    public init(display: X11Display, target: CaptureTarget, drawCursor: Bool, trackDamage: Bool)
        throws(X11CaptureError)
    {
        self.display = display
        self.target = target
        var windowID: UInt32?
        var monitorName: String?
        switch target {
        case .screen:
            rect = ScreenRect(x: 0, y: 0, width: display.screenWidth, height: display.screenHeight)
        case .monitor(let name):
            let monitors = display.monitors()
            guard let monitor = monitors.first(where: { $0.name == name || String($0.index) == name }) else {
                throw .unknownMonitor(name, available: monitors)
            }
            monitorName = monitor.name
            rect = monitor.rect
        case .region(let region):
            let screen = ScreenRect(x: 0, y: 0, width: display.screenWidth, height: display.screenHeight)
            guard region.width > 0, region.height > 0, region.clamped(to: screen) == region else {
                throw .regionOutsideScreen(region, screenWidth: display.screenWidth, screenHeight: display.screenHeight)
            }
            rect = region
        case .window(let id):
            guard let geometry = display.rootGeometry(of: id) else {
                throw .unknownWindow("0x" + String(id, radix: 16), available: display.topLevelWindows())
            }
            windowID = id
            rect = geometry
        case .windowName(let text):
            let windows = display.topLevelWindows()
            guard let window = windows.last(where: { $0.isViewable && $0.name.contains(text) }) else {
                throw .unknownWindow(text, available: windows)
            }
            windowID = window.id
            rect = window.rect
        }
        self.windowID = windowID
        self.monitorName = monitorName
        cursor = drawCursor ? X11Cursor(display: display) : nil
        if let windowID {
            var mask = UInt32(XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue)
            xcb_change_window_attributes(display.connection, windowID, UInt32(XCB_CW_EVENT_MASK.rawValue), &mask)
            rect = rect.clamped(to: screenRect)
        }
        if trackDamage { startDamageTracking() }
        startScreenChangeTracking()
        xcb_flush(display.connection)
    }

    /// JSON describing the source, for the protocol's START.
    public var sourceInfo: String {
        var fields = [#""source":"x11""#, #""display":"\#(display.name)""#]
        switch target {
        case .screen: fields.append(#""target":"screen""#)
        case .monitor: fields.append(#""target":"monitor","monitor":"\#(monitorName ?? "")""#)
        case .region: fields.append(#""target":"region""#)
        case .window, .windowName: fields.append(#""target":"window","window":"0x\#(String(windowID ?? 0, radix: 16))""#)
        }
        fields.append(#""region":[\#(rect.x),\#(rect.y),\#(rect.width),\#(rect.height)]"#)
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// Attaches the shared memory that frames are grabbed into (a ring's memfd). Returns how
    /// frames will travel; `.socketCopy` says why the fast path is not available.
    @discardableResult
    public func attach(memoryDescriptor: Int32) -> GrabPath {
        let grabber = X11Grabber(display: display, memoryDescriptor: memoryDescriptor)
        self.grabber = grabber
        return grabber.path
    }

    private var screenRect: ScreenRect { ScreenRect(x: 0, y: 0, width: display.screenWidth, height: display.screenHeight) }

    // MARK: Events

    /// Handles what the X server reported since the last call: window moves and resizes,
    /// screen changes, damage, cursor changes. Throws when the source is gone.
    public func update() throws(X11CaptureError) {
        if let reason = display.connectionError { throw .serverLost(reason) }
        var screenChanged = false
        while let event = xcb_poll_for_event(display.connection) {
            defer { free(event) }
            let type = event.pointee.response_type & 0x7F
            if cursor?.handle(event) == true { continue }
            if damage != nil && type == damageFirstEvent &+ UInt8(XCB_DAMAGE_NOTIFY) {
                let notify = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_damage_notify_event_t.self)
                let area = notify.pointee.area
                let damaged = ScreenRect(x: Int(area.x), y: Int(area.y), width: Int(area.width), height: Int(area.height))
                if damaged.clamped(to: rect).width > 0 { hasChanges = true }
            } else if let randr = randrFirstEvent, type == randr &+ UInt8(XCB_RANDR_SCREEN_CHANGE_NOTIFY) {
                screenChanged = true
            } else if type == UInt8(XCB_DESTROY_NOTIFY), let windowID {
                let destroyed = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_destroy_notify_event_t.self)
                if destroyed.pointee.window == windowID { throw .windowClosed(windowID) }
            }
        }
        if let reason = display.connectionError { throw .serverLost(reason) }
        if screenChanged { display.refreshScreenSize() }
        try followTarget(screenChanged: screenChanged)
    }

    private func followTarget(screenChanged: Bool) throws(X11CaptureError) {
        let previous = rect
        switch target {
        case .screen:
            rect = screenRect
        case .monitor:
            guard screenChanged else { return }
            guard let monitor = display.monitors().first(where: { $0.name == monitorName }) else {
                throw .monitorGone(monitorName ?? "")
            }
            rect = monitor.rect
        case .region(let region):
            rect = region.clamped(to: screenRect)
        case .window, .windowName:
            guard let windowID else { return }
            guard let geometry = display.rootGeometry(of: windowID) else {
                if let reason = display.connectionError { throw .serverLost(reason) }
                throw .windowClosed(windowID)
            }
            rect = geometry.clamped(to: screenRect)
        }
        if rect != previous { hasChanges = true }
    }

    // MARK: Grabbing

    /// How grabs are made to fit a smaller maximum: nil crops from the top-left corner (what a
    /// helper without LPC_CAP_SCALE may do, SPEC §12.5); a method scales, keeping the aspect.
    /// Set `scaleMethod` before grabbing; `.render` falls back to `.yuv` without RENDER.
    public var scaleMethod: X11ScaleMethod? {
        didSet {
            renderScaler = nil
            yuvScaler = nil
            if scaleMethod == .render {
                renderScaler = X11RenderScaler(display: display)
                if renderScaler == nil { scaleMethod = .yuv }
            }
            if scaleMethod == .yuv { yuvScaler = X11YUVScaler(display: display) }
        }
    }
    private var renderScaler: X11RenderScaler?
    private var yuvScaler: X11YUVScaler?

    /// Grabs the target into `destination` (which starts `offset` bytes into the attached shared
    /// memory), at most maxWidth x maxHeight (the pusher's CONFIG maximum): scaled to fit with
    /// `scaleMethod`, cropped from the top-left corner without one. Then draws the cursor.
    public func grab(offset: UInt64, destination: UnsafeMutableRawBufferPointer, maxWidth: Int = .max,
                     maxHeight: Int = .max) throws(X11CaptureError) -> GrabbedFrame {
        guard let grabber else { preconditionFailure("X11CaptureSource.grab before attach(memoryDescriptor:)") }
        var current = rect
        let size: (width: Int, height: Int)
        let stride: Int
        var cursorDrawn = false
        do {
            if scaleMethod != nil && (current.width > maxWidth || current.height > maxHeight) {
                size = fittedSize(width: current.width, height: current.height, maxWidth: maxWidth, maxHeight: maxHeight)
                if let renderScaler {
                    let pixmap = renderScaler.scale(current, to: size)
                    stride = try grabber.grab(ScreenRect(x: 0, y: 0, width: size.width, height: size.height),
                                              offset: offset, destination: destination, drawable: pixmap)
                } else {
                    let yuvScaler = yuvScaler!
                    let full = try yuvScaler.grab(current)
                    // The pointer is drawn at full size, then scaled with the picture.
                    cursorDrawn = cursor?.composite(into: full.pixels, strideBytes: full.strideBytes, rect: current) ?? false
                    stride = yuvScaler.scale(full, width: current.width, height: current.height, to: size,
                                             destination: destination)
                }
            } else {
                current.width = min(current.width, max(1, maxWidth))
                current.height = min(current.height, max(1, maxHeight))
                size = (current.width, current.height)
                stride = try grabber.grab(current, offset: offset, destination: destination)
            }
        } catch {
            if let reason = display.connectionError { throw .serverLost(reason) }
            throw .grab(error)
        }
        if let damage {
            xcb_damage_subtract(display.connection, damage, 0, 0)
            hasChanges = false
        }
        if yuvScaler == nil || size == (current.width, current.height) {
            cursorDrawn = cursor?.composite(into: destination, strideBytes: stride, rect: current,
                                            outputWidth: size.width, outputHeight: size.height) ?? false
        }
        return GrabbedFrame(width: size.width, height: size.height, strideBytes: stride, cursorDrawn: cursorDrawn)
    }

    // MARK: Setup

    private func startDamageTracking() {
        let connection = display.connection
        guard let extensionData = xcb_get_extension_data(connection, CXCB_damage_id()), extensionData.pointee.present != 0,
              let version = xcb_damage_query_version_reply(connection, xcb_damage_query_version(connection, 1, 1), nil)
        else { return }
        free(version)
        damageFirstEvent = extensionData.pointee.first_event
        let id = xcb_generate_id(connection)
        xcb_damage_create(connection, id, display.root, UInt8(XCB_DAMAGE_REPORT_LEVEL_NON_EMPTY.rawValue))
        damage = id
    }

    private func startScreenChangeTracking() {
        let connection = display.connection
        guard let extensionData = xcb_get_extension_data(connection, CXCB_randr_id()), extensionData.pointee.present != 0
        else { return }
        randrFirstEvent = extensionData.pointee.first_event
        xcb_randr_select_input(connection, display.root, UInt16(XCB_RANDR_NOTIFY_MASK_SCREEN_CHANGE.rawValue))
    }

    /// Whether damage tracking is active (the server has the DAMAGE extension).
    public var tracksDamage: Bool { damage != nil }
}
