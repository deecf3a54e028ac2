import Foundation
import Yams

/// Reads scenario files (YAML) into validated `Scenario` values.
///
/// Every problem, from a YAML syntax error to a misspelt key or an out-of-range number, becomes a
/// `ScenarioError` that names the file, the line and column, and the field, so users can fix the
/// file without guessing. Targets name any host (a name, an IPv4 or a bracketed IPv6 literal); names
/// are resolved by the engine before a run, never here.
public enum ScenarioLoader {
    /// The largest scenario file read: far above any real scenario, small enough that a wrong
    /// file (a log, /dev/zero, a 50 MB list) is refused at once instead of parsed.
    public static let maxFileBytes = 1 << 20

    /// Loads and validates a scenario file, with command-line overrides applied first.
    ///
    /// Besides the checks of `parse`, this looks outside the file: an access token read from
    /// an environment variable or a file must be there now, so that a run does not fail after
    /// it has started.
    ///
    /// - Parameters:
    ///   - path: Path of a YAML scenario file; it is stored, as given, in `Scenario.file`.
    ///   - overrides: Values from the command line (`--clients 200`), checked exactly as the
    ///     fields they replace; a problem with one names the flag.
    /// - Throws: `ScenarioError` when the file cannot be read (line 0) or is not a valid scenario.
    public static func load(path: String, overrides: [Override] = []) throws(ScenarioError) -> Scenario {
        let text = try readScenarioFile(path)
        return try parse(yaml: text, file: path, overrides: overrides, checksEnvironment: true)
    }

    /// Reads a regular file of at most `maxFileBytes`, as UTF-8 text, without ever reading more.
    private static func readScenarioFile(_ path: String) throws(ScenarioError) -> String {
        func failure(_ reason: String) -> ScenarioError {
            ScenarioError(file: path, line: 0, message: "cannot read scenario file: \(reason)")
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw failure(errno == ENOENT ? "no such file" : String(cString: strerror(errno))) }
        if (info.st_mode & S_IFMT) == S_IFDIR { throw failure("it is a directory") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw failure("it is not a regular file") }
        guard info.st_size <= maxFileBytes else {
            throw failure("it is \(info.st_size) bytes; a scenario file may be at most \(maxFileBytes) bytes (1 MiB)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw failure(String(cString: strerror(errno))) }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.read(upToCount: maxFileBytes + 1) ?? Data() } catch {
            throw failure(readFailureReason(error, path: path))
        }
        // The file may have grown since stat.
        guard data.count <= maxFileBytes else { throw failure("it is larger than \(maxFileBytes) bytes (1 MiB)") }
        guard let text = String(data: data, encoding: .utf8) else { throw failure("it is not valid UTF-8 text") }
        return text
    }

    /// Parses and validates the YAML text of a scenario.
    ///
    /// - Parameters:
    ///   - yaml: The scenario as YAML text.
    ///   - file: Used in error messages, as the default scenario name (its base name without
    ///     extension) and stored in `Scenario.file`.
    ///   - overrides: Command-line values that replace (or add) top-level fields before checking.
    ///   - checksEnvironment: Whether token variables and token files must exist now.
    /// - Throws: `ScenarioError` naming the line, column and field (or the flag) of the first problem found.
    public static func parse(yaml: String, file: String, overrides: [Override] = [], checksEnvironment: Bool = false) throws(ScenarioError) -> Scenario {
        // Some editors start UTF-8 files with a byte order mark, which libyaml rejects inside a String.
        let yaml = yaml.unicodeScalars.first == "\u{FEFF}" ? String(yaml.unicodeScalars.dropFirst()) : yaml
        guard yaml.utf8.count <= maxFileBytes else {
            throw ScenarioError(file: file, line: 0, message: "the scenario is larger than \(maxFileBytes) bytes (1 MiB)")
        }
        let document: Node?
        do {
            document = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw syntaxError(error, file: file, yaml: yaml)
        } catch {
            throw ScenarioError(file: file, line: 1, message: "invalid YAML: \(error)")
        }
        guard var document else {
            throw ScenarioError(
                file: file, line: 1,
                message: "the scenario is empty: it needs at least 'target', 'clients' and 'duration'")
        }
        var flags: [String: String] = [:]
        if !overrides.isEmpty, case .mapping(let mapping) = document {
            document = applying(overrides, to: mapping)
            for o in overrides { flags[o.field] = o.flag }
        }
        return try Reader(file: file, flags: flags, checksEnvironment: checksEnvironment).scenario(from: document)
    }

    static func readFailureReason(_ error: any Error, path: String) -> String {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            return "no such file"
        }
        if isDirectory.boolValue {
            return "it is a directory"
        }
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
            let message = strerror(Int32(underlying.code))
        {
            return String(cString: message)
        }
        return nsError.localizedDescription
    }

    private static func syntaxError(_ error: YamlError, file: String, yaml: String) -> ScenarioError {
        switch error {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = "invalid YAML: \(problem)"
            if case .composer = error, problem == "but found another document" {
                message = "invalid YAML: a scenario file holds a single document, but a second one starts here"
            } else if let context {
                message += " (\(context.text) at line \(context.mark.line))"
            }
            if line(mark.line, of: yaml).contains("\t") {
                message += "; YAML does not allow tabs for indentation, use spaces"
            }
            return ScenarioError(file: file, line: mark.line, column: mark.column, message: message)
        case .reader(let problem, let offset, _, _):
            let (line, column) = offset.map { position(ofCharacterOffset: $0, in: yaml) } ?? (1, 0)
            return ScenarioError(file: file, line: line, column: column, message: "invalid YAML: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            // Yams reports the first occurrence of the first duplicated key, without its parent path.
            let key = duplicates.first ?? ""
            return ScenarioError(
                file: file, line: context.mark.line, column: context.mark.column, field: key,
                message: "given more than once (each field may appear only once in a mapping)")
        default:
            return ScenarioError(file: file, line: 1, message: "invalid YAML: \(error)")
        }
    }

    private static func line(_ number: Int, of text: String) -> Substring {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.indices.contains(number - 1) ? lines[number - 1] : ""
    }

    private static func position(ofCharacterOffset offset: Int, in text: String) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for character in text.prefix(offset) {
            if character == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }
}

/// A problem with a scenario file, located as precisely as possible.
///
/// `description` reads like a compiler diagnostic:
/// `scenarios/x.yaml:7:3: field 'message.rate': expected a number ≥ 0, got 'fast'`.
public struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The scenario file's path as given (`Scenario.file`).
    public var file: String
    /// 1-based line of the offending key or value; 0 when unknown (e.g. the file is unreadable).
    public var line: Int
    /// 1-based column; 0 when unknown.
    public var column: Int
    /// Dotted path of the field, e.g. `message.rate`; "" for problems with the file as a whole.
    public var field: String
    /// What is wrong and, where possible, what is expected instead.
    public var message: String
    /// The command-line flag whose value is wrong (`--clients`), or "" for the file's own values.
    public var flag: String

    public init(file: String, line: Int, column: Int = 0, field: String = "", message: String, flag: String = "") {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.message = message
        self.flag = flag
    }

    public var description: String {
        if !flag.isEmpty { return "\(flag): \(message)" }
        var text = file.isEmpty ? "<scenario>" : file
        if line > 0 {
            text += ":\(line)"
            if column > 0 {
                text += ":\(column)"
            }
        }
        text += ": "
        if !field.isEmpty {
            text += "field '\(field)': "
        }
        return text + message
    }
}
