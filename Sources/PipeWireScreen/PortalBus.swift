import CDBus

#if canImport(Glibc)
import Glibc
import LinuxSystem
#endif

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

    init(subscribesToResponses: Bool = true) throws(ScreenCastPortalError) {
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
        guard subscribesToResponses else { return }
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

    /// Calls a portal method (of the ScreenCast interface unless `interface` says another) that answers
    /// with a Request, then waits for that Request's Response signal; returns its results. `arguments`
    /// gets the handle token to put in the options.
    func request(_ method: String, interface: String = ScreenCastPortal.interface, stop: (@Sendable () -> Bool)? = nil,
                 token: String, timeoutMs: Int,
                 arguments: (String) -> [PortalValue]) throws(ScreenCastPortalError) -> [String: PortalValue]
    {
        let expectedPath = "/org/freedesktop/portal/desktop/request/\(senderPath)/\(token)"
        let reply = try call(path: ScreenCastPortal.objectPath, interface: interface, method: method,
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
            if let stop, stop() {
                // Closing the Request dismisses the desktop's dialog.
                _ = try? call(path: handle, interface: "org.freedesktop.portal.Request", method: "Close", arguments: [],
                              timeoutMs: 1000)
                throw .interrupted(method: method)
            }
            guard dbus_connection_read_write(connection, Int32(min(remainingMs, 100))) != 0 else {
                throw .callFailed(method: method, error: "the session bus closed the connection")
            }
        }
    }

    /// A method call and its reply's arguments.
    func call(destination: String = ScreenCastPortal.service, path: String, interface: String, method: String,
              arguments: [PortalValue], timeoutMs: Int) throws(ScreenCastPortalError) -> [PortalValue]
    {
        guard let message = dbus_message_new_method_call(destination, path, interface, method) else {
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
            // An interface of the portal itself (ScreenCast, Camera) that the desktop lacks: no such portal.
            let portalInterface = interface == ScreenCastPortal.interface || interface == CameraPortal.interface
            if name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.UnknownObject"
                || (name == "org.freedesktop.DBus.Error.UnknownInterface" && portalInterface)
                || (name == "org.freedesktop.DBus.Error.UnknownMethod" && portalInterface)
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

    private static func nowMs() -> Int { MonotonicClock.nowMs() }

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
