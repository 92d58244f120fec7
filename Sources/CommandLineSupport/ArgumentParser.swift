/// A small command-line parser for LivePush's executables, in the conventions of
/// swift-argument-parser (which cannot be fetched here): `--kebab-case` long options,
/// `--name value` or `--name=value`, short aliases for flags, `--` ends the options,
/// and errors that name the option and say what to do.

/// One option a command accepts.
public struct OptionSpec: Sendable, Equatable {
    /// The long name without dashes: `"region"` for `--region`.
    public let name: String
    /// A one-letter alias (`-h`), or nil.
    public let shortName: Character?
    /// The placeholder shown in help for an option that takes a value (`"X,Y,W,H"`); nil for a flag.
    public let valueName: String?
    /// One line of help.
    public let help: String

    public static func flag(_ name: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(name: name, shortName: short, valueName: nil, help: help)
    }

    public static func value(_ name: String, valueName: String, help: String) -> OptionSpec {
        OptionSpec(name: name, shortName: nil, valueName: valueName, help: help)
    }

    var takesValue: Bool { valueName != nil }
}

/// What a command line said, in the order it said it.
public struct ParsedArguments: Sendable, Equatable {
    /// Flags that were given, by long name.
    public var flags: Set<String> = []
    /// Values of options that take one, by long name; repeated options keep every value.
    public var values: [String: [String]] = [:]
    /// Arguments that are not options, in order.
    public var positionals: [String] = []

    public init() {}

    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The last value given for `option`, or nil.
    public func value(_ option: String) -> String? { values[option]?.last }
}

/// A command line that cannot be understood. The description says what was wrong and what to do.
public enum ArgumentError: Error, Equatable, CustomStringConvertible {
    case unknownOption(String, suggestion: String?)
    case missingValue(option: String, valueName: String)
    case flagTakesNoValue(option: String)
    case invalidValue(option: String, value: String, reason: String)
    case unexpectedArgument(String)
    case missingArgument(String)
    /// An argument (not an option's value) that cannot be used, such as a mistyped push URL.
    case invalidArgument(value: String, reason: String)

    public var description: String {
        switch self {
        case .unknownOption(let option, let suggestion):
            if let suggestion { return "unknown option '\(option)'; did you mean '--\(suggestion)'?" }
            return "unknown option '\(option)'"
        case .missingValue(let option, let valueName):
            return "option '--\(option)' needs a value: --\(option) \(valueName)"
        case .flagTakesNoValue(let option):
            return "option '--\(option)' is a flag and takes no value"
        case .invalidValue(let option, let value, let reason):
            return "invalid value '\(value)' for '--\(option)': \(reason)"
        case .unexpectedArgument(let argument):
            return "unexpected argument '\(argument)'"
        case .missingArgument(let name):
            return "missing argument <\(name)>"
        case .invalidArgument(let value, let reason):
            return "invalid argument '\(value)': \(reason)"
        }
    }
}

public enum ArgumentParser {
    /// Parses `arguments` (without the program name) against `options`.
    public static func parse(_ arguments: [String], options: [OptionSpec]) throws(ArgumentError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name: String
                var inlineValue: String?
                if let equals = body.firstIndex(of: "=") {
                    name = String(body[..<equals])
                    inlineValue = String(body[body.index(after: equals)...])
                } else {
                    name = String(body)
                }
                guard let spec = options.first(where: { $0.name == name }) else {
                    throw .unknownOption("--\(name)", suggestion: Suggestion.nearest(to: name, in: options.map(\.name)))
                }
                if let valueName = spec.valueName {
                    if let inlineValue {
                        parsed.values[name, default: []].append(inlineValue)
                    } else if index < arguments.count {
                        parsed.values[name, default: []].append(arguments[index])
                        index += 1
                    } else {
                        throw .missingValue(option: name, valueName: valueName)
                    }
                } else {
                    if inlineValue != nil { throw .flagTakesNoValue(option: name) }
                    parsed.flags.insert(name)
                }
                continue
            }
            // Short flags, possibly grouped: -hv.
            for letter in argument.dropFirst() {
                guard let spec = options.first(where: { $0.shortName == letter }), !spec.takesValue else {
                    throw .unknownOption("-\(letter)", suggestion: nil)
                }
                parsed.flags.insert(spec.name)
            }
        }
        return parsed
    }

    /// The help lines for `options`, aligned: `  -h, --help            Show this help.`
    public static func optionsHelp(_ options: [OptionSpec]) -> String {
        let labels = options.map { spec -> String in
            let short = spec.shortName.map { "-\($0), " } ?? "    "
            let value = spec.valueName.map { " \($0)" } ?? ""
            return "  \(short)--\(spec.name)\(value)"
        }
        let width = (labels.map(\.count).max() ?? 0) + 2
        return zip(labels, options).map { label, spec in
            label + String(repeating: " ", count: width - label.count) + spec.help
        }.joined(separator: "\n")
    }
}
