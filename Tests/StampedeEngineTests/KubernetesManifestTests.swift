import Foundation
import StampedeScenario
import Testing

/// deploy/kubernetes/ checked offline, with no cluster: Tests/peers/k8s_manifests.py reads every
/// manifest into the official Python client's models (no unknown field, no wrong type) and checks
/// what a run needs of them together (the Indexed Job's count equals the coordinator's
/// --worker-count, the Service names the workers' port, …). Where a `kubectl` is installed, the
/// stream `kubectl kustomize` renders is checked the same way. `kubectl apply --dry-run=client`
/// is not run: it asks an API server for its resource list even when dry, and there is none here.
@Suite struct KubernetesManifestTests {
    static let folder = repositoryRoot.appendingPathComponent("deploy/kubernetes")
    static let checker = repositoryRoot.appendingPathComponent("Tests/peers/k8s_manifests.py").path

    struct Summary: Decodable {
        var workers: Int
        var port: Int
        var service: String
        var namespace: String
        var scenario: String
        var scenario_path: String
        var objects: [String]
    }

    @Test func manifestsAreKubernetesObjectsThatAgreeOnWorkerCountPortAndService() throws {
        let python = try peerPython("kubernetes")
        var arguments = [Self.checker, Self.folder.path]
        if let kubectl = Self.kubectl() {
            let rendered = try runProcess(kubectl, ["kustomize", Self.folder.path], timeout: 60)
            #expect(rendered.status == 0, "kubectl kustomize: \(rendered.stderr)")
            let file = temporaryFolder("kustomize").appendingPathComponent("rendered.yaml")
            try Data(rendered.stdout.utf8).write(to: file)
            arguments += ["--rendered", file.path]
        } else {
            print("KubernetesManifestTests: no kubectl on PATH; the kustomize rendering is not checked")
        }
        let r = try runProcess(python, arguments, timeout: 60)
        try #require(r.status == 0, "k8s_manifests.py: \(r.stderr)")
        let summary = try JSONDecoder().decode(Summary.self, from: Data(r.stdout.utf8))
        #expect(summary.workers == 4)
        #expect(summary.port == 7070)
        #expect(summary.objects.count == 6)

        // The ConfigMap's scenario is one the real loader accepts, aimed at the placeholder a
        // user must replace (the .invalid domain never resolves, so nothing is ever sent to it).
        let scenario = try ScenarioLoader.parse(yaml: summary.scenario, file: summary.scenario_path)
        guard case .webSocket(let url) = scenario.target else {
            Issue.record("the scenario's target is \(scenario.target), expected a ws:// placeholder")
            return
        }
        #expect(url.host.hasSuffix(".invalid") && url.host.contains("CHANGE-ME"), "\(url.host)")
        #expect(!scenario.thresholds.isEmpty, "the example shows thresholds judged on the merged result")
        #expect(scenario.clients % summary.workers == 0, "the example's clients split evenly over the workers")
    }

    /// The checker is only worth its pass if it fails: broken copies of the manifests, one
    /// mistake each, are each refused with the problem named.
    @Test func manifestCheckRefusesUnknownFieldsWrongTypesAndCountsThatDisagree() throws {
        let python = try peerPython("kubernetes")
        let mistakes: [(file: String, from: String, to: String, expected: String)] = [
            ("job-workers.yaml", "containerPort: 7070", "containerPort: 7070\n              hostPorts: 1", "unknown field 'hostPorts'"),
            ("job-workers.yaml", "value: \"4\"", "value: 4", "env[0].value: expected str, found int"),
            ("job-workers.yaml", "parallelism: 4 ", "parallelism: 3 ", "completions (4) and parallelism (3)"),
            ("job-coordinator.yaml", "- \"4\"", "- \"5\"", "--worker-count '5' differs from the workers' completions 4"),
            ("service-workers.yaml", "publishNotReadyAddresses: true", "publishNotReadyAddresses: false", "publishNotReadyAddresses must be true"),
            ("job-coordinator.yaml", "dns:stampede-workers.stampede.", "dns:stampede-worker.stampede.", "--workers 'dns:stampede-worker."),
            ("job-workers.yaml", "subdomain: stampede-workers", "subdomain: workers", "subdomain 'workers' is not the Service's name"),
        ]
        for mistake in mistakes {
            let copy = temporaryFolder("k8s-broken")
            for name in try FileManager.default.contentsOfDirectory(atPath: Self.folder.path) where name.hasSuffix(".yaml") {
                try FileManager.default.copyItem(at: Self.folder.appendingPathComponent(name), to: copy.appendingPathComponent(name))
            }
            let file = copy.appendingPathComponent(mistake.file)
            let text = try String(contentsOf: file, encoding: .utf8)
            try #require(text.contains(mistake.from), "\(mistake.file) no longer contains \(mistake.from)")
            try text.replacingOccurrences(of: mistake.from, with: mistake.to).write(to: file, atomically: true, encoding: .utf8)
            let r = try runProcess(python, [Self.checker, copy.path], timeout: 60)
            #expect(r.status == 1, "\(mistake.expected): exit \(r.status)")
            #expect(r.stderr.contains(mistake.expected), "expected '\(mistake.expected)' in: \(r.stderr)")
        }
    }

    /// The image recipe builds the binary the manifests run: a static-stdlib release build in a
    /// Swift image, copied onto debian-slim with the two C libraries it links (OpenSSL, zlib), to
    /// a folder on PATH (the manifests' command is `stampede …`).
    @Test func containerfileBuildsAStaticBinaryOntoDebianSlimWithOpenSSLAndZlib() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("deploy/Containerfile"), encoding: .utf8)
        let froms = text.split(separator: "\n").filter { $0.hasPrefix("FROM ") }
        #expect(froms.count == 2, "multi-stage: \(froms)")
        #expect(froms.first?.contains("swift:") == true && froms.last?.contains("debian:") == true && froms.last?.contains("-slim") == true)
        #expect(text.contains("swift build -c release --static-swift-stdlib"))
        for package in ["libssl3", "zlib1g", "libssl-dev", "zlib1g-dev"] { #expect(text.contains(package), "\(package)") }
        #expect(text.contains("/usr/local/bin/stampede"))
        #expect(text.contains("USER 65532"), "the manifests run as 65532 (runAsNonRoot)")
    }

    /// `kubectl` on PATH, if any.
    static func kubectl() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/kubectl" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
