import Foundation
import StampedeMetrics

/// Why `stampede compare` could not read a results folder (exit 1).
public struct CompareError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A side-by-side figure that is not a latency: throughput, errors, accounting.
public struct CompareFigure: Codable, Sendable, Equatable {
    public var name: String
    public var baseline: Double
    public var current: Double
    public var changePercent: Double?
    enum CodingKeys: String, CodingKey { case name, baseline, current; case changePercent = "change_pct" }
    init(_ name: String, _ b: Double, _ c: Double) {
        self.name = name; baseline = b; current = c
        changePercent = b != 0 ? (c - b) / abs(b) * 100 : nil
    }
}

/// Everything `stampede compare` found, as `--format json` writes it (schema `stampede.compare/1`).
public struct CompareReport: Codable, Sendable, Equatable {
    public var schema = "stampede.compare/1"
    public var baseline: String
    public var current: String
    public var tolerancePercent: Double
    public var resamples: Int
    public var seed: UInt64
    public var metrics: [MetricComparison]
    /// Metrics left out, and why (only in one run, no interval log).
    public var notes: [String]
    public var figures: [CompareFigure]
    /// The gated metrics' verdict: slower if any is, else faster, else spread changed, else no change.
    public var verdict: CompareVerdict
    /// Verdicts that fail the gate (`--fail-on`), and whether any gated metric has one.
    public var failOn: [CompareVerdict]
    public var gateTripped: Bool

    enum CodingKeys: String, CodingKey {
        case schema, baseline, current, resamples, seed, metrics, notes, figures, verdict
        case tolerancePercent = "tolerance_pct"
        case failOn = "fail_on"
        case gateTripped = "gate_tripped"
    }

    /// Reads both folders and compares them. Throws `CompareError` naming the folder or file.
    public static func make(baseline: URL, current: URL, settings: CompareSettings, failOn: [CompareVerdict]) throws -> CompareReport {
        let b = try CompareInput(folder: baseline), c = try CompareInput(folder: current)
        var metrics: [MetricComparison] = []
        var notes: [String] = []
        // The built-in metrics in their order, then the scenario's named ones (a flow's `ack`) by name.
        let named = Set(b.summary.latencyMicros.keys).union(c.summary.latencyMicros.keys).filter { LatencyMetric(key: $0) == nil }
        let keys = LatencyMetric.allCases.map(\.key) + named.sorted()
        for key in keys where b.summary.latencyMicros[key] != nil || c.summary.latencyMicros[key] != nil {
            guard b.summary.latencyMicros[key] != nil, c.summary.latencyMicros[key] != nil else {
                notes.append("\(key): only in the \(b.summary.latencyMicros[key] != nil ? "baseline" : "current") run")
                continue
            }
            // One metric at a time: what is in memory is its two runs' bins, whatever their length.
            guard let bi = try b.intervals(key, maxBins: settings.resamplingBins) else {
                notes.append("\(key): no \(key).hlog (interval log) in \(baseline.path)")
                continue
            }
            guard let ci = try c.intervals(key, maxBins: settings.resamplingBins) else {
                notes.append("\(key): no \(key).hlog (interval log) in \(current.path)")
                continue
            }
            metrics.append(MetricComparison.make(metric: key, baseline: bi, current: ci, settings: settings))
        }
        let gated = metrics.filter(\.gated).map(\.verdict)
        let verdict: CompareVerdict = [.slower, .faster, .spreadChanged].first(where: gated.contains)
            ?? (gated.isEmpty || gated.contains(.noChange) ? .noChange : .tooFewSamples)
        return CompareReport(baseline: baseline.path, current: current.path, tolerancePercent: settings.tolerance * 100,
                             resamples: settings.resamples, seed: settings.seed, metrics: metrics, notes: notes,
                             figures: figures(b.summary, c.summary), verdict: verdict, failOn: failOn,
                             gateTripped: metrics.contains { $0.gated && failOn.contains($0.verdict) })
    }

    static func figures(_ b: RunSummary, _ c: RunSummary) -> [CompareFigure] {
        func f(_ name: String, _ get: (RunSummary) -> Double) -> CompareFigure { CompareFigure(name, get(b), get(c)) }
        return [
            f("messages sent/s") { $0.messages.throughputPerSecond.sent },
            f("messages delivered/s") { $0.messages.throughputPerSecond.delivered },
            f("fanout received/s") { $0.messages.throughputPerSecond.fanoutReceived },
            f("messages sent") { Double($0.messages.sent) },
            f("messages lost") { Double($0.messages.lost) },
            f("accounting unaccounted") { Double($0.messages.unaccounted) },
            f("connections failed") { Double($0.connections.failed) },
            f("errors") { Double($0.errorsTotal) },
            f("generator saturated") { $0.generator.saturated ? 1 : 0 },
        ]
    }
}

/// One results folder as compare reads it: summary.json and the interval logs.
struct CompareInput {
    let folder: URL
    let summary: RunSummary

    init(folder: URL) throws {
        self.folder = folder
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CompareError("\(folder.path): not a results folder (no such directory)")
        }
        let file = folder.appendingPathComponent("summary.json")
        guard let data = try? Data(contentsOf: file) else {
            throw CompareError("\(file.path): cannot read it (a results folder has summary.json once the run has finished)")
        }
        do {
            summary = try JSONDecoder().decode(RunSummary.self, from: data)
        } catch {
            throw CompareError("\(file.path): not a Stampede summary.json (\(error))")
        }
    }

    /// The metric's intervals from `<metric>.hlog`, read in one pass into at most `maxBins`
    /// bins and the exact whole-run histogram; nil when the file is missing.
    func intervals(_ metric: String, maxBins: Int) throws -> IntervalBins? {
        let file = folder.appendingPathComponent("\(metric).hlog")
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        guard let stream = HistogramLogStream(url: file) else { throw CompareError("\(file.path): cannot read it") }
        var bins = IntervalBins(maxBins: maxBins)
        do {
            while let r = try stream.nextRecords() { bins.add(records: r.records, startSeconds: r.startSeconds, lengthSeconds: r.lengthSeconds) }
        } catch {
            throw CompareError("\(file.path): \(error)")
        }
        return bins
    }
}
