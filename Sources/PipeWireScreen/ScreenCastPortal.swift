import CDBus

#if canImport(Glibc)
import Glibc
#endif

/// What the portal may offer the user to share.
public struct PortalSourceTypes: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let monitor = PortalSourceTypes(rawValue: 1)
    public static let window = PortalSourceTypes(rawValue: 2)
}

/// How to ask the xdg-desktop-portal ScreenCast interface for a stream.
public struct ScreenCastPortalOptions: Sendable {
    public var sourceTypes = PortalSourceTypes.monitor
    /// The pointer in the stream: asked for as metadata (blended in by the helper), else embedded by the
    /// compositor, else hidden, whichever the portal offers first (`AvailableCursorModes`); false asks
    /// for it hidden (`--no-cursor`).
    public var wantsCursor = true
    /// Reuse the last choice through the saved restore token (persist_mode 2).
    public var restoresSelection = true
    /// Where the restore token is kept; default `$XDG_STATE_HOME/livepush/screencast-restore-token`
    /// (`~/.local/state/livepush/...`).
    public var restoreTokenPath: String?
    /// How long to wait for each answer, the user's choice included.
    public var responseTimeoutMs = 300_000
    /// Polled (every 100 ms) while waiting for an answer: true gives up with `.interrupted` (a
    /// SIGTERM or Ctrl-C while the desktop's dialog is open).
    public var stopRequested: (@Sendable () -> Bool)?

    public init() {}

    public static var defaultRestoreTokenPath: String {
        let state = getenv("XDG_STATE_HOME").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((getenv("HOME").map { String(cString: $0) } ?? "/tmp") + "/.local/state")
        return state + "/livepush/screencast-restore-token"
    }
}

/// Why the portal flow failed. Each says what to do.
public enum ScreenCastPortalError: Error, Equatable, CustomStringConvertible {
    case noSessionBus(String)
    case portalMissing(String)
    case callFailed(method: String, error: String)
    case cancelled(method: String)
    case portalEnded(method: String, code: UInt32)
    case badAnswer(method: String, detail: String)
    case noAnswer(method: String, timeoutMs: Int)
    /// None of the source types asked for is offered (`AvailableSourceTypes`).
    case sourceTypeUnavailable(wanted: PortalSourceTypes, available: PortalSourceTypes)
    /// Stopped while waiting for the portal's answer.
    case interrupted(method: String)

    public var description: String {
        switch self {
        case .noSessionBus(let detail):
            return "cannot reach the D-Bus session bus (\(detail)); the ScreenCast portal needs a desktop session "
                + "(DBUS_SESSION_BUS_ADDRESS), or use --source pipewire --node ID"
        case .portalMissing(let detail):
            return "no ScreenCast portal on the session bus (\(detail)); install xdg-desktop-portal and the backend "
                + "of your desktop (xdg-desktop-portal-gnome, -kde or -wlr), or use --source pipewire --node ID"
        case .callFailed(let method, let error):
            return "the ScreenCast portal's \(method) failed: \(error)"
        case .cancelled(let method):
            return "screen sharing was cancelled in the desktop's dialog (portal \(method) answered 1); "
                + "run again and choose what to share"
        case .portalEnded(let method, let code):
            return "the ScreenCast portal ended the request (\(method) answered \(code)); "
                + "the desktop refused or closed the session, see its portal log"
        case .badAnswer(let method, let detail):
            return "the ScreenCast portal's answer to \(method) is not understood: \(detail)"
        case .noAnswer(let method, let timeoutMs):
            return "the ScreenCast portal did not answer \(method) within \(timeoutMs) ms"
        case .interrupted(let method):
            return "stopped while waiting for the ScreenCast portal's answer to \(method); the request was closed"
        case .sourceTypeUnavailable(let wanted, let available):
            return "the ScreenCast portal offers \(available.names) (AvailableSourceTypes=\(available.rawValue)), "
                + "not \(wanted.names); use --portal-source \(available.contains(.monitor) ? "monitor" : "window")"
        }
    }
}

/// A granted screen cast: the PipeWire node to capture, reached through the descriptor the portal
/// opened. Keep it open while capturing: closing it closes the portal session.
public final class ScreenCastSession {
    public let nodeID: UInt32
    /// The size the portal reported for the stream, if it did.
    public let size: (width: Int, height: Int)?
    /// Set when the restore token could not be saved (capture goes on; the user is asked next time).
    public let tokenWarning: String?
    /// What the portal said it can do.
    public let capabilities: PortalCapabilities
    /// The cursor mode asked for (nil: the portal lists none, so none was asked for).
    public let cursorMode: PortalCursorMode?
    /// Set when the cursor mode differs from the one wanted; says what the user gets instead.
    public let cursorNotice: String?
    private var remoteDescriptor: Int32
    private var bus: PortalBus?
    private let sessionHandle: String

    init(nodeID: UInt32, size: (Int, Int)?, remoteDescriptor: Int32, bus: PortalBus, sessionHandle: String,
         tokenWarning: String?, capabilities: PortalCapabilities, cursor: (mode: PortalCursorMode?, notice: String?))
    {
        self.nodeID = nodeID
        self.size = size
        self.capabilities = capabilities
        self.cursorMode = cursor.mode
        self.cursorNotice = cursor.notice
        self.remoteDescriptor = remoteDescriptor
        self.bus = bus
        self.sessionHandle = sessionHandle
        self.tokenWarning = tokenWarning
    }

    /// The PipeWire socket the portal opened; the caller owns it from now on.
    public func takeRemoteDescriptor() -> Int32 {
        let descriptor = remoteDescriptor
        remoteDescriptor = -1
        return descriptor
    }

