import Foundation

/// One line of a chart: points in data units, drawn as a polyline (gaps where a point is missing).
struct ChartSeries {
    var name: String
    var color: String
    var points: [(x: Double, y: Double)]
    var dashed = false
    /// Draw a dot at each point (for sparse series such as capacity steps).
    var dots = false
}

/// A marker at one data point: pass/fail/borderline/invalid capacity steps.
struct ChartMarker {
    enum Shape { case circle, cross, square, diamond }
    var x: Double
    var y: Double
    var shape: Shape
    var color: String
    var title: String
}

/// A vertical bar from `low` to `high` at `x`: how far a step's figure moved between its intervals.
struct ChartErrorBar {
    var x: Double
    var low: Double
    var high: Double
    var color: String
    var title: String
}

/// A reference line across the plot (an SLO limit) or up it (the knee).
struct ChartRule {
    var value: Double
    var label: String
    var color: String
}

/// A line chart as inline SVG: axes with ticks, gridlines, a legend, optional markers and
/// reference lines. The x axis is linear, base-10 logarithmic, or HdrHistogram's percentile
/// scale (x = 1/(1−p) on a log axis, ticks labelled 0 %, 90 %, 99 %, 99.9 % …), as its plotter
/// draws percentile distributions (https://hdrhistogram.github.io/HdrHistogram/plotFiles.html).
///
/// The y axis is linear from 0, or base-10 logarithmic (for figures spanning decades).
///
/// Every text passes through `HTML.escape`; non-finite values are dropped, so no input can make
/// the SVG malformed.
struct LineChart {
    enum XAxis { case linear, log10, percentile }
    enum YAxis { case linear, log10 }

    var id: String
    var title: String
    var xLabel: String
    var yLabel: String
    var xAxis = XAxis.linear
    var yAxis = YAxis.linear
    var series: [ChartSeries] = []
    var markers: [ChartMarker] = []
    var errorBars: [ChartErrorBar] = []
    var horizontalRules: [ChartRule] = []
    var verticalRules: [ChartRule] = []
    var xFormat: (Double) -> String = Fmt.tick
    var yFormat: (Double) -> String = Fmt.tick
    var width = 880.0
    var height = 300.0

    // Plot area margins.
    let left = 64.0, right = 30.0, top = 34.0, bottom = 46.0

    func transformX(_ x: Double) -> Double? {
        switch xAxis {
        case .linear: return x.isFinite ? x : nil
        case .log10, .percentile: return x.isFinite && x > 0 ? Foundation.log10(x) : nil
        }
    }

    func transformY(_ y: Double) -> Double? {
        switch yAxis {
        case .linear: return y.isFinite ? y : nil
        case .log10: return y.isFinite && y > 0 ? Foundation.log10(y) : nil
        }
    }

    /// The SVG element wrapped in a `<figure>` with the title as caption.
    func html() -> String {
        "<figure class=\"chart\" id=\"\(HTML.escape(id))\"><figcaption>\(HTML.escape(title))</figcaption>\(svg())</figure>"
    }

