import Foundation

/// The push benchmark over TLS and SRT (issue 13): the same publishers, screen and settings as
/// `e2e push` and `ffmpeg push`, sent as rtmps:// through the test environment's TLS front (the
/// receiver reads the same stream back from nginx-rtmp in plain RTMP, so only the publisher pays
/// for TLS) or as srt:// to the receiver itself, an ffmpeg SRT listener (latency 120 ms on both
/// publishers, as SRT's own receive buffer adds it to every frame).
extension PushBenchmark {
    /// The publishers of this file, printed as `<tool> push-<transport> 1080p30 ...`.
    static let transportPublishers = ["e2e-rtmps", "ffmpeg-rtmps", "e2e-srt", "ffmpeg-srt"]

    /// SRT's latency (receive buffer) for both publishers and the listener.
    static let srtLatencyMs = 120

    /// Where `name` publishes and where the receiver reads it, for `key`: nil for the plain ones.
    struct TransportRoute {
        let publishURL: String
        let receiverInput: [String]
        /// SRT: the receiver is the listener, so it starts before the publisher.
        let receiverFirst: Bool
        /// rtmps://: the CA the publishers verify the front's certificate with.
        let caFile: String?
    }

    static func transportRoute(_ name: String, key: String, rtmp: String,
                               environment: [String: String]) throws -> TransportRoute? {
        let transport = name.split(separator: "-").dropFirst().first.map(String.init)
        switch transport {
        case "rtmps":
            guard let front = environment["LIVEPUSH_TEST_RTMPS_URL"], let caFile = environment["LIVEPUSH_TEST_TLS_CA_FILE"]
            else {
                throw Failure(description: "\(name) needs the test environment's TLS front (LIVEPUSH_TEST_RTMPS_URL, "
                    + "LIVEPUSH_TEST_TLS_CA_FILE): run inside tools/testenv run -- ...")
            }
            return TransportRoute(publishURL: "\(front)/live/\(key)", receiverInput: receiverInput("\(rtmp)/live/\(key)"),
                                  receiverFirst: false, caFile: caFile)
        case "srt":
            let port = try freeUDPPort()
            let listener = "srt://127.0.0.1:\(port)?mode=listener&latency=\(srtLatencyMs * 1000)"
            return TransportRoute(publishURL: "srt://127.0.0.1:\(port)?latency=\(srtLatencyMs)",
                                  receiverInput: receiverInput(listener, timeout: false), receiverFirst: true, caFile: nil)
        default:
            return nil
        }
    }

    /// The receiver's input options for `url` (the plain push benchmark's, in `measure`).
    static func receiverInput(_ url: String, timeout: Bool = true) -> [String] {
        ["-fflags", "nobuffer", "-flags", "low_delay", "-probesize", "5000000", "-analyzeduration", "3000000"]
            + (timeout ? ["-rw_timeout", "5000000"] : []) + ["-i", url]
    }

    /// The publisher `name` (e2e-rtmps, ffmpeg-srt, ...) with the plain benchmark's settings.
    static func makeTransportPublisher(_ name: String, display: String, route: TransportRoute) -> Publisher {
        let tool = String(name.split(separator: "-").first ?? "")
        let plain = makePublisher(tool, display: display, url: route.publishURL)
        var arguments = plain.arguments
        if tool == "e2e", let caFile = route.caFile {
            arguments += ["--ca-file", caFile]
        }
        if tool == "ffmpeg" {
            let output = arguments.count - 1  // "... -f flv URL": the URL is last
            if route.publishURL.hasPrefix("srt://") {
                arguments[output - 1] = "mpegts"
                arguments[output] = route.publishURL.replacingOccurrences(
                    of: "latency=\(srtLatencyMs)", with: "mode=caller&latency=\(srtLatencyMs * 1000)&pkt_size=1316")
            } else if let caFile = route.caFile {
                arguments.insert(contentsOf: ["-tls_verify", "1", "-ca_file", caFile], at: output - 2)
            }
        }
        return Publisher(name: name, executable: plain.executable, arguments: arguments)
    }

    /// The bench line's name: `e2e push` for e2e, `e2e push-rtmps` for e2e-rtmps.
    static func lineName(_ name: String) -> String {
        let parts = name.split(separator: "-", maxSplits: 1)
        return parts.count == 2 ? "\(parts[0]) push-\(parts[1])" : "\(name) push"
    }

    /// A free UDP port on 127.0.0.1.
    static func freeUDPPort() throws -> UInt16 {
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "no free UDP port") }
        return UInt16(bigEndian: address.sin_port)
    }
}
