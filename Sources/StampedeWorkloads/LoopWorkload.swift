import Glibc
import StampedeLoop
import StampedeMetrics
import StampedeScenario

/// Where a loop's clients are in the run, as the engine moves them on (every workload's clients
/// follow the same phases).
public enum WorkloadPhase: Sendable, Equatable { case idle, rampUp, messages, draining, closing }

/// The clients of one workload that one event loop owns, as the engine drives them. Every
/// method runs on the loop's thread (the engine calls them through `EventLoop.execute`).
public protocol LoopWorkload: AnyObject, Sendable {
    /// This loop's measurements since the last interval boundary (the engine copies and resets them).
    var metrics: MetricsShard { get set }
    /// Clients connected and ready (upgraded / handshake done).
    var openCount: Int { get }
    /// Connection attempts under way.
    var inFlightConnects: Int { get }
    /// Clients waiting to reconnect or resuming a dropped connection.
    var reconnectingCount: Int { get }
    /// Clients whose first connect has not been attempted yet.
    var notYetStarted: Int { get }
    /// Messages sent and not yet delivered, failed or lost.
    var totalOutstanding: UInt64 { get }
    /// Clients not yet ended (connecting, open or closing).
    var liveClients: Int { get }

    /// Schedules every client's connect: global client g at `start + g / connectRate`.
    func beginRampUp(startNs: UInt64)
    /// Starts the scheduled calls; none is scheduled at or after `endNs`.
    func beginMessages(startNs: UInt64, endNs: UInt64)
    /// Stops scheduling new messages; replies may still arrive.
    func beginDrain()
    /// Counts what is still outstanding as lost for `lostReason`, then closes every connection cleanly.
    func closeAll(lostReason: LossReason)
    /// Fault injection: abruptly resets the connections of `fraction` (0…1) of the connected clients.
    func dropConnections(fraction: Double)
    /// Storm `index` at `atNs`: `fraction` of the connected clients lose their connection at once
    /// (`mode`; a stall lasts `stallNs`); their recovery is tracked in `storms[index]`.
    func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64)
    /// Event `index` (a server fault or an external command) at `atNs`: clients whose connection
    /// drops from then until the next event are tracked in `storms[index]`.
    func watch(index: Int, atNs: UInt64)
    /// Churn: up to `count` connected, idle clients leave and join again as new users; returns
    /// how many left.
    @discardableResult func churn(count: Int) -> Int
    /// `clients.stages` rising: up to `count` clients that are not connected (held back since
    /// the ramp-up, or left earlier) connect; returns how many started.
    func join(count: Int) -> Int
    /// `clients.stages` falling: up to `count` connected, idle clients close cleanly and stay
    /// away (counted `ramped_down`, not as errors); returns how many are leaving.
    func leave(count: Int) -> Int
    /// Open model, a capacity search on held connections: from `atNs` on, `ratePerSecond`
    /// across all clients of the run; every running send chain is re-armed on the new rate.
    func changeRate(to ratePerSecond: Double, atNs: UInt64)
    /// What this loop saw of each storm so far.
    var storms: [StormShard] { get }
}

extension LoopWorkload {
    /// Workloads whose clients cannot leave and come back (the loader refuses `clients.stages` for them).
    public func join(count: Int) -> Int { 0 }
    public func leave(count: Int) -> Int { 0 }
    /// Workloads without an open-model schedule (REST polls at its resources' intervals).
    public func changeRate(to ratePerSecond: Double, atNs: UInt64) {}
}

extension ErrorClass {
    /// The class of a failed connect() (or its asynchronous completion, TLS handshake included):
    /// an errno or a `TLSFailure` raw value. A handshake that stalls is a connect timeout.
    static func connectFailure(_ e: Int32) -> ErrorClass {
        if let tls = TLSFailure(connectError: e) {
            switch tls {
            case .handshakeFailed, .closedDuringHandshake: return .tlsHandshakeFailed
            case .verifyFailed: return .tlsVerifyFailed
            case .protocolError: return .tlsProtocolError
            }
        }
        switch e {
        case ECONNREFUSED: return .connectRefused
        case ETIMEDOUT: return .connectTimeout
        default: return .connectError
        }
    }
}

extension ChatWorkload: LoopWorkload {
    public var metrics: MetricsShard {
        get { ws.metrics }
        set {
            ws.metrics = newValue
            // A fresh shard from the engine has no named slots yet: a flow's are made once here.
            if flow.hasNamedMetrics && ws.metrics.named.isEmpty { ws.metrics.named = flow.namedMetrics() }
        }
    }
    public var openCount: Int { ws.openCount }
    public var inFlightConnects: Int { ws.inFlightConnects }
    public var reconnectingCount: Int { waitingToReconnect }

    public func dropConnections(fraction: Double) {
        storm(index: -1, atNs: EventLoop.now(), fraction: fraction, mode: .reset, stallNs: 0)
    }
}
