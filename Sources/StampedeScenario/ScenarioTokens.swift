import Foundation
import Yams

extension Reader {
    /// A literal token, `{env: NAME}` or `{file: PATH}`. No message here ever repeats what was written
    /// as the token (it may be the secret itself).
    func tokenSource(_ node: Node, field: String = "hub.access_token") throws(ScenarioError) -> TokenSource? {
        switch node {
        case .scalar(let scalar):
            if isNull(node) { return nil }
            let token = scalar.string
            guard !token.isEmpty else {
                throw error(at: node, field: field, "the access_token value is empty")
            }
            guard !token.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw error(at: node, field: field, "the access_token value cannot contain line breaks or NUL characters")
            }
            if token.hasPrefix("$"), isEnvironmentName(token.dropFirst().trimmingCharacters(in: CharacterSet(charactersIn: "{}"))) {
                throw error(
                    at: node, field: field,
                    "the access_token value looks like a shell variable, but Stampede does not expand variables: "
                        + "use {env: NAME} to read the token from the environment")
            }
            return .literal(token)
        case .mapping(let mapping):
            let fields = try Fields(mapping, path: field, known: Keys.accessToken, reader: self, hideUnknownKeys: true)
            switch (fields["env"], fields["file"]) {
            case (let env?, nil):
                guard case .scalar(let scalar) = env, !isNull(env), isEnvironmentName(scalar.string) else {
                    throw error(
                        at: env, field: "\(field).env",
                        "expected the name of an environment variable (letters, digits and '_', not starting with a digit), "
                            + "as in {env: HUB_TOKEN}\(describeUnlessText(env))")
                }
                return try available(.environment(scalar.string), at: env, field: "\(field).env")
            case (nil, let file?):
                guard case .scalar(let scalar) = file, !isNull(file), !scalar.string.isEmpty,
                    !scalar.string.unicodeScalars.contains("\0")
                else {
                    throw error(
                        at: file, field: "\(field).file",
                        "expected the path of a file holding the token, as in {file: secrets/hub-token}\(describeUnlessText(file))")
                }
                return try available(.file(scalar.string), at: file, field: "\(field).file")
            case (.some, .some):
                throw error(at: node, field: field, "give either 'env' or 'file', not both")
            case (nil, nil):
                throw error(at: node, field: field, "expected 'env' or 'file', as in {env: HUB_TOKEN}, got an empty mapping")
            }
        default:
            throw error(
                at: node, field: field,
                "expected a token, {env: NAME} or {file: PATH}, got \(describe(node))")
        }
    }

    /// The source itself, once its variable or file is there (when the scenario is about to run):
    /// a missing one is a bad scenario, reported at its line before any work starts.
    private func available(_ source: TokenSource, at node: Node, field: String) throws(ScenarioError) -> TokenSource {
        guard checksEnvironment else { return source }
        do { _ = try ScenarioLoader.resolveToken(source, scenarioFile: file, field: field) } catch {
            throw self.error(at: node, field: field, error.message)
        }
        return source
    }

    /// ", got a list" for structure, nothing for scalar text (which may be a misplaced secret).
    private func describeUnlessText(_ node: Node) -> String {
        if case .scalar = node, !isNull(node) { return "" }
        return ", got \(describe(node))"
    }
}

private func isEnvironmentName(_ text: some StringProtocol) -> Bool {
    guard let first = text.unicodeScalars.first, first == "_" || ("a"..."z").contains(first) || ("A"..."Z").contains(first)
    else { return false }
    return text.unicodeScalars.allSatisfy { $0 == "_" || isAlphanumeric($0) }
}

extension ScenarioLoader {
    /// Reads a hub access token where `source` says, at the start of a run.
    ///
    /// Errors name the field `hub.access_token` (and the variable or file), never the token itself.
    /// A file's single trailing newline (`\n` or `\r\n`) is removed.
    ///
    /// - Parameter scenarioFile: Used in error messages (`Scenario.file`).
    public static func resolveToken(_ source: TokenSource, scenarioFile: String = "", field: String = "hub.access_token") throws(ScenarioError) -> String {
        func failure(_ message: String) -> ScenarioError {
            ScenarioError(file: scenarioFile, line: 0, field: field, message: message)
        }
        let token: String
        let origin: String
        switch source {
        case .literal(let value):
            token = value
            origin = "the access_token value"
        case .environment(let name):
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw failure("environment variable '\(name)' is not set")
            }
            token = value
            origin = "environment variable '\(name)'"
        case .file(let path):
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw failure("cannot read the token file '\(path)': \(readFailureReason(error, path: path))")
            }
            guard var text = String(data: data, encoding: .utf8) else {
                throw failure("the token file '\(path)' is not UTF-8 text")
            }
            // "\r\n" is a single Character in Swift.
            if text.hasSuffix("\n") || text.hasSuffix("\r\n") {
                text.removeLast()
            }
            token = text
            origin = "the token file '\(path)'"
        }
        guard !token.isEmpty else {
            throw failure("\(origin) is empty")
        }
        guard !token.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
            throw failure("\(origin) holds line breaks or NUL characters, which cannot go into a header")
        }
        return token
    }
}
