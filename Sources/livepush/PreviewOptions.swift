// The command line's preview window (issue 16): --preview and its mode, mirror and geometry.
import CommandLineSupport
import Foundation
import LivePush
import Media

enum PreviewOptions {
    static let specs: [OptionSpec] = [
        .flag("preview", help: "Open a window showing what viewers get (watermarks and placeholders included); "
            + "closing it never stops the broadcast."),
        .value("preview-mode", valueName: "fit|fill|crop",
               help: "How the preview fills its window: fit with black bars (default), fill (stretch) or crop."),
        .flag("preview-mirror", help: "Mirror the preview, independently of --push-mirror (which mirrors the stream "
            + "but not the preview), as in the reference SDKs."),
        .value("preview-geometry", valueName: "WxH+X+Y",
               help: "The preview window's size and place (default: the video's size at 0,0)."),
    ]

    /// The preview the options ask for, nil without --preview.
    static func parse(_ parsed: ParsedArguments) throws(ArgumentError) -> PreviewConfig? {
        let others = ["preview-mode", "preview-mirror", "preview-geometry"].filter { parsed.values[$0] != nil || parsed.has($0) }
        guard parsed.has("preview") else {
            if let first = others.first {
                throw .invalidValue(option: first, value: parsed.value(first) ?? "", reason: "it needs --preview as well")
            }
            return nil
        }
        var config = PreviewConfig(title: "LivePush preview")
        if let text = parsed.value("preview-mode") {
            guard let mode = ScaleMode(rawValue: text) else {
                throw .invalidValue(option: "preview-mode", value: text, reason: "use fit, fill or crop")
            }
            config.mode = mode
        }
        config.previewMirror = parsed.has("preview-mirror")
        if let text = parsed.value("preview-geometry") {
            let numbers = text.split(whereSeparator: { $0 == "x" || $0 == "+" }).map { Int($0) }
            guard numbers.count == 4, let width = numbers[0], let height = numbers[1], let x = numbers[2],
                  let y = numbers[3], (16...8192).contains(width), (16...8192).contains(height)
            else {
                throw .invalidValue(option: "preview-geometry", value: text,
                                    reason: "use WIDTHxHEIGHT+X+Y, e.g. 640x360+0+0 (16 to 8192 pixels each way)")
            }
            (config.width, config.height, config.x, config.y) = (width, height, x, y)
        }
        return config
    }
}
