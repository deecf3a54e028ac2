import Foundation

/// The page around the sections: one self-contained HTML document. The Content-Security-Policy
/// forbids every load (scripts, fonts, images other than data:, connections), so even a text
/// that slipped past escaping could fetch nothing; the CSS is inline and uses system fonts.
enum HTMLPage {
    static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

    /// The document: `title` (escaped) and the sections' HTML.
    static func document(title: String, subtitle: String, body: [String]) -> String {
        var out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
        out += "<meta http-equiv=\"Content-Security-Policy\" content=\"\(contentSecurityPolicy)\"/>"
        out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>"
        out += "<meta name=\"generator\" content=\"Stampede\"/>"
        out += "<title>\(HTML.escape(title))</title><style>\(css)</style></head><body><main>"
        out += "<header><h1>\(HTML.escape(title))</h1><p class=\"sub\">\(HTML.escape(subtitle))</p></header>"
        out += body.joined(separator: "\n")
        out += "<footer><p>Made by Stampede from the results folder&#39;s files: latencies from the exact HdrHistograms and interval logs (.hlog), rates and connections from timeseries.csv. Latencies are corrected for coordinated omission unless named _uncorrected.</p></footer>"
        out += "</main></body></html>\n"
        return out
    }

    /// A section with an id (for links and tests) and a heading.
    static func section(_ id: String, _ heading: String, _ content: String) -> String {
        "<section id=\"\(HTML.escape(id))\"><h2>\(HTML.escape(heading))</h2>\(content)</section>"
    }

    // Plain and light, readable in a CI artifact viewer. No `>` or `&` here: the page stays
    // well-formed XML.
    static let css = """
        body { margin: 0; background: #fff; color: #1d2430; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
        main { max-width: 960px; margin: 0 auto; padding: 16px 24px 40px; }
        h1 { font-size: 22px; margin: 8px 0 2px; }
        h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d6dbe3; }
        h3 { font-size: 15px; margin: 18px 0 6px; }
        .sub { color: #5b6575; margin: 0 0 8px; }
        table { border-collapse: collapse; margin: 8px 0 12px; font-size: 13px; }
        th, td { border: 1px solid #d6dbe3; padding: 3px 8px; text-align: left; vertical-align: top; }
        thead th { background: #f2f4f7; }
        table.facts th { background: #f7f8fa; font-weight: 600; white-space: nowrap; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
        tr.pass td:first-child, span.pass { color: #1a7f37; }
        tr.fail td, span.fail { color: #b3261e; }
        tr.invalid td { color: #6b7280; font-style: italic; }
        .notice { padding: 8px 12px; border-radius: 4px; border: 1px solid; }
        .notice.warn { background: #fff8e1; border-color: #e0b100; }
        .notice.fail { background: #fdecea; border-color: #d93025; }
        .notice.ok { background: #e9f6ec; border-color: #34a853; }
        code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; word-break: break-all; }
        figure.chart { margin: 10px 0 18px; }
        figure.chart figcaption { font-weight: 600; margin-bottom: 2px; }
        svg.plot { max-width: 100%; height: auto; font-size: 11px; fill: #1d2430; }
        svg.plot .grid line { stroke: #eceff3; stroke-width: 1; }
        svg.plot .axis line { stroke: #7a8494; stroke-width: 1; }
        svg.plot .label { font-size: 12px; fill: #3c4656; }
        svg.plot path.series { fill: none; stroke-width: 1.8; stroke-linejoin: round; }
        svg.plot line.rule { stroke-width: 1.5; stroke-dasharray: 4 3; }
        svg.plot .rule-label { font-size: 11px; font-weight: 600; }
        svg.plot .empty { fill: #7a8494; font-size: 14px; }
        footer { margin-top: 32px; color: #5b6575; font-size: 12px; }
        """
}

/// Colours of the series: one per percentile, and per run in comparisons.
enum Palette {
    static let p50 = "#1f77b4", p90 = "#2ca02c", p99 = "#ff7f0e", max = "#d62728"
    static let baseline = "#1f77b4", current = "#e8590c"
    static let pass = "#1a7f37", fail = "#b3261e", invalid = "#6b7280", limit = "#b3261e", knee = "#7b3fb8", sustainable = "#1a7f37"
    static let cycle = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
}
