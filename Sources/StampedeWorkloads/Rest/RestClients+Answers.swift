import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

// What an answer means: the head's facts, redirects, latency by status class, the resource's
// processors, staleness and the ETag kept for the next poll.

extension RestClients {
    /// Keeps what the head says that the answer's handling needs (the exchange found the
    /// fields in one walk over the header lines) and counts the rate-limit signals.
    func readHead(_ c: Int, _ head: HTTPExchangeHead, _ buffer: UnsafeRawBufferPointer) {
        let q = connections[c].slot
        if let v = head.watchedField { connections[c].changedAt = JSONFields.decimal(UnsafeRawBufferPointer(rebasing: buffer[v])) }
        if let e = head.etag, e.count <= Self.maxETagBytes { connections[c].etag.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[e])) }
        if let l = head.location, isRedirect(head.status), connections[c].redirectsLeft > 0 {
            connections[c].location.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[l]))
        }
        if head.retryAfter != nil {
            metrics.count(.retryAfterSeen)
            // Seconds only: the HTTP-date form waits one interval instead.
            if let s = head.retryAfterSeconds {
                connections[c].retryAfterSeconds = s
                metrics.retryAfterMaxSeconds = max(metrics.retryAfterMaxSeconds, UInt64(s.rounded(.up)))
            }
        }
        if let r = head.rateLimitRemaining {
            metrics.count(.rateLimitHeadersSeen)
            if let v = JSONFields.decimal(UnsafeRawBufferPointer(rebasing: buffer[r])), v >= 0 {
                metrics.rateLimitRemainingMin = min(metrics.rateLimitRemainingMin, UInt64(v))
            }
        }
        // Keep the body only when something will read it.
        let r = q >= 0 ? q % resourceCount : 0
        if head.status / 100 == 2 && (stalenessField != nil || needsBody[r]) { connections[c].exchange.bodyHandling = .collect }
    }

    @inline(__always) func isRedirect(_ status: Int) -> Bool {
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308
    }

    /// The same-server path a Location names (an absolute path, or a URL of this scheme, host and
    /// port), or nil.
    func sameOriginPath(_ location: [UInt8]) -> [UInt8]? {
        if location.first == UInt8(ascii: "/") { return location }
        let (scheme, defaultPort) = plan.tls == nil ? ("http", 80) : ("https", 443)
        let prefix = Array("\(scheme)://\(plan.host):\(plan.port)".utf8)
        let prefixDefault = plan.port == defaultPort ? Array("\(scheme)://\(plan.host)".utf8) : prefix
        for p in [prefix, prefixDefault] where location.count > p.count && location.starts(with: p) {
            let rest = Array(location[p.count...])
            if rest.first == UInt8(ascii: "/") { return rest }
        }
        return nil
    }

    /// A whole answer arrived: follow a redirect, or offer it to the processors.
    func finish(_ c: Int) {
        let q = connections[c].slot
        let k = c / poolSize
        guard q >= 0 else { return }
        let status = connections[c].exchange.status
        let now = EventLoop.now()
        if isRedirect(status), connections[c].redirectsLeft > 0, let path = sameOriginPath(connections[c].location) {
            metrics.count(.redirectsFollowed)
            metrics.responseStatuses[status, default: 0] &+= 1
            connections[c].redirectsLeft -= 1
            let left = connections[c].redirectsLeft
            if connections[c].closeAfter {
                // The follow-up needs a new connection: count this poll lost rather than stall it.
                metrics.error(.httpStatus)
                loseInFlight(c, .connectionClosed)
                closeConnection(c, reset: false)
                dispatch(k)
                return
            }
            send(q, on: c, intendedNs: connections[c].intendedNs, target: path)
            connections[c].redirectsLeft = left
            return
        }
        let metric: LatencyMetric = switch status / 100 {
        case 2: .http2xx
        case 3: .http3xx
        case 4: .http4xx
        default: .http5xx
        }
        metrics.record(metric, nanoseconds: now &- connections[c].intendedNs)
        metrics.record(.httpUncorrected, nanoseconds: now &- connections[c].sentNs)
        metrics.responseStatuses[status, default: 0] &+= 1
        polls[q].inFlight = false
        totalOutstanding -= 1
        connections[c].slot = -1
        connections[c].state = .idle
        process(q, c, status: status, now: now)
        if plan.loadModel == .closed && !polls[q].stopped && !clients[k].stopped && polls[q].resumeAtNs <= now {
            restartSchedule(q, at: now + plan.thinkTimeNs)
        }
        if (connections[c].closeAfter || clients[k].stopped) && connections[c].state != .none { closeConnection(c, reset: false) }
        dispatch(k)
    }

    /// Offers the answer to the resource's processors whose statuses include it, in order.
    func process(_ q: Int, _ c: Int, status: Int, now: UInt64) {
        let k = q / resourceCount
        let r = q % resourceCount
        let processors = plan.spec.resources[r].processors
        for (i, p) in processors.enumerated() where p.statuses.contains(status) {
            if p.meaning == .changed && !fieldKeys[r][i].isEmpty {
                let ok = connections[c].exchange.collectedBody.withUnsafeBytes { JSONFields.objectHasKeys($0, fieldKeys[r][i]) }
                guard ok else { continue }
            }
            switch p.meaning {
            case .changed:
                metrics.count(.messagesDelivered)
                metrics.count(.changed)
                changed(q, c)
            case .unchanged:
                metrics.count(.messagesDelivered)
                if status == 304 { metrics.count(.notModified) }
            case .rateLimited:
                metrics.count(.messagesFailed)
                let wait = connections[c].retryAfterSeconds ?? Double(polls[q].intervalNs) / 1e9
                polls[q].resumeAtNs = now + nanoseconds(wait)
                restartSchedule(q, at: polls[q].resumeAtNs)
            case .authFailure:
                metrics.count(.messagesFailed)
                stopClient(k)
                return
            }
            if let interval = p.newIntervalSeconds, nanoseconds(interval) != polls[q].intervalNs {
                polls[q].intervalNs = nanoseconds(interval)
                restartSchedule(q, at: now + polls[q].intervalNs)
            }
            if p.stops {
                polls[q].stopped = true
                if (0..<resourceCount).allSatisfy({ polls[k * resourceCount + $0].stopped }) { stopClient(k) }
            }
            return
        }
        metrics.count(.messagesFailed)
        metrics.count(.unprocessed)
    }

    /// A new representation: remember its ETag; if it replaces one seen before, how long the
    /// change took to reach this client is its staleness.
    func changed(_ q: Int, _ c: Int) {
        var changedAt = connections[c].changedAt
        if let field = stalenessField {
            changedAt = connections[c].exchange.collectedBody.withUnsafeBytes { JSONFields.number($0, key: field) }
        }
        let etag = connections[c].etag
        let base = q * Self.maxETagBytes
        let old = Int(polls[q].etagLength)
        let same = old == etag.count && etags.withUnsafeBytes { e in etag.withUnsafeBytes { n in memcmp(e.baseAddress! + base, n.baseAddress!, old) == 0 } }
        if polls[q].seenRepresentation && !same, let changedAt {
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            let wall = Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
            if wall >= changedAt { metrics.record(.staleness, nanoseconds: nanoseconds((wall - changedAt))) }
        }
        polls[q].seenRepresentation = true
        if !etag.isEmpty {
            for (i, b) in etag.enumerated() { etags[base + i] = b }
        }
        polls[q].etagLength = UInt8(etag.count)
    }

    /// Auth failure (or every resource stopped): the client polls no more and lets go of its
    /// connections.
    func stopClient(_ k: Int) {
        guard !clients[k].stopped else { return }
        clients[k].stopped = true
        metrics.count(.clientsStopped)
        for r in 0..<resourceCount { polls[k * resourceCount + r].stopped = true }
        for c in k * poolSize..<(k + 1) * poolSize where connections[c].state != .none {
            if connections[c].state == .busy { continue }  // its answer is still counted when it comes
            closeConnection(c, reset: false)
        }
    }
}
