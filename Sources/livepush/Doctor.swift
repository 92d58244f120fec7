import AudioCapture
import CommandLineSupport
import Media
import PipeWireCameras
import ScreenCapture

/// `livepush doctor`: checks what a broadcast needs on this machine and says what to fix.
enum Doctor {
    static let options: [OptionSpec] = [
        .value("display", valueName: ":N", help: "X display to check (default: $DISPLAY)."),
    ] + PresetTrial.options + [
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let spec = CommandSpec(
        name: "doctor",
        summary: "Check this machine: X display and MIT-SHM, PipeWire, H.264 and AAC encoders.",
        synopsis: ["livepush doctor [--display :N] [--config FILE] [--resolution R] [--fps N] [--preset P]"],
        description: """
            Checks the X display (and its MIT-SHM extension, needed for zero-copy capture),
            the PipeWire daemon and that it has a microphone (an audio source; none is a warning: the
            stream would carry silence), the cameras PipeWire has (optional: for --source camera), the encoders in libavcodec, and the libraries
            loaded when a feature first needs them (libavformat for recordings, libsrt, OpenSSL for
            RTMPS, libmicrohttpd for the dashboard; a missing one is named, not a failure); then encodes
            two seconds of hard content (the whole picture moving) at the configured size and rate
            with the configured x264 preset, and with the next ones, to say which preset this
            machine can keep up. The last line begins with the worst finding's word: ok (all checks
            passed), WARN (something to look at; nothing failed) or FAIL. Exits with 1 when a check fails
            (a warning alone exits with 0).
            """,
        sections: [OptionSection("Options", options)],
        examples: [Example("livepush doctor", "Says what a broadcast needs that this machine lacks, and how to fix it.")])

    static var usage: String { spec.help }

    static func main(_ arguments: [String]) -> Never {
        let parsed = ArgumentParser.parseOptionsOnly(arguments, options: options, command: "livepush doctor", usage: usage)
        var failures = 0, warnings = 0
        failures += checkX11(displayName: parsed.value("display"))
        let pipeWire = checkPipeWire()
        failures += pipeWire
        if pipeWire == 0 { warnings += checkMicrophone() }
        checkCameras()
        failures += checkEncoders()
        switch PresetTrial.check(parsed) {
        case .ok: break
        case .warning: warnings += 1
        case .failure: failures += 1
        }
        // The last line says the worst finding first, in the column's own words.
        let warned = warnings == 0 ? "" : "\(warnings) warning\(warnings == 1 ? "" : "s")"
        if failures > 0 {
            print("FAIL \(failures) check\(failures == 1 ? "" : "s") failed" + (warned.isEmpty ? "." : ", \(warned)."))
            Terminal.exit(.failure)
        }
        print(warnings > 0 ? "WARN \(warned); no check failed." : "ok   All checks passed.")
        Terminal.exit(.success)
    }

    /// A broadcast takes its sound from a microphone: PipeWire's audio sources (not sink monitors).
    /// None is a warning (the stream would carry silence); returns the warnings.
    private static func checkMicrophone() -> Int {
        let sources: [AudioSourceInfo]
        do {
            sources = try AudioDevices.listSources().filter { !$0.isMonitor }
        } catch {
            print("WARN Microphone: not listed (\(error))")
            return 1
        }
        guard let chosen = sources.first(where: \.isDefault) ?? sources.first else {
            print("WARN Microphone: none: PipeWire offers no audio source, so a broadcast would carry silence; plug in "
                + "or enable a microphone (wpctl status shows what WirePlumber sees), or broadcast with --no-mic")
            return 1
        }
        let others = sources.count - 1
        print("ok   Microphone: \(chosen.name) (\(chosen.description))\(chosen.isDefault ? ", the default" : "")"
            + (others > 0 ? "; \(others) more (livepush devices)" : ""))
        return 0
    }

    private static func report(_ ok: Bool, _ subject: String, _ detail: String) -> Int {
        print("\(ok ? "ok  " : "FAIL") \(subject): \(detail)")
        return ok ? 0 : 1
    }

    private static func checkX11(displayName: String?) -> Int {
        do {
            let display = try X11Display(displayName: displayName)
            let screen = "\(display.screenWidth)x\(display.screenHeight) depth \(display.rootDepth)"
            guard let shm = display.sharedMemoryVersion() else {
                return report(false, "X11 \(display.name)", "\(screen); no MIT-SHM extension: "
                    + "capture would copy every frame through the X socket (slow); use a local display")
            }
            let zeroCopy = shm.supportsFileDescriptors
                ? "zero-copy capture available" : "MIT-SHM older than 1.2: no zero-copy capture"
            return report(shm.supportsFileDescriptors, "X11 \(display.name)", "\(screen), MIT-SHM \(shm), \(zeroCopy)")
        } catch {
            return report(false, "X11", error.description)
        }
    }

    private static func checkPipeWire() -> Int {
        do {
            let info = try PipeWireProbe.serverInfo()
            return report(true, "PipeWire", "daemon \(info.name) \(info.version), library \(info.libraryVersion)")
        } catch {
            return report(false, "PipeWire", error.description)
        }
    }

    /// The cameras (optional: a broadcast without one is fine), each with its largest mode in a format
    /// livepush-capture takes.
    private static func checkCameras() {
        let cameras: [CameraInfo]
        do {
            cameras = try CameraDevices.list()
        } catch {
            print("--   Cameras: not listed (\(error))")
            return
        }
        if cameras.isEmpty {
            print("--   Cameras: none (optional; a webcam PipeWire sees is used with --source camera)")
            return
        }
        for camera in cameras {
            let name = camera.nodeDescription.isEmpty ? camera.name : camera.nodeDescription
            guard let best = CameraModeChoice.choose(camera.offers, CameraModeRequest(width: 16384, height: 16384)) else {
                let offered = NodeFormatQuery.names(camera.offers).joined(separator: ", ")
                print("--   Camera \(name): offers no format livepush-capture takes (\(offered))")
                continue
            }
            print("ok   Camera \(name): up to \(best.width)x\(best.height) (\(best.format.rawValue)); "
                + "--source camera --camera \(camera.name)")
        }
    }

    private static func checkEncoders() -> Int {
        var failures = 0
        for encoder in H264EncoderName.allCases {
            let present = CodecLibrary.hasEncoder(named: encoder.rawValue)
            switch (encoder, present) {
            case (.libx264, _):
                failures += report(present, "H.264 encoder libx264",
                                   present ? "built into libavcodec" : "missing from libavcodec (install libavcodec59)")
            case (.libopenh264, true):
                print("ok   H.264 encoder libopenh264: built into libavcodec (optional)")
            case (.vaapi, true), (.nvenc, true):
                print("--   H.264 encoder \(encoder.rawValue): in libavcodec; needs a GPU, probed when a push starts")
            case (_, false):
                print("--   H.264 encoder \(encoder.rawValue): not in this libavcodec (optional)")
            }
        }
        let aac = CodecLibrary.hasEncoder(named: "aac")
        failures += report(aac, "AAC encoder", aac ? "built into libavcodec" : "missing from libavcodec")
        let versions = CodecLibrary.versions.map { "\($0.library) \($0.version)" }.joined(separator: ", ")
        print("     FFmpeg libraries: \(versions)")
        // Loaded on first use, not linked: a missing one takes away its features, not the broadcast.
        for library in OptionalLibraries.check() {
            if let problem = library.problem {
                print("--   \(library.file) (\(library.neededFor)): \(problem)")
            } else {
                print("ok   \(library.file) (\(library.neededFor)): loaded when first needed")
            }
        }
        return failures
    }
}