    func svg() -> String {
        let xs = series.flatMap { $0.points.compactMap { transformX($0.x) } } + markers.compactMap { transformX($0.x) }
            + verticalRules.compactMap { transformX($0.value) }
        let ys = series.flatMap { $0.points.compactMap { transformY($0.y) } } + markers.compactMap { transformY($0.y) }
            + horizontalRules.compactMap { transformY($0.value) } + errorBars.flatMap { [transformY($0.low), transformY($0.high)].compactMap { $0 } }
        var out = "<svg class=\"plot\" viewBox=\"0 0 \(n(width)) \(n(height))\" width=\"\(n(width))\" height=\"\(n(height))\" role=\"img\" aria-label=\"\(HTML.escape(title))\">"
        guard let x0 = xs.min(), let x1 = xs.max(), let yMax = ys.max() else {
            out += "<text x=\"\(n(width / 2))\" y=\"\(n(height / 2))\" text-anchor=\"middle\" class=\"empty\">no data</text></svg>"
            return out
        }
        let yTicks: [Double], yLo: Double, yHi: Double
        switch yAxis {
        case .linear:
            let yMin = min(0, ys.min() ?? 0)
            (yTicks, yLo, yHi) = Self.niceTicks(yMin, yMax == yMin ? yMin + 1 : yMax)
        case .log10:
            // Whole decades: 0.1, 1, 10, 100 ms …
            yLo = Foundation.floor(ys.min() ?? 0)
            yHi = Swift.max(yLo + 1, Foundation.ceil(yMax))
            yTicks = Array(stride(from: yLo, through: yHi, by: 1))
        }
        func yTickText(_ t: Double) -> String { yFormat(yAxis == .log10 ? Foundation.pow(10, t) : t) }
        // One x value only (a single step): centre it in a range ±10 % around it.
        let pad = x1 == x0 ? Swift.max(1, abs(x0) * 0.1) : 0
        var (xLo, xHi) = (x0 - (xAxis == .linear ? pad : 0), x1 + (xAxis == .linear ? pad : (x1 == x0 ? 1 : 0)))
        var xTicks: [(Double, String)]
        switch xAxis {
        case .linear:
            let t = Self.niceTicks(xLo, xHi)
            xLo = t.lo; xHi = t.hi
            xTicks = t.ticks.map { ($0, xFormat($0)) }
        case .log10:
            xLo = Foundation.floor(xLo); xHi = Foundation.ceil(xHi)
            xTicks = stride(from: xLo, through: xHi, by: 1).map { ($0, xFormat(Foundation.pow(10, $0))) }
        case .percentile:
            xLo = 0; xHi = max(1, Foundation.ceil(xHi))
            xTicks = stride(from: 0.0, through: xHi, by: 1).map { ($0, Self.percentileTick(Int($0))) }
        }
        let pw = width - left - right, ph = height - top - bottom
        func px(_ tx: Double) -> Double { left + (tx - xLo) / (xHi - xLo) * pw }
        func py(_ y: Double) -> Double { top + ph - (y - yLo) / (yHi - yLo) * ph }

        // Grid and axes.
        out += "<g class=\"grid\">"
        for y in yTicks {
            out += "<line x1=\"\(n(left))\" y1=\"\(n(py(y)))\" x2=\"\(n(left + pw))\" y2=\"\(n(py(y)))\"/>"
        }
        for (x, _) in xTicks { out += "<line x1=\"\(n(px(x)))\" y1=\"\(n(top))\" x2=\"\(n(px(x)))\" y2=\"\(n(top + ph))\"/>" }
        out += "</g><g class=\"axis\">"
        out += "<line x1=\"\(n(left))\" y1=\"\(n(top + ph))\" x2=\"\(n(left + pw))\" y2=\"\(n(top + ph))\"/>"
        out += "<line x1=\"\(n(left))\" y1=\"\(n(top))\" x2=\"\(n(left))\" y2=\"\(n(top + ph))\"/>"
        for y in yTicks {
            out += "<text x=\"\(n(left - 6))\" y=\"\(n(py(y) + 4))\" text-anchor=\"end\">\(HTML.escape(yTickText(y)))</text>"
        }
        for (x, label) in xTicks {
            out += "<text x=\"\(n(px(x)))\" y=\"\(n(top + ph + 16))\" text-anchor=\"middle\">\(HTML.escape(label))</text>"
        }
        out += "<text x=\"\(n(left + pw / 2))\" y=\"\(n(height - 8))\" text-anchor=\"middle\" class=\"label\">\(HTML.escape(xLabel))</text>"
        out += "<text x=\"14\" y=\"\(n(top + ph / 2))\" text-anchor=\"middle\" class=\"label\" transform=\"rotate(-90 14 \(n(top + ph / 2)))\">\(HTML.escape(yLabel))</text>"
        out += "</g>"

        // Reference lines, then the series, then markers on top.
        for r in horizontalRules {
            guard let ty = transformY(r.value) else { continue }
            out += "<line class=\"rule\" x1=\"\(n(left))\" y1=\"\(n(py(ty)))\" x2=\"\(n(left + pw))\" y2=\"\(n(py(ty)))\" stroke=\"\(r.color)\"/>"
            out += "<text class=\"rule-label\" x=\"\(n(left + pw - 4))\" y=\"\(n(py(ty) - 4))\" text-anchor=\"end\" fill=\"\(r.color)\">\(HTML.escape(r.label))</text>"
        }
        for r in verticalRules {
            guard let tx = transformX(r.value) else { continue }
            out += "<line class=\"rule\" x1=\"\(n(px(tx)))\" y1=\"\(n(top))\" x2=\"\(n(px(tx)))\" y2=\"\(n(top + ph))\" stroke=\"\(r.color)\"/>"
            out += "<text class=\"rule-label\" x=\"\(n(px(tx) + 4))\" y=\"\(n(top + 12))\" fill=\"\(r.color)\">\(HTML.escape(r.label))</text>"
        }
        for s in series {
            var path = "", pen = false
            for p in s.points {
                guard let tx = transformX(p.x), let ty = transformY(p.y) else { pen = false; continue }
                path += (pen ? " L" : (path.isEmpty ? "M" : " M")) + "\(n(px(tx))) \(n(py(ty)))"
                pen = true
            }
            if !path.isEmpty {
                out += "<path class=\"series\" d=\"\(path)\" stroke=\"\(s.color)\"\(s.dashed ? " stroke-dasharray=\"6 4\"" : "")><title>\(HTML.escape(s.name))</title></path>"
            }
            if s.dots {
                for p in s.points {
                    guard let tx = transformX(p.x), let ty = transformY(p.y) else { continue }
                    out += "<circle cx=\"\(n(px(tx)))\" cy=\"\(n(py(ty)))\" r=\"2.5\" fill=\"\(s.color)\"/>"
                }
            }
        }
        for b in errorBars {
            guard let tx = transformX(b.x), let lo = transformY(b.low), let hi = transformY(b.high) else { continue }
            let cx = px(tx), y0 = py(lo), y1 = py(hi)
            out += "<g class=\"spread\" stroke=\"\(b.color)\" stroke-width=\"1.5\"><title>\(HTML.escape(b.title))</title>"
            out += "<line x1=\"\(n(cx))\" y1=\"\(n(y0))\" x2=\"\(n(cx))\" y2=\"\(n(y1))\"/>"
            out += "<line x1=\"\(n(cx - 4))\" y1=\"\(n(y0))\" x2=\"\(n(cx + 4))\" y2=\"\(n(y0))\"/>"
            out += "<line x1=\"\(n(cx - 4))\" y1=\"\(n(y1))\" x2=\"\(n(cx + 4))\" y2=\"\(n(y1))\"/></g>"
        }
        for m in markers {
            guard let tx = transformX(m.x), let ty = transformY(m.y) else { continue }
            let cx = px(tx), cy = py(ty)
            out += "<g class=\"marker\" stroke=\"\(m.color)\" fill=\"\(m.color)\"><title>\(HTML.escape(m.title))</title>"
            switch m.shape {
            case .circle: out += "<circle cx=\"\(n(cx))\" cy=\"\(n(cy))\" r=\"5\"/>"
            case .square: out += "<rect x=\"\(n(cx - 5))\" y=\"\(n(cy - 5))\" width=\"10\" height=\"10\" fill=\"none\"/>"
            case .diamond: out += "<path d=\"M\(n(cx)) \(n(cy - 6)) L\(n(cx + 6)) \(n(cy)) L\(n(cx)) \(n(cy + 6)) L\(n(cx - 6)) \(n(cy))Z\"/>"
            case .cross:
                out += "<line x1=\"\(n(cx - 5))\" y1=\"\(n(cy - 5))\" x2=\"\(n(cx + 5))\" y2=\"\(n(cy + 5))\" stroke-width=\"2.5\"/>"
                out += "<line x1=\"\(n(cx - 5))\" y1=\"\(n(cy + 5))\" x2=\"\(n(cx + 5))\" y2=\"\(n(cy - 5))\" stroke-width=\"2.5\"/>"
            }
            out += "</g>"
        }

