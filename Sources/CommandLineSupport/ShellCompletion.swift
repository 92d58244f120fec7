/// Tab completion scripts for bash and zsh, rendered from a program's `ProgramSpec`: its commands,
/// their options, the fixed choices of an option's value, files where a file is asked for, and
/// the values a command lists (`valueCommands`, e.g. microphone names for `--mic`).
public enum ShellCompletion {
    /// A script for bash-completion's directory (`/usr/share/bash-completion/completions/NAME`),
    /// or to `source` by hand. It needs bash only, not the bash-completion package.
    public static func bash(_ program: ProgramSpec) -> String {
        let function = "_" + identifier(program.name)
        var script = """
            # bash completion for \(program.name), generated from its option tables by
            # `\(program.name) --generate-docs bash`. Do not edit: regenerate.
            \(function)() {
                local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
                local options="" arguments=words
                # bash splits --option=value at the '=': complete the value of the option before it.
                if [[ $cur == = ]]; then
                    cur=""
                elif [[ $prev == = ]]; then
                    prev=${COMP_WORDS[COMP_CWORD-2]}
                fi

            """
        if program.isSingleCommand {
            script += bashCommandBody(program.commands[0], program: program, indent: "    ")
        } else {
            let words = program.commands.map(\.name) + program.globalOptions.flatMap(optionWords)
            script += """
                    if ((COMP_CWORD == 1)); then
                        COMPREPLY=($(compgen -W "\(words.joined(separator: " "))" -- "$cur"))
                        return 0
                    fi
                    case ${COMP_WORDS[1]} in

                """
            for command in program.commands {
                script += "        \(command.name))\n"
                script += bashCommandBody(command, program: program, indent: "            ")
                script += "            ;;\n"
            }
            script += "        *) return 0 ;;\n    esac\n"
        }
        script += """
                if [[ $cur == -* ]]; then
                    COMPREPLY=($(compgen -W "$options" -- "$cur"))
                elif [[ $arguments == file ]]; then
                    compopt -o filenames 2>/dev/null
                    COMPREPLY=($(compgen -f -- "$cur"))
                elif [[ $arguments == choices:* ]]; then
                    COMPREPLY=($(compgen -W "${arguments#choices:}" -- "$cur"))
                fi
                return 0
            }
            complete -F \(function) \(program.name)

            """
        return script
    }

    /// The lines that complete one command's option values and set its `options` and `arguments`.
    private static func bashCommandBody(_ command: CommandSpec, program: ProgramSpec, indent: String) -> String {
        var cases: [String] = []
        for option in command.options {
            guard let valueName = option.valueName else { continue }
            let reply: String
            if let lister = program.valueCommands[option.name] {
                reply = "COMPREPLY=($(compgen -W \"$(\(lister) 2>/dev/null)\" -- \"$cur\"))"
            } else {
                switch OptionValueKind(valueName: valueName) {
                case .choices(let words): reply = "COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\"))"
                case .file: reply = "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))"
                case .directory: reply = "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\"))"
                case .text: reply = "COMPREPLY=()"
                }
            }
            cases.append("\(indent)    --\(option.name)) \(reply); return 0 ;;")
        }
        var body = ""
        if !cases.isEmpty {
            body += "\(indent)case $prev in\n" + cases.joined(separator: "\n") + "\n\(indent)esac\n"
        }
        body += "\(indent)options=\"\(command.options.flatMap(optionWords).joined(separator: " "))\"\n"
        switch command.arguments {
        case .file: body += "\(indent)arguments=file\n"
        case .words: body += "\(indent)arguments=words\n"
        case .choices(let words): body += "\(indent)arguments=\"choices:\(words.joined(separator: " "))\"\n"
        }
        return body
    }

