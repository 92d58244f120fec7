import CommandLineSupport
import Control
import Foundation
import LivePush

/// `livepush ctl [NAME] COMMAND [VALUES]`: sends one command to a running broadcast's control
/// socket and prints the JSON answer (docs/control.md); `livepush ctl` lists the broadcasts.
enum ControlCommandLine {
    static let options: [OptionSpec] = [
        .flag("help", short: "h", help: "Show this help."),
        .value("socket", valueName: "PATH", help: "The control socket itself, instead of a NAME (for a caller "
            + "without the broadcast's XDG_RUNTIME_DIR, e.g. nginx-rtmp's exec_play; give it first)."),
    ]

    static let spec = CommandSpec(
        name: "ctl",
        summary: "Steer a running broadcast: status, pause, mute, bitrate, add/remove destinations, events.",
        synopsis: ["livepush ctl [NAME] COMMAND [VALUES]", "livepush ctl --socket PATH COMMAND [VALUES]", "livepush ctl"],
        description: """
            Steers a running 'livepush screen|push|record' through its control socket
            ($XDG_RUNTIME_DIR/livepush/NAME.control) and prints the JSON answer (docs/control.md). NAME is
            the run's --name (default: its group); with one broadcast running it may be left out. With no
            command it lists the running broadcasts. Exit status: 0 done, 1 refused or not reachable (the
            answer says why), 2 a bad command line.

            The commands:
            """ + "\n" + ControlCommand.verbs.map { verb in
                (verb.arguments.isEmpty ? verb.verb : verb.verb + " " + verb.arguments) + ": " + verb.help
            }.joined(separator: "\n"),
        sections: [OptionSection("Options", options)],
        arguments: .choices(ControlCommand.verbs.map(\.verb)),
        examples: [Example("livepush ctl pause", "Shows the pause picture on the only broadcast running; ctl resume ends it."),
                   Example("livepush ctl desk bitrate 2500", "Sets the target bitrate of the broadcast named desk."),
                   Example("livepush ctl --socket /run/user/1000/livepush/desk.control keyframe",
                           "A keyframe now, for a viewer who joined (nginx-rtmp: exec_play, docs/guide.md).")])

    static var usage: String { spec.help }

    static func main(_ arguments: [String]) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            Terminal.exit(.success)
        }
        var arguments = arguments
        var socketPath: String?
        if arguments.first == "--socket" {
            guard arguments.count >= 2 else {
                Terminal.printError("livepush ctl: --socket needs the control socket's PATH\n\(usage)")
                Terminal.exit(.usage)
            }
            socketPath = arguments[1]
            arguments.removeFirst(2)
            guard !arguments.isEmpty else {
                Terminal.printError("livepush ctl: --socket \(socketPath ?? ""): no command given\n\(usage)")
                Terminal.exit(.usage)
            }
        }
        guard let first = arguments.first else { list() }
        let known = Set(ControlCommand.verbs.map(\.verb))
        let name = known.contains(first) || socketPath != nil ? nil : first
        var words = known.contains(first) || socketPath != nil ? arguments : Array(arguments.dropFirst())
        guard !words.isEmpty else {
            // One word that is no verb: a broadcast's name without a command, or a mistyped verb.
            guard ControlSocket.runningNames().contains(first) else {
                fail(.unknownCommand(first, known: ControlCommand.verbs.map(\.verb)), exit: .usage)
            }
            Terminal.printError("livepush ctl: no command for broadcast '\(first)'\n\(usage)")
            Terminal.exit(.usage)
        }
        if words.first == "add", let at = words.firstIndex(of: "--url-file"), at + 1 < words.count {
            words.replaceSubrange(at...(at + 1), with: [readURL(words[at + 1])])
        }
        var command: ControlCommand
        do throws(ControlError) {
            command = try ControlCommand.parse(words)
        } catch {
            fail(error, exit: .usage)
        }
        // A file named on this command line is where this command runs, not where the broadcast does.
        switch command {
        case .snapshot(let path, let series):
            command = .snapshot(path: absolute(path), series: series)
            words = [command.verb] + command.arguments
        case .record(.start(let path, let split)):
            command = .record(.start(path: absolute(path), split: split))
            words = [command.verb] + command.arguments
        case .replay(.save(let path?)):
            command = .replay(.save(path: absolute(path)))
            words = [command.verb] + command.arguments
        case .bgm(.start(let path, let loop)):
            command = .bgm(.start(path: absolute(path), loop: loop))
            words = [command.verb] + command.arguments
        case .watermark(.add(var file)):
            file.path = absolute(file.path)
            command = .watermark(.add(file))
            words = [command.verb] + command.arguments
        default: break
        }
        let client: ControlClient
        let answer: String
        do throws(ControlError) {
            if let socketPath { client = try ControlClient(path: socketPath) } else { client = try ControlClient(name: name) }
            answer = try client.send(command: command.verb, args: words.count > 1 ? Array(words.dropFirst()) : [])
        } catch {
            fail(error, exit: .failure)
        }
        print(answer)
        let ok = JSONLine.decode(answer)?["ok"] as? Bool ?? false
        if !ok {
            let message = (JSONLine.decode(answer)?["error"] as? [String: Any])?["message"] as? String ?? answer
            Terminal.printError("livepush ctl: \(message)")
            Terminal.exit(.failure)
        }
        if command == .events {
            fflush(nil)
            while let line = try? client.nextLine() {
                print(line)
                fflush(nil)
            }
        }
        Terminal.exit(.success)
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// `livepush ctl` alone: the names of the running broadcasts, one per line.
    private static func list() -> Never {
        let names = ControlSocket.runningNames()
        if names.isEmpty {
            Terminal.printError("livepush ctl: " + ControlError.noBroadcast(directory: ControlSocket.directory()).description)
            Terminal.exit(.failure)
        }
        names.forEach { print($0) }
        Terminal.exit(.success)
    }

    /// The first URL of `path` (kept out of the command line and `ps`), under --url-file's rules:
    /// a private regular file, opened without blocking (PushURLSources.fromFile).
    private static func readURL(_ path: String) -> String {
        do {
            return try PushURLSources.fromFile(path)[0]
        } catch {
            Terminal.printError("livepush ctl: add --url-file: \(error)")
            Terminal.exit(.usage)
        }
    }

    private static func fail(_ error: ControlError, exit code: Terminal.ExitCode) -> Never {
        print(ControlHandler.failure(error))
        Terminal.printError("livepush ctl: \(error)")
        Terminal.exit(code)
    }
}
