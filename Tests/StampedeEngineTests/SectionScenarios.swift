import Foundation
import StampedeScenario

/// A scenario of `workload` whose section (named as the workload) is `section`, its lines
/// indented by two: the short runs the flow and Socket.IO tests make.
func sectionScenario(_ workload: Workload, name: String, target: String, clients: Int, duration: Double = 2, rate: Double = 20,
                     extra: String = "", section: String) throws -> Scenario {
    let yaml = """
        name: \(name)
        workload: \(workload.rawValue)
        target: \(target)
        clients: \(clients)
        connect_rate: 1000
        duration: \(duration)
        drain: 3
        connect_timeout: 5
        message: {rate: \(rate)}
        \(extra)
        \(workload.rawValue):
        \(section)
        """
    return try ScenarioLoader.parse(yaml: yaml, file: "\(name).yaml")
}

/// A `workload: socketio` scenario from its `socketio` section's YAML (indented two spaces).
func socketIOScenario(name: String = "socketio", target: String, clients: Int, duration: Double = 2, rate: Double = 20,
                      extra: String = "", section: String) throws -> Scenario {
    try sectionScenario(.socketio, name: name, target: target, clients: clients, duration: duration, rate: rate, extra: extra, section: section)
}