    /// Closes the portal session (org.freedesktop.portal.Session.Close) and the bus connection.
    public func close() {
        if remoteDescriptor >= 0 { Glibc.close(remoteDescriptor) }
        remoteDescriptor = -1
        guard let bus else { return }
        self.bus = nil
        _ = try? bus.call(path: sessionHandle, interface: "org.freedesktop.portal.Session", method: "Close",
                          arguments: [], timeoutMs: 1000)
        bus.close()
    }

    deinit { close() }
}

/// The ScreenCast flow of xdg-desktop-portal: CreateSession, SelectSources, Start, OpenPipeWireRemote.
public enum ScreenCastPortal {
    static let service = "org.freedesktop.portal.Desktop"
    static let objectPath = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.ScreenCast"

    public static func start(_ options: ScreenCastPortalOptions) throws(ScreenCastPortalError) -> ScreenCastSession {
        let bus = try PortalBus()
        do {
            return try run(bus, options)
        } catch {
            bus.close()
            throw error
        }
    }

    private static func run(_ bus: PortalBus, _ options: ScreenCastPortalOptions) throws(ScreenCastPortalError)
        -> ScreenCastSession
    {
        let tokenPath = options.restoreTokenPath ?? ScreenCastPortalOptions.defaultRestoreTokenPath
        let prefix = "livepush\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        // Never ask for what the portal lacks: it refuses the whole request ("Unavailable cursor mode 4").
        let capabilities = try PortalCapabilities.read(bus, timeoutMs: options.responseTimeoutMs)
        let sourceTypes = try capabilities.sourceTypes(for: options.sourceTypes)
        let cursor = capabilities.cursorChoice(wantsCursor: options.wantsCursor)

        let created = try bus.request("CreateSession", stop: options.stopRequested, token: prefix + "_create", timeoutMs: options.responseTimeoutMs) {
            [.dictionary(["session_handle_token": .string(prefix + "_session"), "handle_token": .string($0)])]
        }
        guard case .string(let sessionHandle)? = created["session_handle"] ?? nil else {
            throw .badAnswer(method: "CreateSession", detail: "no session_handle in \(created.keys.sorted())")
        }

        var selectOptions: [String: PortalValue] = [
            "types": .uint32(sourceTypes.rawValue),
            "multiple": .bool(false),
        ]
        if let mode = cursor.mode { selectOptions["cursor_mode"] = .uint32(mode.rawValue) }
        if capabilities.keepsRestoreTokens {
            selectOptions["persist_mode"] = .uint32(2)  // until revoked
            if options.restoresSelection, let token = readToken(tokenPath) {
                selectOptions["restore_token"] = .string(token)
            }
        }
        _ = try bus.request("SelectSources", stop: options.stopRequested, token: prefix + "_select", timeoutMs: options.responseTimeoutMs) {
            var withHandle = selectOptions
            withHandle["handle_token"] = .string($0)
            return [.objectPath(sessionHandle), .dictionary(withHandle)]
        }

        let started = try bus.request("Start", stop: options.stopRequested, token: prefix + "_start", timeoutMs: options.responseTimeoutMs) {
            [.objectPath(sessionHandle), .string(""), .dictionary(["handle_token": .string($0)])]
        }
        guard case .array(let streams)? = started["streams"] ?? nil, case .structure(let first)? = streams.first,
              case .uint32(let nodeID)? = first.first
        else {
            throw .badAnswer(method: "Start", detail: "no stream in its results (\(started.keys.sorted()))")
        }
        var size: (Int, Int)?
        if first.count > 1, case .dictionary(let properties) = first[1], case .structure(let pair)? = properties["size"],
           pair.count == 2, case .int32(let width) = pair[0], case .int32(let height) = pair[1]
        {
            size = (Int(width), Int(height))
        }
        // The token is single-use: replace the saved one with the new one (or remove it).
        var tokenWarning: String?
        if case .string(let token)? = started["restore_token"] ?? nil {
            tokenWarning = writeToken(token, to: tokenPath)
        } else if capabilities.keepsRestoreTokens {
            unlink(tokenPath)  // a portal older than version 4 never had this one: keep it for a newer one
        }

        let reply = try bus.call(path: objectPath, interface: interface, method: "OpenPipeWireRemote",
                                 arguments: [.objectPath(sessionHandle), .dictionary([:])],
                                 timeoutMs: options.responseTimeoutMs)
        guard case .descriptor(let descriptor)? = reply.first else {
            throw .badAnswer(method: "OpenPipeWireRemote", detail: "no file descriptor in the reply")
        }
        return ScreenCastSession(nodeID: nodeID, size: size, remoteDescriptor: descriptor, bus: bus,
                                 sessionHandle: sessionHandle, tokenWarning: tokenWarning, capabilities: capabilities,
                                 cursor: cursor)
    }

    static func readToken(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let token = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }

    /// Writes the token atomically (a temporary file renamed over the old one), mode 0600.
    static func writeToken(_ token: String, to path: String) -> String? {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        var prefix = ""
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                return "cannot create \(prefix) for the portal's restore token: \(String(cString: strerror(errno)))"
            }
        }
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            return "cannot write the portal's restore token to \(temporary): \(String(cString: strerror(errno)))"
        }
        let bytes = Array((token + "\n").utf8)
        let written = write(descriptor, bytes, bytes.count)
        Glibc.close(descriptor)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            return "cannot save the portal's restore token to \(path): \(String(cString: strerror(errno)))"
        }
        return nil
    }
}

private extension String {
    func trimmingCharacters(in set: WhitespaceSet) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}

private enum WhitespaceSet { case whitespacesAndNewlines }