        // Legend along the top, left to right.
        out += "<g class=\"legend\">"
        var lx = left
        for s in series {
            out += "<line x1=\"\(n(lx))\" y1=\"14\" x2=\"\(n(lx + 22))\" y2=\"14\" stroke=\"\(s.color)\" stroke-width=\"2.5\"\(s.dashed ? " stroke-dasharray=\"6 4\"" : "")/>"
            out += "<text x=\"\(n(lx + 27))\" y=\"18\">\(HTML.escape(s.name))</text>"
            lx += 40 + Double(s.name.count) * 6.6
        }
        out += "</g></svg>"
        return out
    }

    /// "0%", "90%", "99%", "99.9%" … for x = 10^k on the percentile axis.
    static func percentileTick(_ k: Int) -> String {
        if k <= 0 { return "0%" }
        if k == 1 { return "90%" }
        return "99." + String(repeating: "9", count: k - 2) + "%"
    }

    /// About five round ticks (1, 2 or 5 × 10^k apart) covering lo…hi, and the covered range.
    static func niceTicks(_ lo: Double, _ hi: Double) -> (ticks: [Double], lo: Double, hi: Double) {
        guard lo.isFinite, hi.isFinite, hi > lo else { return ([0, 1], 0, 1) }
        let raw = (hi - lo) / 5
        let magnitude = Foundation.pow(10, Foundation.floor(Foundation.log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        let start = Foundation.floor(lo / step) * step, end = Foundation.ceil(hi / step) * step
        var ticks: [Double] = []
        var t = start
        while t <= end + step / 2 && ticks.count < 50 { ticks.append(abs(t) < step / 1e6 ? 0 : t); t += step }
        return (ticks, start, max(end, start + step))
    }

    /// A coordinate with at most one decimal.
    func n(_ v: Double) -> String { Fmt.trim(String(format: "%.1f", v.isFinite ? v : 0)) }
}
