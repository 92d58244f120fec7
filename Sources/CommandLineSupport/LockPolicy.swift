/// `--on-lock`: what a capture helper does while the screen is locked. livepush-capture takes the
/// option; `livepush screen` and `push` pass it on and check it before anything starts, with the
/// same words (`parse`).
public enum LockPolicy: String, CaseIterable, Sendable {
    /// PAUSE {SCREEN_LOCKED}: viewers see the pusher's pause picture; the desktop's sound goes on.
    case pause
    /// As pause, and the desktop's sound (--desktop-audio) is withheld too.
    case mute
    /// The lock screen is sent like any other picture.
    case ignore

    /// The policy `text` names, or a usage error that lists the values (and the nearest one).
    public static func parse(_ text: String) throws(ArgumentError) -> LockPolicy {
        if let policy = LockPolicy(rawValue: text) { return policy }
        let names = allCases.map(\.rawValue)
        let near = Suggestion.nearest(to: text, in: names).map { " (did you mean \($0)?)" } ?? ""
        throw .invalidValue(option: "on-lock", value: text, reason: "use pause, mute or ignore" + near)
    }
}
