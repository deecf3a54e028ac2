import Foundation
import Testing

/// The house rules the build cannot check by itself: every module imports exactly what
/// Package.swift declares for it, dependencies point down the layers, files stay small enough
/// to read, and comments cite only files that are in the repository.
@Suite struct LayeringTests {
    static let sources = repositoryRoot.appendingPathComponent("Sources")

    /// Layers from the bottom: a module may depend only on modules of lower layers.
    static let layers: [[String]] = [
        ["CStampedeLinux", "COpenSSL", "CStampedeTLS", "CZlib"],
        ["StampedeLoop", "StampedeWire", "StampedeMetrics"],
        ["StampedeSession", "StampedeScenario"],
        ["StampedeWorkloads", "StampedeServers", "StampedeReport", "StampedeLive"],
        ["StampedeFleet"],
        ["StampedeEngine"],
        ["stampede"],
    ]

    /// Package.swift's targets and the in-package or product dependencies each declares.
    static func declaredDependencies() throws -> [String: Set<String>] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        var result: [String: Set<String>] = [:]
        let target = try Regex(#"\.(?:target|executableTarget)\(name: "([A-Za-z]+)"(?:, dependencies: \[([^\]]*)\])?"#)
        for match in text.matches(of: target) {
            guard let name = match.output[1].substring.map(String.init) else { continue }
            var deps = Set<String>()
            if let list = match.output[2].substring {
                for d in list.matches(of: try Regex(#"(?:\.product\(name: )?"([A-Za-z]+)""#)) {
                    if let n = d.output[1].substring { deps.insert(String(n)) }
                }
            }
            result[name] = deps.subtracting(["hdrhistogram-swift", "swift-argument-parser"])
        }
        return result
    }

    /// The modules a target's files import, besides the system's.
    static func imports(of target: String) throws -> Set<String> {
        let system: Set<String> = ["Foundation", "Glibc", "Musl", "Darwin", "Synchronization", "Dispatch", "Testing"]
        var found = Set<String>()
        for file in try swiftFiles(under: sources.appendingPathComponent(target)) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.hasPrefix("@testable import ") {
                let name = String(line.split(separator: " ").last!)
                if !system.contains(name) { found.insert(name) }
            }
        }
        return found
    }

    static func swiftFiles(under folder: URL) throws -> [URL] {
        guard let e = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return [] }
        return e.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }

    @Test func everyModuleImportsExactlyWhatPackageSwiftDeclares() throws {
        let declared = try Self.declaredDependencies()
        let targets = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).filter { !Self.layers[0].contains($0) }  // C targets: no Swift imports
        #expect(!targets.isEmpty)
        for target in targets {
            let deps = try #require(declared[target], "\(target) is not a target in Package.swift")
            let used = try Self.imports(of: target)
            #expect(used.subtracting(deps).isEmpty, "\(target) imports \(used.subtracting(deps).sorted()) without declaring them")
            #expect(deps.subtracting(used).isEmpty, "\(target) declares \(deps.subtracting(used).sorted()) but never imports them")
        }
    }

    @Test func dependenciesPointDownTheLayers() throws {
        let layerOf = Dictionary(uniqueKeysWithValues: Self.layers.enumerated().flatMap { i, names in names.map { ($0, i) } })
        for (target, deps) in try Self.declaredDependencies() {
            guard let mine = layerOf[target] else { continue }
            for d in deps {
                guard let theirs = layerOf[d] else { continue }  // a package product
                #expect(theirs < mine, "\(target) (layer \(mine)) depends on \(d) (layer \(theirs))")
            }
        }
        // The sessions see bytes only: no sockets, no clock, no metrics.
        #expect(try Self.declaredDependencies()["StampedeSession"] == ["StampedeWire"])
    }

    @Test func noSourceFileIsLongerThanSixHundredLines() throws {
        for file in try Self.swiftFiles(under: Self.sources) {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines <= 600, "\(file.path.replacingOccurrences(of: repositoryRoot.path + "/", with: "")) has \(lines) lines")
        }
    }

    @Test func commentsCiteOnlyFilesInTheRepository() throws {
        let cited = try Regex(#"\b(?:docs|Sources|Tests|Benchmarks|Fuzz|scripts)/[A-Za-z0-9_./+-]*[A-Za-z0-9_]"#)
        for file in try Self.swiftFiles(under: Self.sources) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("//") {
                let comment = line[line.range(of: "//")!.lowerBound...]
                for m in comment.matches(of: cited) {
                    let path = String(comment[m.range])
                    // A glob names files by pattern (`HubServer*.swift`); its folder must exist.
                    let checked = path.contains("*") ? (path as NSString).deletingLastPathComponent : path
                    #expect(FileManager.default.fileExists(atPath: repositoryRoot.appendingPathComponent(checked).path),
                            "\(file.lastPathComponent) cites \(path), which is not in the repository")
                }
            }
        }
    }
}
