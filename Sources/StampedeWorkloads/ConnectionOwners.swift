import StampedeLoop

/// Which client, and which of its connections (`Role`), each of a loop's connection slots was
/// last opened for: how a workload whose clients hold several connections each finds the client
/// a loop event is about. Kept per slot (`ConnectionID.index`) in two flat arrays, so a look-up
/// on the hot path is two array reads with no hashing and no allocation.
///
/// A slot's entry outlives its connection (the loop reuses slots), so what `binding` returns is
/// only where to look: the caller checks that the client still holds that id in that role.
struct ConnectionOwners<Role: RawRepresentable> where Role.RawValue == UInt8 {
    /// Per slot: the client (-1: never bound) and the raw value of its role.
    private var clients: [Int32] = []
    private var roles: [UInt8] = []

    /// Records that connection `id` was opened as client `k`'s `role`.
    mutating func bind(_ id: ConnectionID, client k: Int, role: Role) {
        let i = Int(id.index)
        if i >= clients.count {
            // Grown in steps, not per connection: slots are handed out in order as clients start.
            let grow = i + 1 - clients.count + 64
            clients.append(contentsOf: repeatElement(-1, count: grow))
            roles.append(contentsOf: repeatElement(0, count: grow))
        }
        clients[i] = Int32(k)
        roles[i] = role.rawValue
    }

    /// The client and role `id`'s slot was last bound to (nil: never bound), which may be a
    /// connection that has since closed.
    @inline(__always)
    func binding(_ id: ConnectionID) -> (client: Int, role: Role)? {
        let i = Int(id.index)
        guard i < clients.count, clients[i] >= 0, let role = Role(rawValue: roles[i]) else { return nil }
        return (Int(clients[i]), role)
    }
}
