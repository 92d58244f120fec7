// Placeholder until the AudioCapture module lands: startMicrophone is wired in LivePusher+Microphone.
final class Microphone: @unchecked Sendable {
    func stop() {}
}
