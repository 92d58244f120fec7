/// A broken rule of the protocol: which rule (its error code) and what exactly was wrong,
/// naming the field and its value, as `FRAME.slot 7 out of range 0..2`.
public struct ProtocolViolation: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    public let detail: String

    public init(_ code: ErrorCode, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.name): \(detail)" }
}
