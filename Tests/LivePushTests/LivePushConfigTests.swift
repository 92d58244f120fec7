import Foundation
import LivePush
import Media
import Testing

@Suite(.timeLimit(.minutes(10))) struct LivePushConfigTests {
    // MARK: Defaults

    @Test func defaultsAreForBroadcastingAScreen() {
        let config = LivePushConfig()
        #expect(config.resolution == .preset(.p1080))
        #expect(config.videoWidth == 1920)
        #expect(config.videoHeight == 1080)
        #expect(config.fps == 30)
        #expect(config.gopSeconds == 2)
        #expect(config.qualityMode == .resolutionFirst)
        #expect(config.targetVideoBitrateKbps == nil)
        #expect(config.minVideoBitrateKbps == nil)
        #expect(config.initialVideoBitrateKbps == nil)
        #expect(config.encoder == .libx264)
        #expect(config.audioSampleRateHz == 48000)
        #expect(config.audioChannels == 2)
        #expect(config.audioBitrateKbps == 128)
        #expect(config.scaleMode == .fit)
        #expect(config.connectRetryIntervalMs == 2000)
        #expect(config.connectRetryCount == nil)
        #expect(config.connectRetryForMs == 300_000)
        #expect(config.autoBitrate == true)
    }

    @Test func screenDefaultIsTheDefaultInit() {
        #expect(LivePushConfig.screenDefault == LivePushConfig())
    }

    @Test func defaultsAreValid() throws {
        #expect(try LivePushConfig().validated() == LivePushConfig())
    }

    // MARK: Resolution

    @Test func everyPresetHasItsSize() {
        let sizes = ResolutionPreset.allCases.map { "\($0.rawValue) \($0.width)x\($0.height)" }
        #expect(sizes == ["360p 640x360", "540p 960x540", "720p 1280x720", "1080p 1920x1080",
                          "1440p 2560x1440", "2160p 3840x2160"])
    }

    @Test func presetNamesParseInAnyCase() throws {
        for preset in ResolutionPreset.allCases {
            #expect(try VideoResolution(parsing: preset.rawValue) == .preset(preset))
        }
        #expect(try VideoResolution(parsing: "720P") == .preset(.p720))
    }

    @Test func exactSizeParsesAndPrintsBack() throws {
        let resolution = try VideoResolution(parsing: "1280x800")
        #expect(resolution == .size(width: 1280, height: 800))
        #expect(resolution.description == "1280x800")
        let config = LivePushConfig(resolution: resolution)
        #expect(config.videoWidth == 1280)
        #expect(config.videoHeight == 800)
    }

    @Test func sizeLimitsAreAccepted() throws {
        #expect(try VideoResolution(parsing: "160x90") == .size(width: 160, height: 90))
        #expect(try VideoResolution(parsing: "7680x4320") == .size(width: 7680, height: 4320))
    }

    @Test func unreadableResolutionIsRefused() {
        for text in ["1080", "1280x", "x720", "1280*720", "+1280x720", "1280x720x2", ""] {
            #expect(throws: LivePushConfigError.unreadableResolution(text)) { try VideoResolution(parsing: text) }
        }
        #expect(LivePushConfigError.unreadableResolution("1080").description
            == "--resolution '1080' is neither a preset (360p, 540p, 720p, 1080p, 1440p, 2160p) "
            + "nor WIDTHxHEIGHT such as 1280x720")
    }

    @Test func oddSizeIsRefused() {
        #expect(message { try VideoResolution(parsing: "1281x720") }
            == "--resolution 1281x720: width 1281 is odd; width and height must be even")
        #expect(message { try VideoResolution(parsing: "1281x721") }
            == "--resolution 1281x721: width 1281 and height 721 are odd; width and height must be even")
    }

    @Test func sizeOutOfRangeIsRefused() {
        #expect(message { try VideoResolution(parsing: "158x720") }
            == "--resolution 158x720: width 158 is outside 160...7680")
        #expect(message { try VideoResolution(parsing: "1280x4322") }
            == "--resolution 1280x4322: height 4322 is outside 90...4320")
        #expect(message { try VideoResolution(parsing: "7682x88") }
            == "--resolution 7682x88: width 7682 is outside 160...7680 and height 88 is outside 90...4320")
    }

    @Test func validatedChecksASizeBuiltInCode() {
        #expect(throws: LivePushConfigError.oddResolution(width: 1280, height: 719)) {
            try LivePushConfig(resolution: .size(width: 1280, height: 719)).validated()
        }
    }

    @Test func exactSizeUsesTheNearestPresetByPixelCount() {
        #expect(VideoResolution.size(width: 1280, height: 800).nearestPreset == .p720)
        #expect(VideoResolution.size(width: 1600, height: 900).nearestPreset == .p720)
        #expect(VideoResolution.size(width: 1680, height: 1050).nearestPreset == .p1080)
        #expect(VideoResolution.size(width: 3440, height: 1440).nearestPreset == .p1440)
        #expect(VideoResolution.size(width: 160, height: 90).nearestPreset == .p360)
    }

    // MARK: Ranges

    @Test func fpsOutsideOneToSixtyIsRefused() throws {
        #expect(message { try LivePushConfig(fps: 0).validated() } == "--fps 0 is outside 1...60")
        #expect(message { try LivePushConfig(fps: 61).validated() } == "--fps 61 is outside 1...60")
        _ = try LivePushConfig(fps: 1).validated()
        _ = try LivePushConfig(fps: 60).validated()
    }

    @Test func gopOutsideOneToTenSecondsIsRefused() throws {
        #expect(message { try LivePushConfig(gopSeconds: 0).validated() } == "--gop 0 s is outside 1...10 s")
        #expect(message { try LivePushConfig(gopSeconds: 11).validated() } == "--gop 11 s is outside 1...10 s")
        _ = try LivePushConfig(gopSeconds: 10).validated()
    }

    @Test func videoBitrateOutsideItsRangeIsRefused() {
        #expect(message { try LivePushConfig(targetVideoBitrateKbps: 50001).validated() }
            == "--bitrate 50001 kbps is outside 100...50000 kbps")
        #expect(message { try LivePushConfig(minVideoBitrateKbps: 99).validated() }
            == "--min-bitrate 99 kbps is outside 100...50000 kbps")
        #expect(message { try LivePushConfig(initialVideoBitrateKbps: 0).validated() }
            == "--initial-bitrate 0 kbps is outside 100...50000 kbps")
    }

    @Test func audioRateOtherThan44100Or48000IsRefused() throws {
        #expect(message { try LivePushConfig(audioSampleRateHz: 22050).validated() }
            == "--audio-rate 22050 Hz is not 44100 or 48000 Hz")
        _ = try LivePushConfig(audioSampleRateHz: 44100).validated()
    }

    @Test func audioChannelsOtherThanOneOrTwoIsRefused() throws {
        #expect(message { try LivePushConfig(audioChannels: 0).validated() } == "--audio-channels 0 is not 1 or 2")
        #expect(message { try LivePushConfig(audioChannels: 6).validated() } == "--audio-channels 6 is not 1 or 2")
        _ = try LivePushConfig(audioChannels: 1).validated()
    }

    @Test func audioBitrateOutside32To320IsRefused() throws {
        #expect(message { try LivePushConfig(audioBitrateKbps: 31).validated() }
            == "--audio-bitrate 31 kbps is outside 32...320 kbps")
        #expect(message { try LivePushConfig(audioBitrateKbps: 321).validated() }
            == "--audio-bitrate 321 kbps is outside 32...320 kbps")
        _ = try LivePushConfig(audioBitrateKbps: 32).validated()
        _ = try LivePushConfig(audioBitrateKbps: 320).validated()
    }

    @Test func retryIntervalOutsideOneSecondToOneMinuteIsRefused() throws {
        #expect(message { try LivePushConfig(connectRetryIntervalMs: 999).validated() }
            == "--retry-interval 999 ms is outside 1000...60000 ms")
        #expect(message { try LivePushConfig(connectRetryIntervalMs: 60001).validated() }
            == "--retry-interval 60001 ms is outside 1000...60000 ms")
        _ = try LivePushConfig(connectRetryIntervalMs: 1000).validated()
    }

    @Test func retryCountOutsideZeroToThousandIsRefused() throws {
        #expect(message { try LivePushConfig(connectRetryCount: -1).validated() }
            == "--retry-count -1 is outside 0...1000")
        #expect(message { try LivePushConfig(connectRetryCount: 1001).validated() }
            == "--retry-count 1001 is outside 0...1000")
        _ = try LivePushConfig(connectRetryCount: 0).validated()
        _ = try LivePushConfig(connectRetryCount: nil).validated()
    }

    @Test func retryForIsOneSecondToSevenDaysOrZeroForEver() throws {
        var config = LivePushConfig()
        config.connectRetryForMs = 999
        #expect(message { try config.validated() } == "--retry-for 999 ms is outside 1000...604800000 ms")
        config.connectRetryForMs = 604_800_001
        #expect(message { try config.validated() } == "--retry-for 604800001 ms is outside 1000...604800000 ms")
        config.connectRetryForMs = 0
        _ = try config.validated()
        #expect(try LivePushConfig.decodeJSON(Data(#"{"connectRetryForMs": 0, "connectRetryCount": null}"#.utf8))
            == config)
    }

    @Test func theFirstProblemInFieldOrderIsReported() {
        #expect(throws: LivePushConfigError.outOfRange(.fps, value: 0, allowed: 1...60)) {
            try LivePushConfig(fps: 0, audioChannels: 3).validated()
        }
    }

    // MARK: Quality modes and bitrates

    @Test func qualityModeNamesParseAndAreTheRawValues() throws {
        #expect(QualityMode.allCases.map(\.rawValue) == ["resolution-first", "fluency-first", "custom"])
        #expect(try QualityMode(parsing: "fluency-first") == .fluencyFirst)
        #expect(try QualityMode(parsing: "Custom") == .custom)
        #expect(message { try QualityMode(parsing: "best") }
            == "--quality 'best' is not resolution-first, fluency-first or custom")
    }

    @Test func encoderAndScaleNamesParse() throws {
        #expect(try LivePushConfig.encoder(named: "h264_vaapi") == .vaapi)
        #expect(try LivePushConfig.encoder(named: "nvenc") == .nvenc)
        #expect(try LivePushConfig.scaleMode(named: "crop") == .crop)
        #expect(message { try LivePushConfig.encoder(named: "x264") }
            == "--encoder 'x264' is not libx264, libopenh264, h264_vaapi or h264_nvenc")
        #expect(message { try LivePushConfig.scaleMode(named: "zoom") } == "--scale 'zoom' is not fit, fill or crop")
    }

    @Test func customQualityNeedsAllThreeBitrates() {
        #expect(message { try LivePushConfig(qualityMode: .custom).validated() }
            == "custom quality needs --bitrate, --min-bitrate and --initial-bitrate; "
            + "missing: --bitrate, --min-bitrate, --initial-bitrate")
        #expect(throws: LivePushConfigError.customBitratesMissing([.minVideoBitrateKbps])) {
            try LivePushConfig(qualityMode: .custom, targetVideoBitrateKbps: 2000, initialVideoBitrateKbps: 1500)
                .validated()
        }
    }

    @Test func customMinAboveTargetIsRefused() {
        #expect(message {
            try LivePushConfig(qualityMode: .custom, targetVideoBitrateKbps: 2000, minVideoBitrateKbps: 3000,
                               initialVideoBitrateKbps: 2000).validated()
        } == "min bitrate 3000 kbps is above the target 2000 kbps (--min-bitrate must not exceed --bitrate)")
    }

    @Test func customInitialOutsideMinToTargetIsRefused() {
        #expect(message {
            try LivePushConfig(qualityMode: .custom, targetVideoBitrateKbps: 2000, minVideoBitrateKbps: 600,
                               initialVideoBitrateKbps: 500).validated()
        } == "initial bitrate 500 kbps is below the min 600 kbps "
            + "(--initial-bitrate must be within --min-bitrate...--bitrate)")
        #expect(message {
            try LivePushConfig(qualityMode: .custom, targetVideoBitrateKbps: 2000, minVideoBitrateKbps: 600,
                               initialVideoBitrateKbps: 2500).validated()
        } == "initial bitrate 2500 kbps is above the target 2000 kbps "
            + "(--initial-bitrate must be within --min-bitrate...--bitrate)")
    }

    @Test func customBitratesAreTheEffectiveOnes() throws {
        let config = try LivePushConfig(qualityMode: .custom, targetVideoBitrateKbps: 2500, minVideoBitrateKbps: 2000,
                                        initialVideoBitrateKbps: 2000).validated()
        #expect(config.effectiveBitratesKbps == (target: 2500, min: 2000, initial: 2000))
    }

    @Test func equalCustomBitratesAreAccepted() throws {
        _ = try LivePushConfig(qualityMode: .custom, targetVideoBitrateKbps: 100, minVideoBitrateKbps: 100,
                               initialVideoBitrateKbps: 100).validated()
    }

    @Test func resolutionFirstTableGivesTheBitrates() {
        func bitrates(_ preset: ResolutionPreset) -> (target: Int, min: Int, initial: Int) {
            LivePushConfig(resolution: .preset(preset), qualityMode: .resolutionFirst).effectiveBitratesKbps
        }
        #expect(bitrates(.p540) == (target: 1400, min: 600, initial: 1000))
        #expect(bitrates(.p720) == (target: 2000, min: 600, initial: 1500))
        #expect(bitrates(.p1080) == (target: 2500, min: 1200, initial: 1800))
    }

    @Test func fluencyFirstTableGivesTheBitrates() {
        func bitrates(_ preset: ResolutionPreset) -> (target: Int, min: Int, initial: Int) {
            LivePushConfig(resolution: .preset(preset), qualityMode: .fluencyFirst).effectiveBitratesKbps
        }
        #expect(bitrates(.p540) == (target: 1000, min: 300, initial: 800))
        #expect(bitrates(.p720) == (target: 1200, min: 300, initial: 1000))
        #expect(bitrates(.p1080) == (target: 2200, min: 1200, initial: 1500))
    }

    @Test func everyTableRowIsValidAndOrdered() throws {
        for preset in ResolutionPreset.allCases {
            for mode in [QualityMode.resolutionFirst, .fluencyFirst] {
                let config = try LivePushConfig(resolution: .preset(preset), qualityMode: mode).validated()
                let bitrates = config.effectiveBitratesKbps
                #expect(bitrates.min <= bitrates.initial && bitrates.initial <= bitrates.target)
            }
        }
        #expect(ResolutionPreset.p1080.bitratesKbps(for: .custom) == nil)
    }

    @Test func exactSizeTakesTheNearestPresetsRow() {
        let config = LivePushConfig(resolution: .size(width: 1600, height: 900), qualityMode: .fluencyFirst)
        #expect(config.effectiveBitratesKbps == (target: 1200, min: 300, initial: 1000))
    }

    @Test func aGivenBitrateReplacesTheTables() throws {
        let config = try LivePushConfig(qualityMode: .resolutionFirst, targetVideoBitrateKbps: 6000).validated()
        #expect(config.effectiveBitratesKbps == (target: 6000, min: 1200, initial: 1800))
    }

    @Test func aGivenBitrateAtOddsWithTheTableNamesTheRow() {
        #expect(message { try LivePushConfig(targetVideoBitrateKbps: 1000).validated() }
            == "min bitrate 1200 kbps is above the target 1000 kbps (--min-bitrate must not exceed --bitrate); "
            + "bitrates not given come from the resolution-first row for 1080p: "
            + "target 2500, min 1200, initial 1800 kbps")
    }

    // MARK: JSON

    @Test func jsonKeysAreThePropertyNames() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(LivePushConfig()), as: UTF8.self)
        #expect(json == #"{"audioBitrateKbps":128,"audioChannels":2,"audioSampleRateHz":48000,"autoBitrate":true,"#
            + #""connectRetryForMs":300000,"connectRetryIntervalMs":2000,"encoder":"libx264","encoderThreads":0,"fps":30,"#
            + #""gopSeconds":2,"networkPoorAfterMs":5000,"preset":"veryfast","qualityMode":"resolution-first","#
            + #""resolution":"1080p","scaleMode":"fit","tune":"zerolatency"}"#)
    }

    @Test func jsonRoundTripKeepsEveryField() throws {
        let config = LivePushConfig(
            resolution: .size(width: 1280, height: 800), fps: 60, gopSeconds: 1, qualityMode: .custom,
            targetVideoBitrateKbps: 4000, minVideoBitrateKbps: 1000, initialVideoBitrateKbps: 3000,
            encoder: .vaapi, audioSampleRateHz: 44100, audioChannels: 1, audioBitrateKbps: 96, scaleMode: .crop,
            connectRetryIntervalMs: 5000, connectRetryCount: 0, autoBitrate: false, pauseImagePath: "/srv/pause.png",
            networkPoorImagePath: "/srv/poor.jpg", networkPoorAfterMs: 8000)
        #expect(try LivePushConfig.decodeJSON(try JSONEncoder().encode(config)) == config)
    }

    @Test func jsonMissingKeysKeepTheDefaults() throws {
        #expect(try LivePushConfig.decodeJSON(Data("{}".utf8)) == LivePushConfig())
        #expect(try LivePushConfig.decodeJSON(Data(#"{"fps": 60, "minVideoBitrateKbps": null}"#.utf8))
            == LivePushConfig(fps: 60))
    }

    @Test func jsonUnknownKeyIsRefusedByName() {
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"fps": 30, "framerate": 30}"#.utf8)) }
            == "unknown key 'framerate'; the keys are: resolution, fps, gopSeconds, qualityMode, "
            + "targetVideoBitrateKbps, minVideoBitrateKbps, initialVideoBitrateKbps, encoder, audioSampleRateHz, "
            + "audioChannels, audioBitrateKbps, scaleMode, connectRetryIntervalMs, connectRetryCount, connectRetryForMs, autoBitrate, "
            + "pauseImagePath, networkPoorImagePath, networkPoorAfterMs, caFile, urlFile, watermarks, pushMirror, enableAutoResolution, "
            + "preset, profile, tune, encoderThreads, recordingQuality, recordTracks")
    }

    @Test func jsonWatermarksAndMirrorRoundTripAndABadPositionIsRefusedNamingIt() throws {
        let text = #"{"watermarks": [{"path": "logo.png", "x": 0.8, "y": 0.05, "width": 0.15}], "pushMirror": true}"#
        let config = try LivePushConfig.decodeJSON(Data(text.utf8))
        #expect(config.watermarks == [WatermarkFile(path: "logo.png", position: WatermarkPosition(x: 0.8, y: 0.05, width: 0.15))])
        #expect(config.pushMirror)
        #expect(try LivePushConfig.decodeJSON(JSONEncoder().encode(config)) == config)
        var bad = LivePushConfig()
        bad.watermarks = [WatermarkFile(path: "logo.png", position: WatermarkPosition(x: 0.5, y: 0.5, width: 0, opacity: 1))]
        #expect(message { try bad.validated() } == "--watermark 'logo.png': width 0.0 is outside 0 to 1 (a fraction of the picture's width)")
    }

    @Test func autoResolutionIsOffByDefaultAndReadFromJSON() throws {
        #expect(!LivePushConfig().enableAutoResolution)
        let on = try LivePushConfig.decodeJSON(Data(#"{"enableAutoResolution": true}"#.utf8))
        #expect(on.enableAutoResolution)
        let json = String(decoding: try JSONEncoder().encode(on), as: UTF8.self)
        #expect(json.contains(#""enableAutoResolution":true"#))
        #expect(try LivePushConfig.decodeJSON(Data(json.utf8)) == on)
    }

    @Test func jsonRoundTripKeepsTheEncoderChoices() throws {
        var config = LivePushConfig()
        config.preset = .faster
        config.profile = .main
        config.tune = .animation
        config.encoderThreads = 4
        config.recordingQuality = RecordingQuality(crf: 18, preset: .medium)
        #expect(try LivePushConfig.decodeJSON(try JSONEncoder().encode(config)) == config)
        #expect(config.encoderTuning == H264EncoderTuning(preset: .faster, profile: .main, tune: .animation, threads: 4))
    }

    @Test func recordingQualityReadsCrfAndAnOptionalPreset() throws {
        #expect(try RecordingQuality(parsing: "crf=20") == RecordingQuality(crf: 20))
        #expect(try RecordingQuality(parsing: "preset=Fast, crf=0") == RecordingQuality(crf: 0, preset: .fast))
        #expect(RecordingQuality(crf: 18, preset: .medium).description == "crf=18,preset=medium")
        #expect(message { try RecordingQuality(parsing: "preset=fast") }
            == "--record-quality 'preset=fast': crf=N is missing; write crf=N[,preset=P], e.g. crf=20 or "
            + "crf=18,preset=fast")
        #expect(message { try RecordingQuality(parsing: "crf=abc") }
            == "--record-quality 'crf=abc': crf 'abc' is not a whole number; write crf=N[,preset=P], e.g. crf=20 or "
            + "crf=18,preset=fast")
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"recordingQuality": "crf=99"}"#.utf8)) }
            == "key 'recordingQuality': 'crf=99': crf 99 is outside 0...51; write crf=N[,preset=P], e.g. crf=20 or "
            + "crf=18,preset=fast")
    }

    @Test func jsonValueOfTheWrongTypeNamesTheKey() {
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"fps": "30"}"#.utf8)) }
            == "key 'fps': expected a whole number")
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"gopSeconds": 1.5}"#.utf8)) }
            == "key 'gopSeconds': expected a whole number")
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"autoBitrate": 1}"#.utf8)) }
            == "key 'autoBitrate': expected true or false")
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"resolution": 1080}"#.utf8)) }
            == "key 'resolution': expected a string")
    }

    @Test func jsonNameThatIsNotAllowedNamesTheKey() {
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"qualityMode": "best"}"#.utf8)) }
            == "key 'qualityMode': 'best' is not resolution-first, fluency-first or custom")
        #expect(message { try LivePushConfig.decodeJSON(Data(#"{"resolution": "1281x720"}"#.utf8)) }
            == "key 'resolution': 1281x720: width 1281 is odd; width and height must be even")
    }

    @Test func jsonThatIsNotAnObjectIsRefused() {
        #expect(message { try LivePushConfig.decodeJSON(Data("[1, 2]".utf8)) }
            == "the configuration must be a JSON object of keys and values")
    }

    @Test func jsonSyntaxErrorSaysTheLineAndColumn() {
        let text = "{\n\"fps\": 30,\n\"gopSeconds\": tru\n}"
        #expect(message { try LivePushConfig.decodeJSON(Data(text.utf8)) }
            == "not valid JSON: Invalid value around line 3, column 18")
    }

    // MARK: Helpers

    /// The description of the LivePushConfigError `body` throws; "no error" or the wrong type say so.
    private func message<T>(_ body: () throws -> T) -> String {
        do {
            _ = try body()
            return "no error"
        } catch let error as LivePushConfigError {
            return error.description
        } catch {
            return "not a LivePushConfigError: \(error)"
        }
    }
}

/// The RTMPS and key-file settings (issue 13).
@Suite(.timeLimit(.minutes(10))) struct SecureSettingsConfigTests {
    @Test func caFileAndURLFileAreReadFromJSON() throws {
        let config = try LivePushConfig.decodeJSON(Data(#"{"caFile": "/etc/ssl/certs/ca-certificates.crt", "urlFile": "/run/keys"}"#.utf8))
        #expect(config.caFile == "/etc/ssl/certs/ca-certificates.crt" && config.urlFile == "/run/keys")
    }

    @Test func aMissingCAFileIsRefusedByItsOption() {
        var config = LivePushConfig()
        config.caFile = "/nonexistent/ca.pem"
        #expect(throws: LivePushConfigError.unreadableFile(.caFile, path: "/nonexistent/ca.pem", reason: "does not exist")) {
            try config.validated()
        }
        #expect(LivePushConfigError.unreadableFile(.caFile, path: "/x.pem", reason: "does not exist").description
            == "--ca-file '/x.pem' does not exist")
    }
}
