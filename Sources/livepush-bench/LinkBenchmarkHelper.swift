import CaptureLink
import CommandLineSupport
import Foundation
import LinuxSystem

/// The helper side of the link benchmark. Like the X11 helper with MIT-SHM, it does not copy
/// pixels: the X server would write them into the slot; here only a stamp is written.
enum LinkBenchmarkHelper {
    static func main(_ arguments: [String]) -> Never {
        let options: [OptionSpec] = [
            .value("group", valueName: "NAME", help: ""), .value("runtime", valueName: "DIR", help: ""),
            .value("size", valueName: "WxH", help: ""), .value("mode", valueName: "MODE", help: ""),
            .value("seconds", valueName: "N", help: ""),
        ]
        let parsed = BenchSupport.parseOrExit(arguments, options: options, command: "link-helper")
        guard let group = parsed.value("group"), let size = parsed.value("size"),
              case let parts = size.split(separator: "x").compactMap({ UInt32($0) }), parts.count == 2
        else {
            Terminal.printError("livepush-bench link-helper: bad arguments")
            Terminal.exit(.usage)
        }
        let (width, height) = (parts[0], parts[1])
        let paced = parsed.value("mode") != "max"
        let seconds = parsed.seconds(default: 10)
        var configuration = HelperEndpointConfiguration(
            group: group, helperName: "livepush-bench", helperVersion: LivePushVersion.current, pixelFormats: [.bgrx],
            maxWidth: width, maxHeight: height)
        configuration.runtimeDirectory = parsed.value("runtime")
        do {
            let helper = try HelperEndpoint(configuration: configuration)
            try helper.start(sourceInfo: #"{"source":"benchmark"}"#)
            let layout = FrameGeometry.packedLayout(.bgrx, width: width, height: height)
            let started = MonotonicClock.nowNs()
            let endNs = started + UInt64(seconds * 1e9)
            let intervalNs: UInt64 = 1_000_000_000 / 60
            var nextNs = started
            while MonotonicClock.nowNs() < endNs {
                if paced {
                    nextNs += intervalNs
                    MonotonicClock.sleep(untilNs: nextNs)
                }
                if let slot = try helper.acquireSlot() {
                    slot.bytes.storeBytes(of: helper.framesPublished + 1, as: UInt64.self)
                    try helper.publish(slot, format: .bgrx, width: width, height: height, strides: layout.strides,
                                       planeOffsets: layout.offsets)
                } else if !paced {
                    _ = try helper.poll(timeoutMs: 1)
                }
            }
            let elapsedS = Double(MonotonicClock.nowNs() - started) / 1e9
            helper.finish(.user, text: "benchmark done")
            print("published=\(helper.framesPublished) dropped=\(helper.framesDropped) elapsed_s=\(elapsedS) "
                + "socket_bytes=\(helper.socketBytes)")
            Terminal.exit(.success)
        } catch {
            Terminal.printError("livepush-bench link-helper: \(error)")
            Terminal.exit(.failure)
        }
    }

}
