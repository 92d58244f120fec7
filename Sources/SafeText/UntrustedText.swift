/// Text that came from a stranger (a capture helper, an RTMP or SRT server), made safe to show.
///
/// Protocol SPEC §2.3: a receiver that logs or displays text from its peer neutralises control
/// characters first, so that nothing a peer sends can move a cursor, clear a screen, retitle a
/// window or start a terminal escape sequence. LivePush applies `neutralised` where such text
/// enters the pusher (docs/architecture.md, "Text from strangers"): `PusherSession` for
/// everything a helper says (HELLO's name and version, START's info, FINISH, ERROR, the text a
/// violation quotes), `PushOutput` for what a server says (`_error` and `onStatus` descriptions,
/// SRT's reject reasons), and `HelperSupervisor` for the lines a helper prints. Every display
/// (the terminal, the JSON events, the dashboard, the session report) then shows the result.
///
/// It is a plain function on strings: its output has no control character left (a second pass
/// changes nothing in a text that fits the cap), and a display that escapes for its own medium
/// (HTML, JSON) composes with it.
public enum UntrustedText {
    /// The longest text shown, in Unicode scalars (FINISH, ERROR and server texts; a helper's name
    /// is at most 31 bytes anyway).
    public static let defaultMaxScalars = 300

    /// `text` with every control character shown escaped and its length capped:
    /// - C0 (U+0000 to U+001F, tab and line feed included), DEL (U+007F) and C1 (U+0080 to U+009F)
    ///   become `\x1b`-style escapes (two lowercase hex digits);
    /// - the bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069)
    ///   and the line and paragraph separators (U+2028, U+2029), which reorder or break what a
    ///   terminal shows, become `\u{202e}`-style escapes;
    /// - past `maxScalars` scalars (counted after escaping) the text is cut and ends with
    ///   `…(N more)`, N the scalars of the original text left out.
    /// Everything else (any letter of any script, emoji, a backslash) is kept as it is.
    public static func neutralised(_ text: some StringProtocol, maxScalars: Int = defaultMaxScalars) -> String {
        var result = String.UnicodeScalarView()
        var shown = 0
        var index = text.unicodeScalars.startIndex
        let scalars = text.unicodeScalars
        while index != scalars.endIndex {
            let escaped = escape(scalars[index])
            let length = escaped?.unicodeScalars.count ?? 1
            if shown + length > maxScalars {
                let left = scalars[index...].count
                result.append(contentsOf: "…(\(left) more)".unicodeScalars)
                return String(result)
            }
            if let escaped { result.append(contentsOf: escaped.unicodeScalars) } else { result.append(scalars[index]) }
            shown += length
            index = scalars.index(after: index)
        }
        return String(result)
    }

    /// True when `text` holds a character `neutralised` would escape.
    public static func needsNeutralising(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.contains { escape($0) != nil }
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String? {
        let value = scalar.value
        if value < 0x20 || (0x7F...0x9F).contains(value) {
            return "\\x" + hex(value, digits: 2)
        }
        if (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value) || value == 0x2028
            || value == 0x2029
        {
            return "\\u{" + hex(value, digits: 4) + "}"
        }
        return nil
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
