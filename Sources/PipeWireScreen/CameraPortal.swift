#if canImport(Glibc)
import Glibc
#endif

/// Why the Camera portal gave no access. Each says what to do.
public enum CameraPortalError: Error, Equatable, CustomStringConvertible {
    case noSessionBus(String)
    case portalMissing(String)
    case callFailed(method: String, error: String)
    /// The user refused in the desktop's dialog (or the permission store says no).
    case refused(method: String)
    case portalEnded(method: String, code: UInt32)
    case badAnswer(method: String, detail: String)
    case noAnswer(method: String, timeoutMs: Int)
    case interrupted(method: String)

    public var description: String {
        switch self {
        case .noSessionBus(let detail):
            return "cannot reach the D-Bus session bus (\(detail)); the Camera portal needs a desktop session "
                + "(DBUS_SESSION_BUS_ADDRESS), or leave out --camera-portal to take the camera from PipeWire directly"
        case .portalMissing(let detail):
            return "no Camera portal on the session bus (\(detail)); install xdg-desktop-portal, or leave out "
                + "--camera-portal to take the camera from PipeWire directly"
        case .callFailed(let method, let error):
            return "the Camera portal's \(method) failed: \(error)"
        case .refused(let method):
            return "camera access was refused (the Camera portal's \(method) answered 1: the desktop's dialog, or "
                + "its privacy settings); allow the camera and run again"
        case .portalEnded(let method, let code):
            return "the Camera portal ended the request (\(method) answered \(code)); see the portal's log"
        case .badAnswer(let method, let detail):
            return "the Camera portal's answer to \(method) is not understood: \(detail)"
        case .noAnswer(let method, let timeoutMs):
            return "the Camera portal did not answer \(method) within \(timeoutMs) ms"
        case .interrupted(let method):
            return "stopped while waiting for the Camera portal's answer to \(method); the request was closed"
        }
    }

    /// The ScreenCast flow's error of the shared bus code, in the Camera portal's words.
    init(_ error: ScreenCastPortalError) {
        switch error {
        case .noSessionBus(let detail): self = .noSessionBus(detail)
        case .portalMissing(let detail): self = .portalMissing(detail)
        case .callFailed(let method, let text): self = .callFailed(method: method, error: text)
        case .cancelled(let method): self = .refused(method: method)
        case .portalEnded(let method, let code): self = .portalEnded(method: method, code: code)
        case .badAnswer(let method, let detail): self = .badAnswer(method: method, detail: detail)
        case .noAnswer(let method, let timeoutMs): self = .noAnswer(method: method, timeoutMs: timeoutMs)
        case .interrupted(let method): self = .interrupted(method: method)
        case .sourceTypeUnavailable: self = .badAnswer(method: "AccessCamera", detail: "\(error)")
        }
    }
}

/// xdg-desktop-portal's Camera interface (what a sandboxed app must use): AccessCamera (the desktop
/// may ask the user; an unsandboxed caller is granted what the permission store says for the host,
/// asked once), then OpenPipeWireRemote, a PipeWire socket on which only cameras are visible
/// (WirePlumber grants the nodes whose media.role is Camera).
public enum CameraPortal {
    static let interface = "org.freedesktop.portal.Camera"

    /// What the portal says of itself.
    public struct Properties: Sendable, Equatable {
        public let version: UInt32
        /// Whether the portal sees a camera on its own PipeWire connection.
        public let isCameraPresent: Bool
    }

    /// Asks for access (AccessCamera, answered through its Request's Response) and returns the
    /// descriptor of a PipeWire connection showing the cameras; the caller owns it.
    /// - Parameters:
    ///   - asksAccess: false after access was granted once in this process (the permission stays): only
    ///     OpenPipeWireRemote (a new connection after a camera or the daemon came back).
    ///   - stopRequested: polled every 100 ms while the desktop's dialog may be open.
    public static func openRemote(asksAccess: Bool = true, timeoutMs: Int = 300_000,
                                  stopRequested: (@Sendable () -> Bool)? = nil) throws(CameraPortalError) -> Int32
    {
        do throws(ScreenCastPortalError) {
            let bus = try PortalBus()
            defer { bus.close() }
            if asksAccess {
                let token = "livepush\(getpid())_\(UInt32.random(in: 0...UInt32.max))_camera"
                _ = try bus.request("AccessCamera", interface: interface, stop: stopRequested, token: token,
                                    timeoutMs: timeoutMs) { [.dictionary(["handle_token": .string($0)])] }
            }
            let reply = try bus.call(path: ScreenCastPortal.objectPath, interface: interface, method: "OpenPipeWireRemote",
                                     arguments: [.dictionary([:])], timeoutMs: min(timeoutMs, 10_000))
            guard case .descriptor(let descriptor)? = reply.first else {
                throw .badAnswer(method: "OpenPipeWireRemote", detail: "no file descriptor in the reply")
            }
            return descriptor
        } catch {
            throw CameraPortalError(error)
        }
    }

    /// The portal's `version` and `IsCameraPresent`.
    public static func properties(timeoutMs: Int = 5000) throws(CameraPortalError) -> Properties {
        do throws(ScreenCastPortalError) {
            let bus = try PortalBus(subscribesToResponses: false)
            defer { bus.close() }
            let reply = try bus.call(path: ScreenCastPortal.objectPath, interface: "org.freedesktop.DBus.Properties",
                                     method: "GetAll", arguments: [.string(interface)], timeoutMs: timeoutMs)
            guard case .dictionary(let values)? = reply.first, case .uint32(let version)? = values["version"] else {
                throw .portalMissing("org.freedesktop.portal.Desktop has no Camera interface (no version property)")
            }
            guard case .bool(let present)? = values["IsCameraPresent"] else {
                return Properties(version: version, isCameraPresent: false)
            }
            return Properties(version: version, isCameraPresent: present)
        } catch .callFailed(_, let error) where error.hasPrefix("org.freedesktop.DBus.Error.InvalidArgs")
            || error.hasPrefix("org.freedesktop.DBus.Error.UnknownInterface")
        {
            throw .portalMissing(error)
        } catch {
            throw CameraPortalError(error)
        }
    }
}
