import CXCB

#if canImport(Glibc)
import Glibc
#endif

/// A rectangle in root-window coordinates, in pixels.
public struct ScreenRect: Equatable, Sendable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)+\(x)+\(y)" }

    /// The part of this rectangle inside `bounds` (possibly empty).
    public func clamped(to bounds: ScreenRect) -> ScreenRect {
        let left = max(x, bounds.x), top = max(y, bounds.y)
        let right = min(x + width, bounds.x + bounds.width), bottom = min(y + height, bounds.y + bounds.height)
        return ScreenRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }
}

/// A monitor as RandR describes it.
public struct X11Monitor: Equatable, Sendable {
    public let index: Int
    public let name: String
    public let isPrimary: Bool
    public let rect: ScreenRect
}

/// A top-level window.
public struct X11Window: Equatable, Sendable {
    public let id: UInt32
    public let name: String
    public let rect: ScreenRect
    public let isViewable: Bool

    public var hexID: String { "0x" + String(id, radix: 16) }
}

extension X11Display {
    /// The monitors, from RandR 1.5's monitor list; the whole screen as one monitor when RandR
    /// offers none.
    public func monitors() -> [X11Monitor] {
        let cookie = xcb_randr_get_monitors(connection, root, 1)
        guard let reply = xcb_randr_get_monitors_reply(connection, cookie, nil) else { return [wholeScreenMonitor] }
        defer { free(reply) }
        var result: [X11Monitor] = []
        var iterator = xcb_randr_get_monitors_monitors_iterator(reply)
        while iterator.rem > 0 {
            let info = iterator.data.pointee
            result.append(X11Monitor(
                index: result.count, name: atomName(info.name) ?? "monitor-\(result.count)", isPrimary: info.primary != 0,
                rect: ScreenRect(x: Int(info.x), y: Int(info.y), width: Int(info.width), height: Int(info.height))))
            xcb_randr_monitor_info_next(&iterator)
        }
        return result.isEmpty ? [wholeScreenMonitor] : result
    }

    private var wholeScreenMonitor: X11Monitor {
        X11Monitor(index: 0, name: "screen", isPrimary: true,
                   rect: ScreenRect(x: 0, y: 0, width: screenWidth, height: screenHeight))
    }

    /// The root window's children, bottom to top, with their names and root coordinates.
    public func topLevelWindows() -> [X11Window] {
        guard let reply = xcb_query_tree_reply(connection, xcb_query_tree(connection, root), nil) else { return [] }
        defer { free(reply) }
        let count = Int(xcb_query_tree_children_length(reply))
        guard let children = xcb_query_tree_children(reply) else { return [] }
        return (0..<count).compactMap { index in
            let id = children[index]
            guard let rect = rootGeometry(of: id) else { return nil }
            let attributes = xcb_get_window_attributes_reply(connection, xcb_get_window_attributes(connection, id), nil)
            defer { free(attributes) }
            let viewable = attributes?.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue)
            return X11Window(id: id, name: windowName(id) ?? "", rect: rect, isViewable: viewable)
        }
    }

    /// A window's rectangle in root coordinates, or nil when it does not exist (any more).
    public func rootGeometry(of window: UInt32) -> ScreenRect? {
        guard let geometry = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, window), nil) else {
            return nil
        }
        defer { free(geometry) }
        let cookie = xcb_translate_coordinates(connection, window, root, 0, 0)
        guard let translated = xcb_translate_coordinates_reply(connection, cookie, nil) else { return nil }
        defer { free(translated) }
        return ScreenRect(x: Int(translated.pointee.dst_x), y: Int(translated.pointee.dst_y),
                          width: Int(geometry.pointee.width), height: Int(geometry.pointee.height))
    }

    /// _NET_WM_NAME (UTF-8), else WM_NAME.
    public func windowName(_ window: UInt32) -> String? {
        if let netName = internAtom("_NET_WM_NAME"), let utf8 = internAtom("UTF8_STRING"),
           let name = stringProperty(window, property: netName, type: utf8), !name.isEmpty {
            return name
        }
        return stringProperty(window, property: UInt32(XCB_ATOM_WM_NAME.rawValue), type: UInt32(XCB_ATOM_STRING.rawValue))
    }

    func internAtom(_ name: String) -> UInt32? {
        let cookie = xcb_intern_atom(connection, 1, UInt16(name.utf8.count), name)
        guard let reply = xcb_intern_atom_reply(connection, cookie, nil) else { return nil }
        defer { free(reply) }
        return reply.pointee.atom == 0 ? nil : reply.pointee.atom
    }

    func atomName(_ atom: UInt32) -> String? {
        guard let reply = xcb_get_atom_name_reply(connection, xcb_get_atom_name(connection, atom), nil) else {
            return nil
        }
        defer { free(reply) }
        let length = Int(xcb_get_atom_name_name_length(reply))
        guard let bytes = xcb_get_atom_name_name(reply) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self)
    }

    private func stringProperty(_ window: UInt32, property: UInt32, type: UInt32) -> String? {
        let cookie = xcb_get_property(connection, 0, window, property, type, 0, 1024)
        guard let reply = xcb_get_property_reply(connection, cookie, nil) else { return nil }
        defer { free(reply) }
        let length = Int(xcb_get_property_value_length(reply))
        guard length > 0, let value = xcb_get_property_value(reply) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
    }
}
