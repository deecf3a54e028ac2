import ArgumentParser
import Foundation
import StampedeScenario

struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the JSON Schema of scenario files (for editors; docs/stampede.schema.json is the same text).",
        discussion: """
            Editors that speak the YAML language server read it from a first line such as
              # yaml-language-server: $schema=../docs/stampede.schema.json
            Example:
              stampede schema > stampede.schema.json
            """)

    func run() throws {
        // Written as bytes, not print(): the output must be exactly the file's text.
        FileHandle.standardOutput.write(Data(ScenarioSchema.text.utf8))
    }
}
