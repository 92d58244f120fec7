import Foundation
import Testing
import TestSupport

/// The benchmark's subcommands share one start (`BenchSupport.parseOrExit`): a wrong option is
/// refused before anything runs, with the subcommand's name and the option, and the usage status.
@Suite(.timeLimit(.minutes(10))) struct BenchCommandLineTests {
    @Test(arguments: ["push", "load", "alloc", "audio", "capture", "portal", "link", "record", "record-size"])
    func anUnknownOptionIsRefusedNamingTheSubcommandAndTheOption(subcommand: String) throws {
        let result = try ProcessRunner.run(BuiltProducts.path("livepush-bench"), [subcommand, "--no-such-option"],
                                           timeoutSeconds: 30)
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.standardError == "livepush-bench \(subcommand): unknown option '--no-such-option'\n",
                "\(result.standardError)")
        #expect(result.standardOutput.isEmpty, "nothing measured: \(result.standardOutput)")
    }
}
