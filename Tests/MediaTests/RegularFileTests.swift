import Foundation
import Glibc
@testable import Media
import Testing
import TestSupport

/// Issue 30: files a person names never block, and are named for what they are.
struct RegularFileTests {
    private func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("regular")).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    @Test func aFIFOADeviceADirectoryOrNothingIsNamedAtOnce() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        #expect(symlink("/dev/zero", dir + "/zero") == 0)
        let started = Date()
        #expect(RegularFile.problem(readingFrom: dir + "/fifo") == "'\(dir)/fifo' is a FIFO (named pipe), not a regular file")
        #expect(RegularFile.problem(readingFrom: dir + "/zero") == "'\(dir)/zero' is a character device, not a regular file")
        #expect(RegularFile.problem(readingFrom: dir) == "'\(dir)' is a directory, not a regular file")
        #expect(RegularFile.problem(readingFrom: dir + "/none") == "'\(dir)/none' does not exist")
        #expect(Date().timeIntervalSince(started) < 1, "nothing waited for a writer")
        try "hello".write(toFile: dir + "/file", atomically: false, encoding: .utf8)
        let fd = try RegularFile.openForReading(dir + "/file")
        defer { close(fd) }
        #expect(fcntl(fd, F_GETFL) & O_NONBLOCK == 0, "reads block again as usual")
        #expect(try String(contentsOfFile: RegularFile.path(of: fd), encoding: .utf8) == "hello")
    }

    @Test func writingMakesAPrivateFileAndNeverOpensWhatIsThere() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/out.png"
        try "old".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
        try RegularFile.write(Array("new".utf8), to: path)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["out.png"], "no temporary file is left")
        #expect(mkfifo(dir + "/fifo.png", 0o600) == 0)
        #expect(throws: RegularFile.Failure(path: dir + "/fifo.png", reason: "is a FIFO (named pipe), not a regular file")) {
            try RegularFile.write([1, 2, 3], to: dir + "/fifo.png")
        }
        #expect(throws: RegularFile.Failure.self) { try RegularFile.write([1], to: dir + "/missing/x.png") }
    }
}
