import Foundation

extension TestEnvironment {
    public struct RecordingStillOpen: Error, CustomStringConvertible {
        public let key: String
        public var description: String { "nginx still lists a stream '\(key)' in /stat: its recording is not closed" }
    }

    /// Whether nginx's `/stat` lists a stream `key` (someone publishes it).
    public static func listsStream(key: String) throws -> Bool {
        let stat = try ProcessRunner.run("curl", ["-sf", try statURL()])
        return stat.exitCode == 0 && stat.standardOutput.contains("<name>\(key)</name>")
    }

    private static func statURL() throws -> String {
        "http://127.0.0.1:\(try value("LIVEPUSH_TEST_HTTP_PORT", of: .rtmp))/stat"
    }

    /// The FLV nginx wrote for `key`, once the stream has left nginx's `/stat` (nginx closes the
    /// file when the publisher leaves): read it then, not while its last tags are on their way.
    public static func closedRecording(key: String, timeoutSeconds: Double = 10) throws -> String {
        let url = try statURL()
        let closed = try waitUntil(timeoutSeconds: timeoutSeconds, intervalSeconds: 0.1) {
            let stat = try ProcessRunner.run("curl", ["-sf", url])
            return stat.exitCode == 0 && !stat.standardOutput.contains("<name>\(key)</name>")
        }
        guard closed else { throw RecordingStillOpen(key: key) }
        return try recordedFile(key: key).path
    }
}
