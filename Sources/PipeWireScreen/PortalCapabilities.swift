/// How the pointer reaches the stream: the ScreenCast portal's `cursor_mode` values.
public enum PortalCursorMode: UInt32, Sendable, CaseIterable {
    /// No pointer in the stream.
    case hidden = 1
    /// The compositor draws the pointer into the picture.
    case embedded = 2
    /// The pointer travels as cursor metadata beside the picture; the helper blends it in.
    case metadata = 4

    /// The name used in notices and in the helper's source description.
    public var name: String {
        switch self {
        case .hidden: return "hidden"
        case .embedded: return "embedded"
        case .metadata: return "metadata"
        }
    }
}

/// The cursor modes a portal offers (its `AvailableCursorModes` bit mask).
public struct PortalCursorModes: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ mode: PortalCursorMode) { rawValue = mode.rawValue }

    public func contains(_ mode: PortalCursorMode) -> Bool { rawValue & mode.rawValue != 0 }

    /// "embedded, hidden" (in the order of preference), or "none".
    public var names: String {
        let names = [PortalCursorMode.metadata, .embedded, .hidden].filter(contains).map(\.name)
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}

extension PortalSourceTypes {
    /// "monitor, window", or "none".
    public var names: String {
        var names: [String] = []
        if contains(.monitor) { names.append("monitor") }
        if contains(.window) { names.append("window") }
        if rawValue & ~(PortalSourceTypes.monitor.rawValue | PortalSourceTypes.window.rawValue) != 0 {
            names.append("virtual")
        }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}

/// What the ScreenCast portal says it can do: its D-Bus properties `version`,
/// `AvailableSourceTypes` and `AvailableCursorModes` (read before any request).
public struct PortalCapabilities: Sendable {
    /// The interface version; restore tokens (`persist_mode`) need 4.
    public var version: UInt32
    public var sourceTypes: PortalSourceTypes?
    /// nil when the portal lists none (version 1 has no cursor modes).
    public var cursorModes: PortalCursorModes?

    public init(version: UInt32, sourceTypes: PortalSourceTypes?, cursorModes: PortalCursorModes?) {
        self.version = version
        self.sourceTypes = sourceTypes
        self.cursorModes = cursorModes
    }

    /// Whether the portal takes `persist_mode` and `restore_token` (version 4 and later).
    public var keepsRestoreTokens: Bool { version >= 4 }

    /// The cursor mode to ask for, never one the portal lacks: with the pointer wanted, metadata,
    /// then embedded, then hidden; without it, hidden, then metadata (not blended), then embedded.
    /// `mode` is nil when the portal lists no modes at all (then `cursor_mode` is not sent). The
    /// notice says what the user gets instead of what they asked for.
    public func cursorChoice(wantsCursor: Bool) -> (mode: PortalCursorMode?, notice: String?) {
        guard let modes = cursorModes, modes.rawValue != 0 else {
            let notice = wantsCursor
                ? "the ScreenCast portal lists no cursor modes (version \(version)); the pointer is as the desktop "
                    + "draws it" : nil
            return (nil, notice)
        }
        let order: [PortalCursorMode] = wantsCursor ? [.metadata, .embedded, .hidden] : [.hidden, .metadata, .embedded]
        let mode = order.first(where: modes.contains)!
        guard mode != order[0] else { return (mode, nil) }
        let offered = "the ScreenCast portal offers cursor modes \(modes.names) (AvailableCursorModes=\(modes.rawValue))"
        switch mode {
        case .embedded where wantsCursor:
            return (mode, offered + ", not metadata; the pointer comes drawn into the picture (embedded)")
        case .hidden:
            return (mode, offered + "; the picture comes without the pointer (hidden)")
        case .embedded:
            return (mode, offered + ", not hidden; the pointer stays in the picture (embedded), --no-cursor cannot "
                + "remove it")
        case .metadata:
            return (mode, offered + ", not hidden; the pointer comes as metadata and is left out of the picture")
        }
    }

    /// The source types to ask for: those wanted that the portal offers. Throws when it offers none
    /// of them (a configuration the portal can never satisfy).
    public func sourceTypes(for wanted: PortalSourceTypes) throws(ScreenCastPortalError) -> PortalSourceTypes {
        guard let available = sourceTypes, available.rawValue != 0 else { return wanted }
        let usable = wanted.intersection(available)
        guard !usable.isEmpty else { throw .sourceTypeUnavailable(wanted: wanted, available: available) }
        return usable
    }

    /// Reads the properties through org.freedesktop.DBus.Properties.GetAll.
    static func read(_ bus: PortalBus, timeoutMs: Int) throws(ScreenCastPortalError) -> PortalCapabilities {
        let reply: [PortalValue]
        do {
            reply = try bus.call(path: ScreenCastPortal.objectPath, interface: "org.freedesktop.DBus.Properties",
                                 method: "GetAll", arguments: [.string(ScreenCastPortal.interface)],
                                 timeoutMs: timeoutMs)
        } catch .callFailed(_, let error) where error.hasPrefix("org.freedesktop.DBus.Error.InvalidArgs")
            || error.hasPrefix("org.freedesktop.DBus.Error.UnknownInterface")
        {
            throw .portalMissing(error)  // xdg-desktop-portal runs, but no backend gives it ScreenCast
        }
        guard case .dictionary(let properties)? = reply.first else {
            throw .badAnswer(method: "Properties.GetAll", detail: "no a{sv} in the reply")
        }
        guard case .uint32(let version)? = properties["version"] else {
            // An object without the ScreenCast interface answers with no properties.
            throw .portalMissing("org.freedesktop.portal.Desktop has no ScreenCast interface (no version property)")
        }
        var capabilities = PortalCapabilities(version: version, sourceTypes: nil, cursorModes: nil)
        if case .uint32(let types)? = properties["AvailableSourceTypes"] {
            capabilities.sourceTypes = PortalSourceTypes(rawValue: types)
        }
        if case .uint32(let modes)? = properties["AvailableCursorModes"] {
            capabilities.cursorModes = PortalCursorModes(rawValue: modes)
        }
        return capabilities
    }
}
