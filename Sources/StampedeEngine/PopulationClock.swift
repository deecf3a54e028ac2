import Foundation
import StampedeLoop
import StampedeScenario
import StampedeServers
import Synchronization

/// The one message phase of a run with several populations, each run by an engine of its own:
/// the populations that start at 0 connect in the run's ramp-up, and the message phase begins
/// when the last of them is connected (as one population's does); a later population joins
/// the phase once its own clients are connected. Every population's phase ends at the same
/// instant, and no population stops draining while another still has messages out (a listener
/// that left first would miss the last broadcasts it is due).
public final class PopulationClock: Sendable {
    struct State {
        /// First-wave populations not yet connected (or given up).
        var waiting: Int
        var startNs: UInt64? = nil
        var endNs: UInt64? = nil
        /// Populations still sending or draining.
        var active: Int
    }
    let state: Mutex<State>
    let durationNs: UInt64

    /// - Parameters:
    ///   - firstWave: Populations that start at 0.
    ///   - populations: All the run's populations.
    ///   - durationNs: The message phase's length.
    public init(firstWave: Int, populations: Int, durationNs: UInt64) {
        state = Mutex(State(waiting: firstWave, active: populations))
        self.durationNs = durationNs
        // Every population starts later: the phase begins now, with nobody to wait for.
        if firstWave == 0 { state.withLock { begin(&$0) } }
    }

    /// When the message phase began (nil before).
    public var messageStartNs: UInt64? { state.withLock { $0.startNs } }
    /// When the message phase ends (nil before it began).
    public var messageEndNs: UInt64? { state.withLock { $0.endNs } }

    /// A first-wave population is connected: waits for the others, then returns the phase
    /// (start, end); nil if interrupted first.
    func arrive(interrupt: InterruptFlag) -> (startNs: UInt64, endNs: UInt64)? {
        state.withLock { s in
            s.waiting -= 1
            if s.waiting <= 0 && s.startNs == nil { begin(&s) }
        }
        while !interrupt.isRaised {
            if let phase = state.withLock({ s in s.startNs.flatMap { a in s.endNs.map { (a, $0) } } }) { return phase }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return nil
    }

    /// A later population is connected: its phase runs from now to the run's end, or nil if
    /// the run's phase is over (or never began).
    func join() -> (startNs: UInt64, endNs: UInt64)? {
        state.withLock { s in
            guard let end = s.endNs else { return nil }
            let start = EventLoop.now() + 50_000_000
            return start < end ? (start, end) : nil
        }
    }

    /// A first-wave population will not send (nothing connected, or it stopped): the others do not wait for it.
    func giveUp() {
        state.withLock { s in
            s.waiting -= 1
            if s.waiting <= 0 && s.startNs == nil { begin(&s) }
        }
    }

    /// This population has nothing outstanding (or has stopped).
    func drained() { state.withLock { $0.active -= 1 } }

    /// Whether every population has drained.
    var everyoneDrained: Bool { state.withLock { $0.active <= 0 } }

    private func begin(_ s: inout State) {
        let start = EventLoop.now() + 50_000_000
        s.startNs = start
        s.endNs = start + durationNs
    }
}

/// What an engine running one population of several is given (`RunOptions.population`).
public struct PopulationRole: @unchecked Sendable {
    /// The population's name (its interval reports carry it).
    public var name: String
    public var clock: PopulationClock
    /// The population starts after the run's ramp-up (`start:` > 0): it joins the message phase.
    public var startsLater: Bool
    /// The embedded target it shares with the other populations of its workload, or nil (its own target).
    var sharedTarget: SharedTarget?
}

/// An embedded target started once for the populations that share it.
struct SharedTarget {
    /// Where it listens.
    var address: SocketAddress
    /// In this process: the server and its loop (for the scenario's server faults).
    var server: (any FaultTarget)?
    var serverLoop: EventLoop?
    /// In a child `stampede serve`: its admin endpoint.
    var childAdmin: AdminEndpoint?
    /// The target's throw-away certificate, when it serves TLS.
    var certificatePEM: String?
}
