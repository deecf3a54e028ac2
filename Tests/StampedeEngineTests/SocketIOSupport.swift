import Foundation
import StampedeScenario

/// A `workload: socketio` scenario from its `socketio` section's YAML (indented two spaces).
func socketIOScenario(name: String = "socketio", target: String, clients: Int, duration: Double = 2, rate: Double = 20,
                      extra: String = "", section: String) throws -> Scenario {
    let yaml = """
        name: \(name)
        workload: socketio
        target: \(target)
        clients: \(clients)
        connect_rate: 1000
        duration: \(duration)
        drain: 3
        connect_timeout: 5
        message: {rate: \(rate)}
        \(extra)
        socketio:
        \(section)
        """
    return try ScenarioLoader.parse(yaml: yaml, file: "\(name).yaml")
}
