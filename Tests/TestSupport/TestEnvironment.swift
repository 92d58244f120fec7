import Foundation

/// The real test environment started by `tools/testenv` (Xvfb, nginx-rtmp, PipeWire), found
/// through the variables of its env file, never through hard-coded displays or ports.
///
/// Outside CI a test whose part is missing is skipped (`.enabled(if:)`); with
/// `LIVEPUSH_REQUIRE_ALL=1` (CI) it runs and fails, so a missing server is never a silent skip.
public enum TestEnvironment {
    public enum Part: String, CaseIterable, Sendable {
        case x11
        case rtmp
        /// The TLS front (nginx stream + ssl) before nginx-rtmp, and the test CA (issue 13).
        case rtmps
        case pipewire
        /// A real Wayland desktop (mutter headless) and ScreenCast portal: `tools/testenv --wayland` (issue 21).
        case wayland

        /// The variables tools/testenv writes for this part.
        public var variables: [String] {
            switch self {
            case .x11: return ["LIVEPUSH_TEST_DISPLAY", "LIVEPUSH_TEST_SCREEN_SIZE"]
            case .rtmp: return ["LIVEPUSH_TEST_RTMP_URL", "LIVEPUSH_TEST_RTMP_RECORD_DIR", "LIVEPUSH_TEST_HTTP_PORT"]
            case .rtmps:
                return ["LIVEPUSH_TEST_RTMPS_URL", "LIVEPUSH_TEST_RTMPS_WRONG_NAME_URL", "LIVEPUSH_TEST_RTMPS_EXPIRED_URL",
                        "LIVEPUSH_TEST_RTMPS_UNTRUSTED_URL", "LIVEPUSH_TEST_RTMPS_OLD_TLS_URL", "LIVEPUSH_TEST_TLS_CA_FILE",
                        "LIVEPUSH_TEST_TLS_DIR", "LIVEPUSH_TEST_NGINX_STREAM_MODULE"]
            case .pipewire:
                return ["XDG_RUNTIME_DIR", "LIVEPUSH_TEST_MIC", "LIVEPUSH_TEST_TONE_HZ", "LIVEPUSH_TEST_DESKTOP_SINK",
                        "LIVEPUSH_TEST_DESKTOP_TONE_HZ"]
            case .wayland:
                return ["LIVEPUSH_TEST_WAYLAND_BUS", "LIVEPUSH_TEST_WAYLAND_AS_USER", "LIVEPUSH_TEST_WAYLAND_APPROVALS",
                        "LIVEPUSH_TEST_WAYLAND_SIZE"]
            }
        }
    }

    public struct Missing: Error, CustomStringConvertible {
        public let part: Part
        public let variable: String
        public var description: String {
            "the test environment's \(part.rawValue) part is missing (\(variable) is not set): "
                + "run the tests with `make test`, or inside `tools/testenv run -- swift test`"
        }
    }

    /// True in CI: every part must be there.
    public static var requireAll: Bool { variable("LIVEPUSH_REQUIRE_ALL") == "1" }

    /// Whether tests of `part` should run: the part is there, or it is required (and its absence fails them).
    public static func isEnabled(_ part: Part) -> Bool {
        requireAll || part.variables.allSatisfy { variable($0) != nil }
    }

    /// The value of one of `part`'s variables, or a `Missing` error that says how to start the environment.
    public static func value(_ name: String, of part: Part) throws -> String {
        guard let value = variable(name) else { throw Missing(part: part, variable: name) }
        return value
    }

    public static func variable(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    // MARK: Typed accessors

    /// The X display of the test Xvfb, as `:12`.
    public static func display() throws -> String { try value("LIVEPUSH_TEST_DISPLAY", of: .x11) }

    /// The test Xvfb's screen size.
    public static func screenSize() throws -> (width: Int, height: Int) {
        let text = try value("LIVEPUSH_TEST_SCREEN_SIZE", of: .x11)
        let parts = text.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2 else { throw Missing(part: .x11, variable: "LIVEPUSH_TEST_SCREEN_SIZE (bad: \(text))") }
        return (parts[0], parts[1])
    }

    /// `rtmp://127.0.0.1:PORT/live/<key>`: nginx relays what is published there to players.
    public static func liveURL(key: String) throws -> String {
        try value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp) + "/live/" + key
    }