    /// A script for zsh's completion path (`/usr/share/zsh/vendor-completions/_NAME`): an
    /// `_arguments` description of every command and option, with each option's help.
    public static func zsh(_ program: ProgramSpec) -> String {
        let function = "_" + identifier(program.name)
        var script = """
            #compdef \(program.name)
            # zsh completion for \(program.name), generated from its option tables by
            # `\(program.name) --generate-docs zsh`. Do not edit: regenerate.

            """
        for (option, lister) in program.valueCommands.sorted(by: { $0.key < $1.key }) {
            script += """
                \(function)_\(identifier(option))() {
                    local -a values
                    values=(${(f)"$(\(lister) 2>/dev/null)"})
                    compadd -a values
                }

                """
        }
        script += "\(function)() {\n"
        if program.isSingleCommand {
            script += "    _arguments -S \\\n" + zshSpecs(program.commands[0], program: program) + "\n}\n"
        } else {
            let described = program.commands.map { "        \(quoted("\($0.name):\($0.summary)"))" }
            script += """
                    local -a commands
                    commands=(
                \(described.joined(separator: "\n"))
                    )
                    if ((CURRENT == 2)); then
                        if [[ $PREFIX == -* ]]; then
                            _arguments \(program.globalOptions.flatMap { zshOptionSpecs($0, program: program) }.joined(separator: " "))
                        else
                            _describe -t commands '\(program.name) command' commands
                        fi
                        return
                    fi
                    local command=$words[2]
                    shift words
                    ((CURRENT--))
                    case $command in

                """
            for command in program.commands {
                script += "        \(command.name))\n            _arguments -S \\\n"
                script += zshSpecs(command, program: program, indent: "                ") + "\n            ;;\n"
            }
            script += "    esac\n}\n"
        }
        script += "\n\(function) \"$@\"\n"
        return script
    }

    private static func zshSpecs(_ command: CommandSpec, program: ProgramSpec, indent: String = "        ") -> String {
        var specs = command.options.flatMap { zshOptionSpecs($0, program: program) }
        switch command.arguments {
        case .file: specs.append(quoted("*:file:_files"))
        case .words: specs.append(quoted("*:argument: "))
        case .choices(let words): specs.append(quoted("*:command:(\(words.joined(separator: " ")))"))
        }
        return specs.map { indent + $0 }.joined(separator: " \\\n")
    }

    /// `'--display=[X display to capture]:\:N: '`, one for the long name and one for a short alias.
    private static func zshOptionSpecs(_ option: OptionSpec, program: ProgramSpec) -> [String] {
        let help = "[" + escapeZshHelp(option.help) + "]"
        var argument = ""
        if let valueName = option.valueName {
            let action: String
            if program.valueCommands[option.name] != nil {
                action = "_\(identifier(program.name))_\(identifier(option.name))"
            } else {
                switch OptionValueKind(valueName: valueName) {
                case .choices(let words): action = "(\(words.joined(separator: " ")))"
                case .file: action = "_files"
                case .directory: action = "_files -/"
                case .text: action = " "
                }
            }
            argument = ":" + valueName.replacingAll(":", with: "\\:") + ":" + action
        }
        let equals = option.valueName == nil ? "" : "="
        var specs = [quoted("--\(option.name)\(equals)\(help)\(argument)")]
        if let short = option.shortName { specs.append(quoted("-\(short)\(help)\(argument)")) }
        return specs
    }

    private static func escapeZshHelp(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "[" || character == "]" || character == "\\" { escaped += "\\" }
            escaped.append(character)
        }
        return escaped
    }

    /// The words an option is typed as: `--help` and `-h`.
    private static func optionWords(_ option: OptionSpec) -> [String] {
        ["--\(option.name)"] + (option.shortName.map { ["-\($0)"] } ?? [])
    }

    /// A shell function name's part: `livepush-capture` -> `livepush_capture`.
    private static func identifier(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    /// Single-quoted for the shell.
    private static func quoted(_ text: String) -> String { "'" + text.replacingAll("'", with: "'\\''") + "'" }
}

extension String {
    /// Every `target` replaced (without Foundation).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self { result += character == target ? replacement : String(character) }
        return result
    }
}
