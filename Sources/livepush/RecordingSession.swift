import CommandLineSupport
import Dispatch
import Foundation
import LinuxSystem
import LivePush

/// Which audio a run sends: the microphone (a named source or the default), the helper's
/// desktop audio, both, or none (a video-only stream).
struct AudioChoice {
    var microphone = true
    var microphoneName: String?
    var desktop = false
    var sound = SoundChoice()
    var hasAudio: Bool { microphone || desktop || sound.bgmPath != nil }
}

/// One `livepush screen` or `livepush record` run: the pusher, the helper it may start, the
/// live status line, and a clean end on Ctrl-C, SIGTERM, --duration or the helper's end.
final class RecordingSession: LivePusherObserver, @unchecked Sendable {
    let config: LivePushConfig
    let output: String?
    /// `--overwrite`: an existing file at `output` is replaced.
    let overwrite: Bool
    /// `--record-split`: the recording goes on in numbered files.
    let split: RecordingSplit?
    let pushURLs: [String]
    let group: String
    let audio: AudioChoice
    let quiet: Bool
    let durationSeconds: Double?
    /// Control socket, events, log level (SessionWatch.swift).
    let watch: WatchOptions
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var statistics = LivePusherStatistics()
    private var recordedMs = 0
    /// The files a split finished, in order (the last file is `lastPath`, told by `onLocalRecordComplete`).
    private var finishedFiles: [(path: String, durationMs: Int, sizeBytes: Int64)] = []
    private var lastPath: String?
    private var captureStarted = false
    /// The helper process whose session is running: taken when it starts capturing, so that a
    /// lost session kills that process and never the one the supervisor has started since.
    private var sessionHelperPid: Int32?
    private var statusShown = false
    private var recordingComplete = DispatchSemaphore(value: 0)
    private var recordingCode: Int32 = 0
    private var helperFailed = false
    private var stopping = false
    private var pushFailed = false
    /// The destinations of this run that failed, by `identity` (redacted URL and key fingerprint:
    /// two destinations on one server differ by their keys).
    private var failedPushes: Set<String> = []
    private var interrupted = false
    /// When screen capture started: the status line's clock while only pushing.
    private var startedNs: UInt64 = 0
    /// What each destination carried, read once the push stopped.
    private var pushTotals: [PushTotals] = []
    private var summaryToStderr = false
    /// The replay buffer asked for (`--replay-buffer`), if any.
    private let replay: ReplayChoice?
    /// The helper this run started and supervises, if any.
    private var supervisor: HelperSupervisor?

    init(config: LivePushConfig, output: String?, overwrite: Bool = false, split: RecordingSplit? = nil,
         pushURLs: [String], group: String,
         audio: AudioChoice, quiet: Bool,
         durationSeconds: Double?, watch: WatchOptions = WatchOptions(), replay: ReplayChoice? = nil)
    {
        self.watch = watch
        self.replay = replay
        var config = config
        // A recording starts at the target bitrate: the initial one is for probing a network. Alone,
        // always; beside a push (the same encode), unless the user chose an initial bitrate: auto
        // bitrate lowers it within seconds when the network cannot carry it (issue 34).
        if pushURLs.isEmpty || (output != nil && config.initialVideoBitrateKbps == nil) {
            config.initialVideoBitrateKbps = config.effectiveBitratesKbps.target
        }
        self.config = config
        self.output = output
        self.overwrite = overwrite
        self.split = split
        self.pushURLs = pushURLs
        self.group = group
        self.audio = audio
        self.quiet = quiet
        self.durationSeconds = durationSeconds
    }

