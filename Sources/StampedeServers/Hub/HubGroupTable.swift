/// A connection's place in a group: the group's index and the connection's position in that
/// group's member list, so leaving is O(1).
struct HubMembership {
    var group: Int
    var position: Int
}

struct HubGroup {
    var name: [UInt8]
    var hash: UInt64
    var members: [HubConnection] = []
    var nextSameHash = -1
}

/// The hub's groups: a slot table of groups found by the FNV-1a hash of their name (groups
/// sharing a hash are chained through `nextSameHash`). A group exists while it has members.
/// Each connection keeps its memberships (`HubConnection.groups`).
struct HubGroupTable {
    var groups: [HubGroup?] = []
    var freeGroups: [Int] = []
    var groupsByHash: [UInt64: Int] = [:]

    /// The members of group `g` (an index `find` returned).
    func members(of g: Int) -> [HubConnection] { groups[g]!.members }

    func find(_ name: UnsafeRawBufferPointer) -> Int? {
        guard var g = groupsByHash[HubBytes.hash(name)] else { return nil }
        while g >= 0 {
            if HubBytes.equals(name, groups[g]!.name) { return g }
            g = groups[g]!.nextSameHash
        }
        return nil
    }

    mutating func join(_ c: HubConnection, _ name: UnsafeRawBufferPointer) {
        let g: Int
        if let existing = find(name) {
            g = existing
            if c.groups.contains(where: { $0.group == g }) { return }
        } else {
            let h = HubBytes.hash(name)
            var group = HubGroup(name: Array(name), hash: h)
            group.nextSameHash = groupsByHash[h] ?? -1
            if let free = freeGroups.popLast() {
                g = free
                groups[g] = group
            } else {
                g = groups.count
                groups.append(group)
            }
            groupsByHash[h] = g
        }
        groups[g]!.members.append(c)
        c.groups.append(HubMembership(group: g, position: groups[g]!.members.count - 1))
    }

    mutating func leave(_ c: HubConnection, _ g: Int) {
        guard let k = c.groups.firstIndex(where: { $0.group == g }) else { return }
        let position = c.groups[k].position
        c.groups[k] = c.groups[c.groups.count - 1]
        c.groups.removeLast()
        let last = groups[g]!.members.removeLast()
        if position < groups[g]!.members.count {
            groups[g]!.members[position] = last
            if let j = last.groups.firstIndex(where: { $0.group == g }) { last.groups[j].position = position }
        }
        if groups[g]!.members.isEmpty { delete(g) }
    }

    private mutating func delete(_ g: Int) {
        let h = groups[g]!.hash
        let next = groups[g]!.nextSameHash
        if groupsByHash[h] == g {
            if next >= 0 { groupsByHash[h] = next } else { groupsByHash[h] = nil }
        } else if var p = groupsByHash[h] {
            while p >= 0 {
                if groups[p]!.nextSameHash == g {
                    groups[p]!.nextSameHash = next
                    break
                }
                p = groups[p]!.nextSameHash
            }
        }
        groups[g] = nil
        freeGroups.append(g)
    }
}
