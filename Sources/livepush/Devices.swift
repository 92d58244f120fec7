import AudioCapture
import CommandLineSupport
import PipeWireCameras

/// `livepush devices`: the audio sources PipeWire offers, by the names `--mic` takes, and the cameras,
/// by the names `--camera` takes, with what each camera offers.
enum Devices {
    static let options: [OptionSpec] = [
        .flag("names", help: "Print only the microphones' names, one a line (what --mic takes; for scripts and completion)."),
        .flag("camera-names", help: "Print only the cameras' names, one a line (what --camera takes)."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let spec = CommandSpec(
        name: "devices",
        summary: "List the microphones, sink monitors and cameras PipeWire offers.",
        synopsis: ["livepush devices [--names | --camera-names]"],
        description: """
            Lists the PipeWire audio sources (microphones: the NAME for --mic NAME), the monitors
            of the audio sinks (what plays on them: desktop audio, as livepush-capture --desktop-audio
            captures from the default one), and the cameras (Video/Source nodes with the Camera role,
            what WirePlumber makes of every V4L2 or libcamera webcam: the NAME for --source camera
            --camera NAME), each with the formats, sizes and frame rates it offers. '*' marks the
            default microphone and sink. Exits with 1 when PipeWire cannot be reached.
            """,
        sections: [OptionSection("Options", options)],
        examples: [Example("livepush devices", "Shows the microphone names that --mic NAME takes and the cameras.")])

    static var usage: String { spec.help }

    static func main(_ arguments: [String]) -> Never {
        let parsed = ArgumentParser.parseOptionsOnly(arguments, options: options, command: "livepush devices",
                                                     usage: usage)
        if parsed.has("camera-names") {
            print(listCameras().map { $0.name + "\n" }.joined(), terminator: "")
            Terminal.exit(.success)
        }
        let sources: [AudioSourceInfo]
        do {
            sources = try AudioDevices.listSources()
        } catch {
            Terminal.printError("livepush devices: \(error)")
            Terminal.exit(.failure)
        }
        if parsed.has("names") {
            print(sources.filter { !$0.isMonitor }.map { $0.name + "\n" }.joined(), terminator: "")
        } else {
            print(render(sources) + render(listCameras()), terminator: "")
        }
        Terminal.exit(.success)
    }

    private static func listCameras() -> [CameraInfo] {
        do {
            return try CameraDevices.list()
        } catch {
            Terminal.printError("livepush devices: \(error)")
            Terminal.exit(.failure)
        }
    }

    /// Two tables, names aligned; `*` marks the default of each.
    static func render(_ sources: [AudioSourceInfo]) -> String {
        let microphones = sources.filter { !$0.isMonitor }
        let monitors = sources.filter(\.isMonitor)
        let width = sources.map(\.name.count).max() ?? 0
        func rows(_ list: [AudioSourceInfo], none: String) -> String {
            if list.isEmpty { return "  (\(none))\n" }
            return list.map { source in
                let padding = String(repeating: " ", count: width - source.name.count)
                return "\(source.isDefault ? "*" : " ") \(source.name)\(padding)  \(source.description)\n"
            }.joined()
        }
        return "Audio sources (--mic NAME; * = default):\n"
            + rows(microphones, none: "none: plug in or enable a microphone")
            + "Sink monitors (desktop audio; * = the default sink, which livepush-capture --desktop-audio captures):\n"
            + rows(monitors, none: "none")
    }

    /// The cameras, names aligned, each followed by what it offers, one format a line.
    static func render(_ cameras: [CameraInfo]) -> String {
        var text = "Cameras (--source camera --camera NAME):\n"
        if cameras.isEmpty { return text + "  (none: plug in a webcam; wpctl status shows what WirePlumber sees)\n" }
        let width = cameras.map(\.name.count).max() ?? 0
        for camera in cameras {
            let padding = String(repeating: " ", count: width - camera.name.count)
            let place = camera.objectPath.isEmpty ? "id \(camera.id)" : "id \(camera.id), \(camera.objectPath)"
            text += "  \(camera.name)\(padding)  \(camera.nodeDescription)  (\(place))\n"
            for line in camera.formatLines { text += "      \(line)\n" }
        }
        return text
    }
}