    func run(startHelper: Bool, helperArguments: [String], helperExecutable: String? = nil) -> Terminal.ExitCode {
        let pusher: LivePusher
        let watching = SessionWatch(options: watch, downstream: self)
        do {
            try watching.openEvents()
            pusher = try LivePusher(config: config, observer: watching.hub)
            audio.sound.applyVolumes(to: pusher)
            if let replay { pusher.enableReplayBuffer(seconds: replay.seconds, directory: replay.directory) }
            try pusher.startScreenCapture(group: group, audio: audio.hasAudio)
        } catch {
            Terminal.printError("livepush: \(error)")
            return .failure
        }
        lock.withLock { startedNs = DispatchTime.now().uptimeNanoseconds }
        lock.withLock { summaryToStderr = watching.eventsOnStdout }
        let (notes, warnings) = watching.start(pusher: pusher, group: group, config: config)
        for line in notes { note(line, level: line.hasPrefix("dashboard:") ? .error : .info) }
        for line in warnings { note("warning: " + line, level: .warning) }
        if audio.hasAudio { pusher.enableVolumeEvaluation(intervalMs: 1000) }
        if audio.microphone {
            // Without a microphone the stream goes on with silence; the warning says why.
            pusher.startMicrophone(name: audio.microphoneName)
        }
        audio.sound.apply(to: pusher)
        if let output {
            // Once a second, as the events guide says (the status line reads the statistics' clock anyway).
            let code = pusher.startLocalRecording(path: output, progressIntervalMs: 1000, overwrite: overwrite, split: split)
            guard code == 0 else {
                let path = split == nil ? output : RecordingSplit.numberedPath(output, number: 1)
                Terminal.printError("livepush: cannot record to '\(path)': \(Self.describe(recordingCode: code))")
                pusher.destroy()
                return .failure
            }
        } else {
            recordingComplete.signal()
        }
        for pushURL in pushURLs where pusher.addPushDestination(url: pushURL) != 0 {
            pusher.destroy()  // the reason went to onError
            return .failure
        }
        var helper: HelperSupervisor?
        if startHelper {
            do {
                helper = try startCaptureHelper(helperArguments, executable: helperExecutable)
            } catch {
                Terminal.printError("livepush: cannot start livepush-capture: \(error)")
                pusher.destroy()
                return .failure
            }
        } else {
            note("waiting for a capture helper on group '\(group)' (\(pusher.screenCaptureSocketPath ?? ""))")
        }
        let supervisor = helper
        lock.withLock { self.supervisor = helper }
        let signals = watchSignals { supervisor }
        if let durationSeconds {
            DispatchQueue.global().asyncAfter(deadline: .now() + durationSeconds) { [self] in done.signal() }
        }
        let statusTimer = startStatusLine()
        done.wait()
        statusTimer?.cancel()
        if statusShown { FileHandle.standardError.write(Data("\n".utf8)) }

        lock.withLock { stopping = true }
        pusher.stopLocalRecording()
        _ = recordingComplete.wait(timeout: .now() + 5)
        helper?.expectEnd()
        pusher.stopScreenCapture()  // STOP: the helper finishes its session and exits
        helper?.stop()
        pusher.destroy()
        lock.withLock { pushTotals = pusher.pushTotals }
        let reportLine = watching.finish()
        signals.forEach { $0.cancel() }
        defer { if let reportLine { say(reportLine) } }
        return summarize()
    }

    // MARK: The helper

    private func startCaptureHelper(_ arguments: [String], executable path: String?) throws -> HelperSupervisor {
        let executable = path.map { URL(fileURLWithPath: $0) } ?? URL(fileURLWithPath: "/proc/self/exe")
            .resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("livepush-capture")
        // The launch convention (SPEC §3.6): the group in the arguments and in LIVEPUSH_CAPTURE_GROUP. The
        // helper may be anyone's program (--helper): it gets no stream key (LIVEPUSH_URL) in its environment.
        var environment = ProcessInfo.processInfo.environment
        environment[PushURLSources.environmentVariable] = nil
        environment["LIVEPUSH_CAPTURE_GROUP"] = group
        let supervisor = HelperSupervisor(executable: executable, arguments: ["--group", group] + arguments,
                                          environment: environment)
        supervisor.onLine = { [weak self] line in
            self?.note("capture: " + line.replacingOccurrences(of: "livepush-capture: ", with: ""))
        }
        supervisor.onNote = { [weak self] text in self?.note(text) }
        supervisor.onFinished = { [weak self] status in
            guard let self else { return }
            let started = self.lock.withLock { self.captureStarted }
            if status != 0 || !started { self.lock.withLock { self.helperFailed = true } }
            self.done.signal()
        }
        supervisor.onGaveUp = { [weak self] message in
            guard let self else { return }
            Terminal.printError("livepush: error: " + message)
            self.lock.withLock { self.helperFailed = true }
            self.done.signal()
        }
        try supervisor.start()
        return supervisor
    }

