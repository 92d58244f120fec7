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
    /// Cursor as metadata (composited by us, `--no-cursor` leaves it out) rather than hidden.
    public var cursorAsMetadata = true
    /// Reuse the last choice through the saved restore token (persist_mode 2).
    public var restoresSelection = true
    /// Where the restore token is kept; default `$XDG_STATE_HOME/livepush/screencast-restore-token`
    /// (`~/.local/state/livepush/...`).
    public var restoreTokenPath: String?
    /// How long to wait for each answer, the user's choice included.
    public var responseTimeoutMs = 300_000

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
    private var remoteDescriptor: Int32
    private var bus: PortalBus?
    private let sessionHandle: String

    init(nodeID: UInt32, size: (Int, Int)?, remoteDescriptor: Int32, bus: PortalBus, sessionHandle: String,
         tokenWarning: String?)
    {
        self.nodeID = nodeID
        self.size = size
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

        let created = try bus.request("CreateSession", token: prefix + "_create", timeoutMs: options.responseTimeoutMs) {
            [.dictionary(["session_handle_token": .string(prefix + "_session"), "handle_token": .string($0)])]
        }
        guard case .string(let sessionHandle)? = created["session_handle"] ?? nil else {
            throw .badAnswer(method: "CreateSession", detail: "no session_handle in \(created.keys.sorted())")
        }

        var selectOptions: [String: PortalValue] = [
            "types": .uint32(options.sourceTypes.rawValue),
            "multiple": .bool(false),
            "cursor_mode": .uint32(options.cursorAsMetadata ? 4 : 1),  // 4 metadata, 1 hidden
            "persist_mode": .uint32(2),  // until revoked
        ]
        if options.restoresSelection, let token = readToken(tokenPath) { selectOptions["restore_token"] = .string(token) }
        _ = try bus.request("SelectSources", token: prefix + "_select", timeoutMs: options.responseTimeoutMs) {
            var withHandle = selectOptions
            withHandle["handle_token"] = .string($0)
            return [.objectPath(sessionHandle), .dictionary(withHandle)]
        }

        let started = try bus.request("Start", token: prefix + "_start", timeoutMs: options.responseTimeoutMs) {
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
        } else {
            unlink(tokenPath)
        }

        let reply = try bus.call(path: objectPath, interface: interface, method: "OpenPipeWireRemote",
                                 arguments: [.objectPath(sessionHandle), .dictionary([:])],
                                 timeoutMs: options.responseTimeoutMs)
        guard case .descriptor(let descriptor)? = reply.first else {
            throw .badAnswer(method: "OpenPipeWireRemote", detail: "no file descriptor in the reply")
        }
        return ScreenCastSession(nodeID: nodeID, size: size, remoteDescriptor: descriptor, bus: bus,
                                 sessionHandle: sessionHandle, tokenWarning: tokenWarning)
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

// MARK: D-Bus through libdbus

/// A value of the few D-Bus types the portal flow sends and reads.
indirect enum PortalValue: Equatable {
    case string(String)
    case objectPath(String)
    case uint32(UInt32)
    case int32(Int32)
    case bool(Bool)
    case descriptor(Int32)
    case array([PortalValue])
    case structure([PortalValue])
    case dictionary([String: PortalValue])
    case other(Int32)
}

/// A private connection to the session bus, for one portal session.
final class PortalBus {
    private var connection: OpaquePointer?
    private let senderPath: String

    init() throws(ScreenCastPortalError) {
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error) else {
            throw .noSessionBus(Self.text(error))
        }
        self.connection = connection
        dbus_connection_set_exit_on_disconnect(connection, 0)
        // The Request object's path is derived from our unique name: ":1.42" -> "1_42".
        let unique = String(cString: dbus_bus_get_unique_name(connection))
        senderPath = String(unique.dropFirst().map { $0 == "." ? "_" : $0 })
        dbus_bus_add_match(connection,
                           "type='signal',interface='org.freedesktop.portal.Request',member='Response'", &error)
        if dbus_error_is_set(&error) != 0 {
            let text = Self.text(error)
            close()
            throw .noSessionBus("cannot subscribe to portal responses: \(text)")
        }
    }

    func close() {
        guard let connection else { return }
        self.connection = nil
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    static func text(_ error: DBusError) -> String {
        let name = error.name.map { String(cString: $0) } ?? "error"
        let message = error.message.map { String(cString: $0) } ?? ""
        return message.isEmpty ? name : "\(name): \(message)"
    }

    /// Calls a ScreenCast method that answers with a Request, then waits for that Request's
    /// Response signal; returns its results. `arguments` gets the handle token to put in the options.
    func request(_ method: String, token: String, timeoutMs: Int,
                 arguments: (String) -> [PortalValue]) throws(ScreenCastPortalError) -> [String: PortalValue]
    {
        let expectedPath = "/org/freedesktop/portal/desktop/request/\(senderPath)/\(token)"
        let reply = try call(path: ScreenCastPortal.objectPath, interface: ScreenCastPortal.interface, method: method,
                             arguments: arguments(token), timeoutMs: timeoutMs)
        guard case .objectPath(let handle)? = reply.first else {
            throw .badAnswer(method: method, detail: "no Request handle in the reply")
        }
        let paths: Set<String> = [expectedPath, handle]
        let deadline = Self.nowMs() + timeoutMs
        while true {
            while let message = dbus_connection_pop_message(connection) {
                defer { dbus_message_unref(message) }
                guard dbus_message_is_signal(message, "org.freedesktop.portal.Request", "Response") != 0,
                      let path = dbus_message_get_path(message), paths.contains(String(cString: path))
                else { continue }
                let values = Self.read(message)
                guard values.count >= 2, case .uint32(let code) = values[0], case .dictionary(let results) = values[1]
                else { throw .badAnswer(method: method, detail: "a Response without (u, a{sv})") }
                switch code {
                case 0: return results
                case 1: throw .cancelled(method: method)
                default: throw .portalEnded(method: method, code: code)
                }
            }
            let remainingMs = deadline - Self.nowMs()
            if remainingMs <= 0 { throw .noAnswer(method: method, timeoutMs: timeoutMs) }
            guard dbus_connection_read_write(connection, Int32(min(remainingMs, 1000))) != 0 else {
                throw .callFailed(method: method, error: "the session bus closed the connection")
            }
        }
    }

    /// A method call and its reply's arguments.
    func call(path: String, interface: String, method: String, arguments: [PortalValue], timeoutMs: Int)
        throws(ScreenCastPortalError) -> [PortalValue]
    {
        guard let message = dbus_message_new_method_call(ScreenCastPortal.service, path, interface, method) else {
            throw .callFailed(method: method, error: "out of memory")
        }
        defer { dbus_message_unref(message) }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for argument in arguments { Self.append(argument, to: &iterator) }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, Int32(timeoutMs), &error) else {
            let name = error.name.map { String(cString: $0) } ?? ""
            let text = Self.text(error)
            if name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.UnknownObject"
                || (name == "org.freedesktop.DBus.Error.UnknownInterface" && interface == ScreenCastPortal.interface)
                || (name == "org.freedesktop.DBus.Error.UnknownMethod" && interface == ScreenCastPortal.interface)
            {
                throw .portalMissing(text)
            }
            if name == "org.freedesktop.DBus.Error.NoReply" || name == "org.freedesktop.DBus.Error.Timeout" {
                throw .noAnswer(method: method, timeoutMs: timeoutMs)
            }
            throw .callFailed(method: method, error: text)
        }
        defer { dbus_message_unref(reply) }
        return Self.read(reply)
    }

    private static func nowMs() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
    }

    // MARK: Marshalling with the message iterator API (no variadic calls)

    private static func append(_ value: PortalValue, to iterator: inout DBusMessageIter) {
        switch value {
        case .string(let text), .objectPath(let text):
            let type = value == .string(text) ? CDBus_TYPE_STRING() : CDBus_TYPE_OBJECT_PATH()
            text.withCString { pointer in
                var cString: UnsafePointer<CChar>? = pointer
                _ = dbus_message_iter_append_basic(&iterator, type, &cString)
            }
        case .uint32(var number):
            _ = dbus_message_iter_append_basic(&iterator, CDBus_TYPE_UINT32(), &number)
        case .int32(var number):
            _ = dbus_message_iter_append_basic(&iterator, CDBus_TYPE_INT32(), &number)
        case .bool(let flag):
            var number: dbus_bool_t = flag ? 1 : 0
            _ = dbus_message_iter_append_basic(&iterator, CDBus_TYPE_BOOLEAN(), &number)
        case .dictionary(let entries):
            var array = DBusMessageIter()
            _ = dbus_message_iter_open_container(&iterator, CDBus_TYPE_ARRAY(), "{sv}", &array)
            for key in entries.keys.sorted() {
                var entry = DBusMessageIter()
                _ = dbus_message_iter_open_container(&array, CDBus_TYPE_DICT_ENTRY(), nil, &entry)
                append(.string(key), to: &entry)
                let inner = entries[key]!
                var variant = DBusMessageIter()
                _ = dbus_message_iter_open_container(&entry, CDBus_TYPE_VARIANT(), signature(inner), &variant)
                append(inner, to: &variant)
                _ = dbus_message_iter_close_container(&entry, &variant)
                _ = dbus_message_iter_close_container(&array, &entry)
            }
            _ = dbus_message_iter_close_container(&iterator, &array)
        case .descriptor, .array, .structure, .other:
            break  // never sent
        }
    }

    private static func signature(_ value: PortalValue) -> String {
        switch value {
        case .string: return "s"
        case .objectPath: return "o"
        case .uint32: return "u"
        case .int32: return "i"
        case .bool: return "b"
        case .dictionary: return "a{sv}"
        default: return "v"
        }
    }

    static func read(_ message: OpaquePointer) -> [PortalValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        return readAll(&iterator)
    }

    private static func readAll(_ iterator: inout DBusMessageIter) -> [PortalValue] {
        var values: [PortalValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != CDBus_TYPE_INVALID() {
            values.append(readOne(&iterator))
            _ = dbus_message_iter_next(&iterator)
        }
        return values
    }

    private static func readOne(_ iterator: inout DBusMessageIter) -> PortalValue {
        let type = dbus_message_iter_get_arg_type(&iterator)
        switch type {
        case CDBus_TYPE_STRING(), CDBus_TYPE_OBJECT_PATH():
            var pointer: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iterator, &pointer)
            let text = pointer.map { String(cString: $0) } ?? ""
            return type == CDBus_TYPE_STRING() ? .string(text) : .objectPath(text)
        case CDBus_TYPE_UINT32():
            var number: UInt32 = 0
            dbus_message_iter_get_basic(&iterator, &number)
            return .uint32(number)
        case CDBus_TYPE_INT32():
            var number: Int32 = 0
            dbus_message_iter_get_basic(&iterator, &number)
            return .int32(number)
        case CDBus_TYPE_BOOLEAN():
            var number: dbus_bool_t = 0
            dbus_message_iter_get_basic(&iterator, &number)
            return .bool(number != 0)
        case CDBus_TYPE_UNIX_FD():
            var descriptor: Int32 = -1  // libdbus hands out a duplicate the caller owns
            dbus_message_iter_get_basic(&iterator, &descriptor)
            return .descriptor(descriptor)
        case CDBus_TYPE_VARIANT():
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return readOne(&inner)
        case CDBus_TYPE_STRUCT():
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return .structure(readAll(&inner))
        case CDBus_TYPE_ARRAY():
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            if dbus_message_iter_get_element_type(&iterator) == CDBus_TYPE_DICT_ENTRY() {
                var entries: [String: PortalValue] = [:]
                while dbus_message_iter_get_arg_type(&inner) == CDBus_TYPE_DICT_ENTRY() {
                    var entry = DBusMessageIter()
                    dbus_message_iter_recurse(&inner, &entry)
                    let key = readOne(&entry)
                    _ = dbus_message_iter_next(&entry)
                    let value = readOne(&entry)
                    if case .string(let name) = key { entries[name] = value }
                    _ = dbus_message_iter_next(&inner)
                }
                return .dictionary(entries)
            }
            return .array(readAll(&inner))
        default:
            return .other(type)
        }
    }
}