    /// `rtmp://127.0.0.1:PORT/live-kf/<key>`: the live app with nginx-rtmp's `exec_play`, which runs
    /// the hook `setOnPlayHook(key:command:)` wrote for `key` whenever a player joins.
    public static func keyframeOnJoinURL(key: String) throws -> String {
        try value("LIVEPUSH_TEST_RTMP_KEYFRAME_URL", of: .rtmp) + "/" + key
    }

    /// Writes the shell command nginx runs (as `sh`, with nginx's empty environment: absolute paths)
    /// when a player joins `keyframeOnJoinURL(key:)`; its output goes to the testenv's logs/on-play.log.
    public static func setOnPlayHook(key: String, command: String) throws {
        let directory = try value("LIVEPUSH_TEST_ON_PLAY_DIR", of: .rtmp)
        try (command + "\n").write(toFile: directory + "/" + key + ".sh", atomically: true, encoding: .utf8)
    }

    /// `rtmp://127.0.0.1:PORT/record/<key>`: nginx also writes what it receives to `recordedFile(key:)`.
    public static func recordURL(key: String) throws -> String {
        try value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp) + "/record/" + key
    }

    /// The FLV file nginx writes for a stream published to `recordURL(key:)`.
    public static func recordedFile(key: String) throws -> URL {
        URL(fileURLWithPath: try value("LIVEPUSH_TEST_RTMP_RECORD_DIR", of: .rtmp)).appendingPathComponent(key + ".flv")
    }

    // MARK: RTMPS (the TLS front)

    /// The TLS fronts of tools/testenv, each proxying to nginx-rtmp with its own certificate.
    public enum TLSFront: String, Sendable, CaseIterable {
        /// For 127.0.0.1 and localhost, signed by the test CA.
        case good = "LIVEPUSH_TEST_RTMPS_URL"
        /// For wrong-name.invalid only.
        case wrongName = "LIVEPUSH_TEST_RTMPS_WRONG_NAME_URL"
        /// Expired in 2020.
        case expired = "LIVEPUSH_TEST_RTMPS_EXPIRED_URL"
        /// Signed by a CA nobody trusts.
        case untrusted = "LIVEPUSH_TEST_RTMPS_UNTRUSTED_URL"
        /// TLS 1.0 only: the handshake fails.
        case oldTLS = "LIVEPUSH_TEST_RTMPS_OLD_TLS_URL"
    }

    /// `rtmps://127.0.0.1:PORT/<app>/<key>` through `front` (app `record` writes `recordedFile(key:)`).
    public static func rtmpsURL(_ front: TLSFront = .good, app: String = "record", key: String) throws -> String {
        try value(front.rawValue, of: .rtmps) + "/\(app)/" + key
    }

    /// The test CA's certificate (PEM), for `--ca-file`.
    public static func testCAFile() throws -> String { try value("LIVEPUSH_TEST_TLS_CA_FILE", of: .rtmps) }

    /// The node name of the virtual microphone (an Audio/Source playing a tone).
    public static func microphone() throws -> String { try value("LIVEPUSH_TEST_MIC", of: .pipewire) }

    /// The frequency of the tone the virtual microphone plays.
    public static func toneHz() throws -> Double {
        let text = try value("LIVEPUSH_TEST_TONE_HZ", of: .pipewire)
        guard let hz = Double(text) else { throw Missing(part: .pipewire, variable: "LIVEPUSH_TEST_TONE_HZ (bad: \(text))") }
        return hz
    }

    // MARK: Desktop audio (tools/testenv's default sink)

    /// The node name of the default sink, whose monitor is "desktop audio" (a tone plays into it).
    public static func desktopSink() throws -> String { try value("LIVEPUSH_TEST_DESKTOP_SINK", of: .pipewire) }

    /// The frequency of the tone that plays into the desktop sink (not the mic's).
    public static func desktopToneHz() throws -> Double {
        let text = try value("LIVEPUSH_TEST_DESKTOP_TONE_HZ", of: .pipewire)
        guard let hz = Double(text) else {
            throw Missing(part: .pipewire, variable: "LIVEPUSH_TEST_DESKTOP_TONE_HZ (bad: \(text))")
        }
        return hz
    }
}

/// Names that no other test running at the same time uses: stream keys, groups, windows.
public enum UniqueName {
    private static let counter = Counter()

    public static func make(_ prefix: String) -> String {
        "\(prefix)-\(getpid())-\(counter.next())-\(UInt32.random(in: 0...UInt32.max))"
    }

    private final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int {
            lock.lock()
            defer { lock.unlock() }
            value += 1
            return value
        }
    }
}
