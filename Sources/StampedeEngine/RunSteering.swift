import StampedeFleet
import StampedeScenario
import Synchronization

/// The hand on a run whose load changes as it goes: `stampede capacity` on held connections
/// moves the connected clients and the rate between its steps, and ends the message phase when
/// the search has its answer. Commands are given from the interval observer (the engine's own
/// thread, once a second) or any other thread, and applied at the engine's next tick (100 ms).
public final class RunSteering: Sendable {
    /// What the engine is asked to do.
    public enum Command: Sendable, Equatable {
        /// Join or leave clients (cleanly; held back, not reconnecting) until this many are connected.
        case connectedClients(Int)
        /// Open model: this many messages per second across all clients, from the next tick on.
        case rate(Double)
        /// End the message phase now: drain, close, write the results.
        case endMessages
    }

    /// The load the run starts from, which worker processes apply to the scenario they parse.
    public let load: SteeredLoad
    private let inbox = Mutex<[Command]>([])

    public init(load: SteeredLoad) { self.load = load }

    public func send(_ command: Command) { inbox.withLock { $0.append(command) } }

    /// The commands given since the last call, in order.
    func take() -> [Command] { inbox.withLock { commands in defer { commands = [] }; return commands } }
}

extension Scenario {
    /// The scenario holding `load`: its clients, the ones connected at the start (the rest held
    /// back, as `clients.stages` holds them), its rate, no rate stages, a message phase of the
    /// load's length, and no thresholds or events (the capacity search judges; its load is steady).
    public func steered(by load: SteeredLoad) -> Scenario {
        var s = self
        s.clients = load.clients
        s.clientProfile = load.connectedAtStart < load.clients ? ClientProfile(start: load.connectedAtStart, stages: []) : nil
        s.message.ratePerSecond = load.ratePerSecond
        s.message.stages = []
        s.durationSeconds = load.durationSeconds
        s.thresholds = []
        s.events = []
        return s
    }
}
