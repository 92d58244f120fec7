import CDBus

#if canImport(Glibc)
import Glibc
#endif

/// The desktop's word that the session is locked, from the session bus: the `ActiveChanged(b)`
/// signal of `org.gnome.ScreenSaver` (GNOME Shell's screen shield) and of `org.freedesktop.ScreenSaver`
/// (KDE, Xfce, Cinnamon, MATE), and their `GetActive()` when it starts.
///
/// Owned by one thread (livepush-capture's capture loop): `poll()` never blocks.
public final class SessionLockSignals {
    /// The services asked, each at its own object path.
    static let services: [(name: String, path: String)] = [
        ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver"),
        ("org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver"),
        ("org.freedesktop.ScreenSaver", "/ScreenSaver"),
    ]
    /// Their interfaces, each once.
    static let interfaces = Set(services.map(\.name))
    private var connection: OpaquePointer?
    /// The last state heard: nil until a service answered or signalled.
    public private(set) var locked: Bool?

    /// Nil when there is no session bus to listen on. Never starts one: without
    /// `DBUS_SESSION_BUS_ADDRESS` or `$XDG_RUNTIME_DIR/bus`, libdbus would autolaunch a bus daemon.
    public init?() {
        guard Self.sessionBusExists() else { return nil }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error) else { return nil }
        self.connection = connection
        dbus_connection_set_exit_on_disconnect(connection, 0)
        for interface in Self.interfaces {
            dbus_bus_add_match(connection, "type='signal',interface='\(interface)',member='ActiveChanged'", &error)
            if dbus_error_is_set(&error) != 0 {
                dbus_error_free(&error)
                dbus_error_init(&error)
            }
        }
        for service in Self.services where locked != true {
            if let active = getActive(service.name, path: service.path) { locked = active }
        }
    }

    deinit {
        guard let connection else { return }
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    /// Reads what arrived since the last call, without waiting; returns the current state (nil: no
    /// service has said anything).
    public func poll() -> Bool? {
        guard let connection else { return locked }
        guard dbus_connection_read_write(connection, 0) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            self.connection = nil
            return locked
        }
        while let message = dbus_connection_pop_message(connection) {
            defer { dbus_message_unref(message) }
            let isActiveChanged = Self.interfaces.contains { interface in
                dbus_message_is_signal(message, interface, "ActiveChanged") != 0
            }
            guard isActiveChanged else { continue }
            var iterator = DBusMessageIter()
            guard dbus_message_iter_init(message, &iterator) != 0,
                  dbus_message_iter_get_arg_type(&iterator) == CDBus_TYPE_BOOLEAN()
            else { continue }  // not (b): not a screen saver's signal
            var value: dbus_bool_t = 0
            dbus_message_iter_get_basic(&iterator, &value)
            locked = value != 0
        }
        return locked
    }

    private func getActive(_ service: String, path: String) -> Bool? {
        guard let message = dbus_message_new_method_call(service, path, service, "GetActive") else { return nil }
        defer { dbus_message_unref(message) }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        // No service activation: a missing screen saver answers ServiceUnknown at once.
        dbus_message_set_auto_start(message, 0)
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, 500, &error) else { return nil }
        defer { dbus_message_unref(reply) }
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(reply, &iterator) != 0,
              dbus_message_iter_get_arg_type(&iterator) == CDBus_TYPE_BOOLEAN()
        else { return nil }
        var value: dbus_bool_t = 0
        dbus_message_iter_get_basic(&iterator, &value)
        return value != 0
    }

    private static func sessionBusExists() -> Bool {
        if let address = getenv("DBUS_SESSION_BUS_ADDRESS"), address.pointee != 0 { return true }
        guard let runtime = getenv("XDG_RUNTIME_DIR") else { return false }
        var status = stat()
        return stat(String(cString: runtime) + "/bus", &status) == 0
    }
}
