import Control
import LivePush
import Testing

/// Parsing the picture's control commands (issue 16): `watermark add|remove`, `snapshot FILE`.
@Suite(.timeLimit(.minutes(10))) struct PictureCommandTests {
    @Test func watermarkAndSnapshotParseWithTheirValues() throws {
        let file = WatermarkFile(path: "/i/logo.png", position: WatermarkPosition(x: 0.8, y: 0.05, width: 0.15, opacity: 0.7))
        #expect(try ControlCommand.parse(["watermark", "add", "/i/logo.png@0.8,0.05,0.15,0.7"]) == .watermark(.add(file)))
        #expect(try ControlCommand.parse(["watermark", "add", "/i/logo.png@0.8,0.05,0.15,0.7"]).arguments
            == ["add", "/i/logo.png@0.8,0.05,0.15,0.7"])
        #expect(try ControlCommand.parse(["watermark", "remove", "3"]) == .watermark(.remove(id: 3)))
        #expect(try ControlCommand.parse(["snapshot", "/tmp/shot.png"]) == .snapshot(path: "/tmp/shot.png"))
    }

    @Test func badWatermarkAndSnapshotCommandsSayWhatIsWrong() {
        #expect(throws: ControlError.missingValue(command: "watermark", expected: "add FILE@X,Y,W[,OPACITY] or remove ID")) {
            try ControlCommand.parse(["watermark", "add"])
        }
        #expect(throws: ControlError.invalidValue(command: "watermark", value: "logo.png@2,0,0.1",
                                                   reason: "--watermark 'logo.png@2,0,0.1': x 2.0 is outside 0 to 1 "
                                                       + "(a fraction of the picture's width)")) {
            try ControlCommand.parse(["watermark", "add", "logo.png@2,0,0.1"])
        }
        #expect(throws: ControlError.invalidValue(command: "watermark", value: "move",
                                                   reason: "use: watermark add FILE@X,Y,W[,OPACITY] | remove ID")) {
            try ControlCommand.parse(["watermark", "move", "1"])
        }
        #expect(throws: ControlError.invalidValue(command: "snapshot", value: "shot.jpg", reason: "the file name must end in .png")) {
            try ControlCommand.parse(["snapshot", "shot.jpg"])
        }
    }
}