    /// SIGINT or SIGTERM ends the run cleanly (the helper stops, the encoders drain, every
    /// recording is finished, every push says FCUnpublish and deleteStream); a second one while
    /// that is under way forces the exit at once, killing the helper first so none is orphaned.
    private func watchSignals(helper: @escaping @Sendable () -> HelperSupervisor?) -> [DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let again = lock.withLock { () -> Bool in
                    defer { interrupted = true }
                    return interrupted
                }
                if again {
                    helper()?.killNow()
                    Terminal.printError("\nlivepush: interrupted again: exiting without finishing")
                    _exit(130)
                }
                done.signal()
            }
            source.resume()
            return source
        }
    }

    // MARK: Status

    private func startStatusLine() -> DispatchSourceTimer? {
        guard !quiet else { return nil }
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [self] in
            // The recording's own duration while recording; else the time since capture started.
            let (figures, recorded, startedNs) = lock.withLock { (statistics, recordedMs, self.startedNs) }
            let ms = output != nil ? recorded : Int((DispatchTime.now().uptimeNanoseconds - startedNs) / 1_000_000)
            var line = String(format: "\r%@ %@  %d fps  %d kbit/s  repeated %d  skipped %d",
                              output == nil ? "pushing" : "recording", Self.clock(ms), figures.fps,
                              figures.videoBitrateKbps, figures.framesRepeated, figures.framesSkipped)
            if output != nil { line += "  size " + Self.size(figures.recordingBytes) }
            if !pushURLs.isEmpty {
                line += String(format: "  sent %d kbit/s  queue %d ms  dropped %d", figures.sendBitrateKbps,
                               figures.queueMs, figures.framesDropped)
            }
            if figures.srtSendRateKbps > 0 {  // an SRT destination: its own figures
                line += String(format: "  srt rtt %d ms  lost %d  retransmitted %d", figures.srtRttMs,
                               figures.srtPacketsLost, figures.srtPacketsRetransmitted)
            }
            line += "   "
            lock.withLock { statusShown = true }
            FileHandle.standardError.write(Data(line.utf8))
        }
        timer.resume()
        return timer
    }

    private func summarize() -> Terminal.ExitCode {
        let (ms, code, failed, pushFailed) = lock.withLock { (recordedMs, recordingCode, helperFailed, self.pushFailed) }
        if failed {
            Terminal.printError("livepush: nothing was captured from the screen")
            return .failure
        }
        let (failedPushes, totals) = lock.withLock { (self.failedPushes, pushTotals) }
        // Named by label, or by key fingerprint when two destinations share a redacted URL.
        let sharedURLs = Set(Dictionary(grouping: totals, by: \.url).filter { $0.value.count > 1 }.keys)
        // A push that failed before it carried anything was said once, by its error.
        for total in totals {
            let identity = Self.identity(url: total.url, keyFingerprint: total.keyFingerprint)
            if failedPushes.contains(identity) && total.publishedMs == 0 && total.bytesSent == 0 { continue }
            let name = total.label.map { "\(total.url) (\($0))" }
                ?? (sharedURLs.contains(total.url) ? "\(total.url) (key \(total.keyFingerprint))" : total.url)
            // How long it published and what it sent, as the recording's line says it.
            let carried = "\(Self.clock(total.publishedMs)) (\(Self.size(total.bytesSent)))"
            say(failedPushes.contains(identity) ? "Push to \(name) failed after publishing \(carried)"
                : "Pushed \(carried) of \(config.videoWidth)x\(config.videoHeight) at \(config.fps) fps to \(name)")
        }
        if let output {
            guard code == 0 else {
                Terminal.printError(code == LocalRecordingCode.nothingRecorded
                    ? "livepush: nothing was recorded to '\(output)' (-3): it stopped before the first picture; "
                        + "record for longer, or check that the capture helper sends frames"
                    : "livepush: the recording '\(output)' failed")
                return .failure
            }
            // A split recording: a line per file, in order.
            let (finished, lastPath) = lock.withLock { (finishedFiles, self.lastPath ?? output) }
            for file in finished {
                say("Recorded \(Self.clock(file.durationMs)) of \(config.videoWidth)x\(config.videoHeight) at \(config.fps) fps "
                    + "to \(file.path) (\(Self.size(file.sizeBytes)))")
            }
            let bytes = ((try? FileManager.default.attributesOfItem(atPath: lastPath)[.size]) as? Int64) ?? 0
            say("Recorded \(Self.clock(ms)) of \(config.videoWidth)x\(config.videoHeight) at \(config.fps) fps "
                + "to \(lastPath) (\(Self.size(bytes)))")
        }
        return pushFailed ? .failure : .success
    }

    /// The run's summary: stdout, or stderr when the events go to stdout (`--events -`).
    private func say(_ line: String) {
        if lock.withLock({ summaryToStderr }) { Terminal.printError(line) } else { print(line) }
    }

    /// A line for the user at `level` (shown when `--log-level` is that or more).
    private func note(_ line: String, level: LivePushLogLevel = .info) {
        guard LivePush.logLevel >= level else { return }
        let prefix = lock.withLock { statusShown } ? "\n" : ""
        Terminal.printError(prefix + "livepush: " + line)
    }

    /// What tells a destination from every other: its redacted URL and its key's fingerprint (the
    /// same URL twice is refused, so the pair is unique), never the redacted URL alone.
    static func identity(url: String, keyFingerprint: String) -> String { url + " key " + keyFingerprint }

    static func clock(_ ms: Int) -> String {
        String(format: "%02d:%02d:%02d.%d", ms / 3_600_000, ms / 60000 % 60, ms / 1000 % 60, ms / 100 % 10)
    }

    static func size(_ bytes: Int64) -> String {
        bytes >= 1_000_000 ? String(format: "%.1f MB", Double(bytes) / 1e6) : String(format: "%.0f kB", Double(bytes) / 1e3)
    }

    static func describe(recordingCode code: Int32) -> String {
        switch code {
        case LocalRecordingCode.unsupportedExtension: return "unsupported extension (-2); use .mp4, .mkv or .flv"
        case LocalRecordingCode.alreadyRecording: return "already recording (-6)"
        case LocalRecordingCode.fileExists: return "the file exists (-7); remove it or choose another name"
        case LocalRecordingCode.noPermission: return "no permission to write there (-8)"
        default: return "internal error (\(code))"
        }
    }

    // MARK: LivePusherObserver

    func onWarning(code: Int32, message: String, extraInfo: [String: String]) { note("warning: \(message)", level: .warning) }

    func onError(code: Int32, message: String, extraInfo: [String: String]) {
        note("error: \(message)", level: .error)
        if LivePushErrorCode.isPushFailure(code) || code == LivePushErrorCode.invalidURL {
            // One destination failing leaves the others and the recording running; the run ends
            // when nothing is left to do.
            let allFailed = lock.withLock { () -> Bool in
                // A destination added over the control socket failing ends nothing: only the run's own count.
                let own = Set(pushURLs.compactMap { text in
                    (try? PushDestination(LabelledPushURL(text).url)).map {
                        Self.identity(url: $0.description, keyFingerprint: $0.keyFingerprint)
                    }
                })
                let identity = extraInfo["url"].map { Self.identity(url: $0, keyFingerprint: extraInfo["keyFingerprint"] ?? "") }
                guard identity.map(own.contains) ?? true else { return false }
                pushFailed = true
                if let identity { failedPushes.insert(identity) }
                return failedPushes.count >= pushURLs.count || identity == nil
            }
            if allFailed && output == nil { done.signal() }
        }
    }

    func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
        // A give-up (its cause given) follows the error that already said why: a failed push is printed once.
        if status == .disconnected && extraInfo["cause"] != nil { return }
        // A destination that failed and publishes again (`ctl reconnect` after it gave up) has not
        // failed: the summary says what it pushed, and the run exits 0 when nothing else failed.
        if status == .connectSuccess, let url = extraInfo["url"] {
            let identity = Self.identity(url: url, keyFingerprint: extraInfo["keyFingerprint"] ?? "")
            lock.withLock {
                if failedPushes.remove(identity) != nil && failedPushes.isEmpty { pushFailed = false }
            }
        }
        if !quiet || status != .connectSuccess { note(message) }
    }

    func onScreenCaptureStarted() {
        let supervisor = lock.withLock { () -> HelperSupervisor? in
            captureStarted = true
            sessionHelperPid = self.supervisor?.processIdentifier
            return self.supervisor
        }
        supervisor?.markCapturing()
        note("screen capture started")
    }

    func onScreenCaptureStopped(reason: Int32) {
        let (stopping, supervisor, sessionPid) = lock.withLock { () -> (Bool, HelperSupervisor?, Int32?) in
            defer { sessionHelperPid = nil }
            return (self.stopping, self.supervisor, sessionHelperPid)
        }
        guard !stopping else { return }
        if reason == 0 && supervisor != nil {
            note("the capture helper stopped")
            done.signal()
            return
        }
        if reason == 1 {
            note("screen capture interrupted; the output goes on with the pause picture until the helper is back")
            // A helper that hung (or broke the protocol) lost its session; if it does not exit
            // by itself, it is killed so that the supervisor starts a new one. Only the process
            // whose session it was: a killed helper's session often ends after the supervisor has
            // already started the next helper, which must be left alone.
            if let supervisor, let pid = sessionPid, supervisor.processIdentifier == pid {
                Thread.detachNewThread {
                    ThreadName.setCurrent("livepush-reaper")
                    Thread.sleep(forTimeInterval: 2)
                    if supervisor.processIdentifier == pid {
                        self.note("the capture helper (pid \(pid)) did not exit after losing its session; killing it")
                        kill(pid, SIGKILL)
                    }
                }
            }
        }
    }

    func onBGMStarted(path: String, durationMs: Int) {
        note("background music: playing '\(path)' (\(Self.clock(durationMs)))")
    }

    func onBGMComplete(path: String) { note("background music: '\(path)' ended") }

    func onVoiceActivityDetected(_ active: Bool) { note(active ? "voice started" : "voice stopped") }

    func onStatisticsUpdate(_ statistics: LivePusherStatistics) {
        lock.withLock { self.statistics = statistics }
    }

    func onLocalRecording(durationMs: Int, storagePath: String) {
        lock.withLock { recordedMs = durationMs }
    }

    func onLocalRecordSplit(previousPath: String, durationMs: Int, sizeBytes: Int64, nextPath: String) {
        lock.withLock {
            finishedFiles.append((previousPath, durationMs, sizeBytes))
            recordedMs = 0
        }
        note("recording: \(previousPath) complete (\(Self.clock(durationMs)), \(Self.size(sizeBytes))); "
            + "going on in \(nextPath)")
    }

    func onReplaySaved(code: Int32, path: String, durationMs: Int) {
        if code == 0 {
            note(String(format: "replay saved: %@ (%.1f s)", path, Double(durationMs) / 1000))
        } else {
            note("warning: the replay could not be written to '\(path)' (\(code))", level: .warning)
        }
    }

    func onLocalRecordComplete(code: Int32, storagePath: String) {
        lock.withLock {
            recordingCode = code
            lastPath = storagePath
        }
        recordingComplete.signal()
    }
}
