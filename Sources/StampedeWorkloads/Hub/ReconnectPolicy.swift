import StampedeScenario

/// When a dropped client tries again (signalr-protocol.md §6): a pure function of the attempt
/// count, so every simulated client follows its own copy and tests need no clock.
public struct ReconnectPolicy: Sendable, Equatable {
    public let spec: ReconnectSpec

    public init(_ spec: ReconnectSpec) { self.spec = spec }

    /// SignalR's `withAutomaticReconnect()` default.
    public static let signalRDefaultDelays: [Double] = [0, 2, 10, 30]

    /// Seconds to wait before reconnect attempt `previousAttempts + 1`, or nil to give up.
    public func nextDelay(previousAttempts: Int) -> Double? {
        let delays: [Double]
        switch spec {
        case .none: return nil
        case .signalRDefault: delays = Self.signalRDefaultDelays
        case .delays(let d): delays = d
        }
        return previousAttempts < delays.count ? delays[previousAttempts] : nil
    }
}
