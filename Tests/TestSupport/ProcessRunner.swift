import Foundation

/// What a finished command did.
public struct CommandResult: Sendable, CustomStringConvertible {
    public let command: [String]
    public let exitCode: Int32
    public let standardOutput: String
    public let standardError: String
    /// True when the command was still running at its deadline and was killed.
    public let timedOut: Bool

    public var description: String {
        "\(command.joined(separator: " ")) exited \(exitCode)\(timedOut ? " (timed out)" : "")\n"
            + "stdout: \(standardOutput.suffix(2000))\nstderr: \(standardError.suffix(2000))"
    }
}

public struct CommandNotFound: Error, CustomStringConvertible {
    public let name: String
    public var description: String { "command '\(name)' not found in PATH; run tools/bootstrap" }
}

/// Runs real programs (our executables, ffmpeg, ffprobe, pw-record) for tests.
public enum ProcessRunner {
    /// Runs `executable` (a path, or a name looked up in PATH) and waits at most `timeoutSeconds`;
    /// a command still running then gets SIGTERM, then SIGKILL.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        timeoutSeconds: Double = 30
    ) throws -> CommandResult {
        let process = try start(executable, arguments, environment: environment)
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var timedOut = false
        while process.process.isRunning {
            if Date() > deadline {
                timedOut = true
                process.process.terminate()
                let grace = Date().addingTimeInterval(0.5)
                while process.process.isRunning && Date() < grace { Thread.sleep(forTimeInterval: 0.01) }
                if process.process.isRunning { kill(process.process.processIdentifier, SIGKILL) }
                break
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return process.finish(timedOut: timedOut)
    }

    /// Starts a command in the background; `finish` waits for it and collects its output.
    /// With `interactive`, its standard input is a pipe for `send(line:)` (closed by `closeInput`).
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], interactive: Bool = false
    ) throws -> RunningCommand {
        let path = executable.contains("/") ? executable : try which(executable)
        return try RunningCommand(path: path, arguments: arguments, environment: environment, interactive: interactive)
    }

    /// The full path of `name` in PATH.
    public static func which(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw CommandNotFound(name: name)
    }
}

/// A command started by `ProcessRunner.start`; its output goes to temporary files so that
/// a chatty command can never block on a full pipe.
public final class RunningCommand: @unchecked Sendable {
    let process = Process()
    private let outputURL: URL
    private let errorURL: URL
    private let command: [String]

    private let input: Pipe?

    init(path: String, arguments: [String], environment: [String: String], interactive: Bool = false) throws {
        command = [path] + arguments
        let directory = FileManager.default.temporaryDirectory
        let name = UniqueName.make("livepush-test-output")
        outputURL = directory.appendingPathComponent(name + ".out")
        errorURL = directory.appendingPathComponent(name + ".err")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        input = interactive ? Pipe() : nil
        process.standardInput = input ?? FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
    }

    public var processIdentifier: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Sends SIGINT, as Ctrl-C would (ffmpeg and pw-record finish their files on it).
    public func interrupt() { process.interrupt() }

    /// Writes one line to the command's standard input (interactive commands only).
    public func send(line: String) {
        input?.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Closes the command's standard input.
    public func closeInput() {
        try? input?.fileHandleForWriting.close()
    }

    /// What the command has printed to standard output so far.
    public var outputSoFar: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

    /// What the command has printed to standard error so far.
    public var errorSoFar: String { (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "" }

    /// Waits until standard error holds `text` at least `count` times; false on timeout or exit.
    public func waitForError(_ text: String, count: Int = 1, timeoutSeconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if errorSoFar.components(separatedBy: text).count - 1 >= count { return true }
            if !process.isRunning { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    /// The pids of this command's child processes.
    public var childProcessIdentifiers: [Int32] {
        let path = "/proc/\(processIdentifier)/task/\(processIdentifier)/children"
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var children = text.split(separator: " ").compactMap { Int32($0) }
        // Children forked from other threads are listed under those threads.
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(processIdentifier)/task") {
            for task in tasks {
                let more = (try? String(contentsOfFile: "/proc/\(processIdentifier)/task/\(task)/children", encoding: .utf8)) ?? ""
                children += more.split(separator: " ").compactMap { Int32($0) }
            }
        }
        return Array(Set(children))
    }

    /// Waits until standard output has a line starting with `prefix`; returns that line.
    public func waitForLine(startingWith prefix: String, timeoutSeconds: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            if let line = outputSoFar.split(separator: "\n").last(where: { $0.hasPrefix(prefix) }) {
                return String(line)
            }
            if !process.isRunning { return nil }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return nil
    }

    /// Waits for the command to end and returns what it did.
    public func finish(timedOut: Bool = false) -> CommandResult {
        process.waitUntilExit()
        defer {
            try? FileManager.default.removeItem(at: outputURL)
            try? FileManager.default.removeItem(at: errorURL)
        }
        let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        let error = (try? String(contentsOf: errorURL, encoding: .utf8)) ?? ""
        return CommandResult(command: command, exitCode: process.terminationStatus,
                             standardOutput: output, standardError: error, timedOut: timedOut)
    }
}

/// The executables this package builds, found beside the test bundle.
public enum BuiltProducts {
    public static func path(_ name: String) -> String {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent(name).path
    }
}
