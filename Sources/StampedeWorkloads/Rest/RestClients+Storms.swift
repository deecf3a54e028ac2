import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

// Storms: dropping or stalling the connections of a fraction of the clients at once.

extension RestClients {
    public func dropConnections(fraction: Double) {
        storm(index: -1, atNs: EventLoop.now(), fraction: fraction, mode: .reset, stallNs: 0)
    }

    public func watch(index: Int, atNs: UInt64) { stormBook.watch(index: index, atNs: atNs) }

    /// A storm drops every connection of `fraction` of the clients that have one; they are
    /// back when their next poll has a connection again.
    public func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        if index >= 0 { watch(index: index, atNs: atNs) }
        for k in clients.indices where clients[k].openConnections > 0 && !clients[k].stopped {
            guard random.unit() < fraction else { continue }
            if index >= 0 { stormBook.hit(&clients[k].storm, storm: index) }
            for c in k * poolSize..<(k + 1) * poolSize where connections[c].state == .idle || connections[c].state == .busy {
                switch mode {
                case .reset, .close:
                    if connections[c].state == .busy { loseInFlight(c, .connectionClosed) }
                    closeConnection(c, reset: mode == .reset)
                case .stall:
                    loop.pauseReading(connections[c].id, true)
                    loop.schedule(at: atNs + stallNs, token: token(.stallEnd, c, epoch: connections[c].epoch))
                }
            }
        }
    }
}
