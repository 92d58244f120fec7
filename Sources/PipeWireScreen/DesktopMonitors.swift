/// The desktop's monitor layout as GNOME's compositor states it (`org.gnome.Mutter.DisplayConfig`
/// `GetCurrentState` on the session bus). mutter ends every monitor screen cast when the monitors
/// are reconfigured (another mode, a rotation), and its portal then closes the session exactly as
/// when the user stops sharing; a layout that changed meanwhile tells the two apart.
public enum DesktopMonitors {
    static let service = "org.gnome.Mutter.DisplayConfig"

    /// One monitor as laid out: "Meta-0 1280x720+0+0", "Meta-0 720x1280+0+0" once rotated a quarter turn.
    /// nil when the desktop has no DisplayConfig service (not GNOME) or it does not answer in `timeoutMs`.
    public static func layout(timeoutMs: Int = 1000) -> [String]? {
        guard let bus = try? PortalBus(subscribesToResponses: false) else { return nil }
        defer { bus.close() }
        guard let reply = try? bus.call(destination: service, path: "/org/gnome/Mutter/DisplayConfig",
                                        interface: service, method: "GetCurrentState", arguments: [],
                                        timeoutMs: timeoutMs),
              reply.count >= 3, case .array(let monitors) = reply[1], case .array(let logical) = reply[2]
        else { return nil }
        // Each monitor: ((connector, vendor, product, serial), modes (id, w, h, refresh, scale, scales, props), props).
        var sizes: [String: (Int32, Int32)] = [:]
        for case .structure(let monitor) in monitors where monitor.count >= 2 {
            guard case .structure(let spec) = monitor[0], case .string(let connector)? = spec.first,
                  case .array(let modes) = monitor[1] else { continue }
            for case .structure(let mode) in modes where mode.count >= 7 {
                if case .int32(let width) = mode[1], case .int32(let height) = mode[2],
                   case .dictionary(let properties) = mode[6], properties["is-current"] == .bool(true)
                {
                    sizes[connector] = (width, height)
                }
            }
        }
        // Each logical monitor: (x, y, scale, transform, primary, monitors (connector, ...), props).
        var lines: [String] = []
        for case .structure(let entry) in logical where entry.count >= 6 {
            guard case .int32(let x) = entry[0], case .int32(let y) = entry[1], case .uint32(let transform) = entry[3],
                  case .array(let members) = entry[5] else { continue }
            for case .structure(let spec) in members {
                guard case .string(let connector)? = spec.first, let (width, height) = sizes[connector]
                else { continue }
                let quarterTurn = transform % 2 == 1  // 1, 3 (90, 270 degrees) and their flipped forms 5, 7
                let size = quarterTurn ? "\(height)x\(width)" : "\(width)x\(height)"
                lines.append("\(connector) \(size)+\(x)+\(y)" + (transform == 0 ? "" : " transform \(transform)"))
            }
        }
        return lines.sorted()
    }
}
