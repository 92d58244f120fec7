import Foundation
import TestSupport

/// A virtual mic named `name` (a private pw-loopback on the test PipeWire daemon: an Audio/Sink
/// `name-in` feeding the Audio/Source `name`) into which pw-play plays `expression` (ffmpeg
/// aevalsrc, mono 48 kHz) for `seconds`. The source can be taken away and brought back, as a
/// USB microphone unplugged and plugged in again.
final class SignalMic {
    let name = UniqueName.make("lp-vmic")
    private var loopback: RunningCommand
    private var player: RunningCommand?
    private let file: String

    struct Problem: Error, CustomStringConvertible { let description: String }

    init(expression: String, seconds: Double) throws {
        file = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("signal")).path + ".wav"
        let made = try ProcessRunner.run("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                                                    "aevalsrc=\(expression):s=48000:d=\(seconds)", "-c:a", "pcm_s16le", file])
        guard made.exitCode == 0 else { throw Problem(description: "ffmpeg could not make the signal: \(made)") }
        loopback = try Self.startLoopback(name)
    }

    /// Real-time where it may (as root), as tools/testenv's mic: a device is driven by the daemon's
    /// real-time thread, and a loopback at everyone's priority falls silent under load.
    private static func startLoopback(_ name: String) throws -> RunningCommand {
        let realtime = geteuid() == 0 ? ["chrt", "-f", "80"] : []
        let command = realtime + ["pw-loopback"]
        let loopback = try ProcessRunner.start(command[0], Array(command.dropFirst()) + [
            "--name", name + "-loopback",
            "--capture-props=media.class=Audio/Sink node.name=\(name)-in priority.session=0",
            "--playback-props=media.class=Audio/Source node.name=\(name) priority.session=0",
        ])
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let nodes = try ProcessRunner.run("pw-cli", ["ls", "Node"])
            if nodes.standardOutput.contains("\"\(name)-in\"") && nodes.standardOutput.contains("\"\(name)\"") {
                return loopback
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw Problem(description: "pw-loopback did not create \(name)")
    }

    /// Starts playing the signal into the mic (from its beginning).
    func play() throws { player = try ProcessRunner.start("pw-play", ["--target", name + "-in", file]) }

    /// Ends the player, then the mic itself (the source node goes away). The player goes first:
    /// left without its target, WirePlumber would move it to the default sink (the desktop's).
    func takeAway() {
        for command in [player, loopback].compactMap({ $0 }) { Self.end(command) }
        player = nil
    }

    /// The mic again under the same name, playing the signal from its beginning.
    func bringBack() throws {
        loopback = try Self.startLoopback(name)
        try play()
    }

    private static func end(_ command: RunningCommand) {
        if command.isRunning { command.interrupt() }
        _ = command.finish()
    }

    deinit {
        for command in [player, loopback].compactMap({ $0 }) { Self.end(command) }
        try? FileManager.default.removeItem(atPath: file)
    }
}
