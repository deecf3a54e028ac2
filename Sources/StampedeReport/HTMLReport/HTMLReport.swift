import Foundation

/// The self-contained HTML report of a results folder (`report.html`): inline SVG charts and CSS,
/// no script, nothing loaded from anywhere (a Content-Security-Policy forbids it). What it shows
/// is documented for users in docs/results.md ("report.html").
public enum HTMLReport {
    public static let fileName = "report.html"

    /// The self-contained report of one results folder (a run's, a merge's or a capacity
    /// run's: it looks for summary.json or capacity.json) — HTML text.
    public static func render(folder: URL) throws -> String {
        try checkFolder(folder)
        let files = ReportFiles.folder(folder)
        if let data = files.read(CapacityResult.fileName) {
            let result: CapacityResult
            do { result = try CapacityResult.read(data) } catch {
                throw HTMLReportError("\(files.path(CapacityResult.fileName)): not a Stampede capacity.json (\(error))")
            }
            return CapacityHTML.page(result, location: folder.path)
        }
        return try renderRun(files)
    }

    /// Two runs side by side with `compare`'s verdicts.
    public static func render(baseline: URL, current: URL) throws -> String {
        try checkFolder(baseline)
        try checkFolder(current)
        let b = try RunData(.folder(baseline)), c = try RunData(.folder(current))
        let report: CompareReport
        do { report = try CompareReport.make(baseline: baseline, current: current, settings: CompareSettings(), failOn: []) } catch {
            throw HTMLReportError("\(error)")
        }
        return CompareHTML.page(report, baseline: b, current: c)
    }

    /// The report of a run from its folder, with `files` (name → bytes) in place of the
    /// folder's own: the summary.json a writer is about to write, so report.html can be
    /// written before it.
    public static func render(files: [String: Data], folder: URL) throws -> String {
        try renderRun(.memory(files, folder: folder))
    }

    /// Renders and writes `report.html` into a folder, with `files` in place of its own;
    /// returns nil when it was written, or the reason when not. A report that cannot be made
    /// must never cost a run its results, so this does not throw.
    public static func write(files: [String: Data], folder: URL) -> String? {
        do {
            let html = try render(files: files, folder: folder)
            try AtomicFile.write(Data(html.utf8), to: folder.appendingPathComponent(fileName))
            return nil
        } catch {
            return "\(fileName) not written: \(error)"
        }
    }

    /// Renders `folder`'s report (`render(folder:)`) and writes it there as report.html; nil when
    /// written, else the reason. Does not throw: a report must never cost a run its results.
    public static func write(into folder: URL) -> String? {
        do {
            let html = try render(folder: folder)
            try AtomicFile.write(Data(html.utf8), to: folder.appendingPathComponent(fileName))
            return nil
        } catch {
            return "\(fileName) not written: \(error)"
        }
    }

    static func renderRun(_ files: ReportFiles) throws(HTMLReportError) -> String {
        let run = try RunData(files)
        let s = run.summary
        var body = [RunHeadline.html(run), RunHeadline.populations(s), RunCharts.latencyOverTime(run), RunCharts.spectrum(run), RunCharts.timeseries(run)]
        body.append(HTMLPage.section("errors", "Errors and generator", RunHeadline.errorsAndGenerator(s)))
        body.append(RunCharts.storms(run))
        if !run.notes.isEmpty {
            body.append(HTMLPage.section("notes", "Files that could not be read", "<ul>" + run.notes.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>"))
        }
        let verdict = s.fatalError != nil ? "failed" : s.partial ? "partial" : (s.thresholds?.contains { $0.verdict == .fail } == true ? "thresholds failed"
            : s.thresholds?.contains { $0.verdict == .unjudged } == true ? "thresholds unjudged" : "complete")
        return HTMLPage.document(title: "Stampede run: \(s.scenario.name)",
                                 subtitle: "\(s.scenario.workload) against \(s.scenario.target), \(s.environment.startedAt), \(verdict)",
                                 body: body.filter { !$0.isEmpty })
    }

    static func checkFolder(_ folder: URL) throws(HTMLReportError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HTMLReportError("\(folder.path): not a results folder (no such folder)")
        }
    }
}
