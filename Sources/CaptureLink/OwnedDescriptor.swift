import Glibc

/// An owned file descriptor, closed when the owner is done with it.
final class OwnedDescriptor {
    private(set) var rawValue: Int32

    init(_ rawValue: Int32) { self.rawValue = rawValue }

    deinit { if rawValue >= 0 { Glibc.close(rawValue) } }

    func close() {
        if rawValue >= 0 { Glibc.close(rawValue) }
        rawValue = -1
    }

    /// Gives up ownership and returns the descriptor.
    func take() -> Int32 {
        defer { rawValue = -1 }
        return rawValue
    }
}
