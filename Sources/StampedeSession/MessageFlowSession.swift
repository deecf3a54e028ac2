import StampedeWire

/// One connection's progress through a declared flow (`MessageFlow`): its connect steps after
/// the upgrade, then which rule takes each received frame. A value type over frames only, like
/// the WebSocket sessions: the runtime carries out what it answers (sends, timers, captures,
/// measurements), so the same frames always give the same answers, whole or however they arrived.
public struct MessageFlowSession: Sendable, Equatable {
    /// The next connect step (the steps' count once they are all done).
    public private(set) var step = 0
    /// Every connect step is done: the connection sends and measures.
    public private(set) var isReady = false

    public init() {}

    /// What the connect steps ask for next.
    public enum StepAction: Sendable, Equatable {
        /// Send connect step `index`'s template, then ask again.
        case send(index: Int)
        /// Wait for a frame for step `index`, at most its timeout.
        case wait(index: Int, timeoutSeconds: Double)
        /// All steps done: the client is connected.
        case ready
    }

    /// What a received frame is.
    public enum FrameOutcome: Sendable, Equatable {
        /// It completed expect step `index`: take the step's captures from it, then ask `nextStep`.
        case stepDone(index: Int)
        /// A strict step (`index`) got another frame: the connect failed.
        case stepFailed(index: Int)
        case reply(Int)
        case respond(Int)
        case ignore(Int)
        /// No rule takes it (while a step waits, the step keeps waiting).
        case unrecognised
    }

    /// A new connection (a reconnect too) starts from the first step.
    public mutating func restart() {
        step = 0
        isReady = false
    }

    /// The next connect action; a `.send` has already moved on to the following step.
    public mutating func nextStep(_ flow: MessageFlow) -> StepAction {
        guard step < flow.connect.count else {
            isReady = true
            return .ready
        }
        switch flow.connect[step] {
        case .send:
            step += 1
            return .send(index: step - 1)
        case .expect(let e):
            return .wait(index: step, timeoutSeconds: e.timeoutSeconds)
        }
    }

    /// A received frame: while an expect step waits, its match comes first, then respond and
    /// ignore rules (replies are not measured before the connection is ready); after, the rules.
    public mutating func received(_ payload: UnsafeRawBufferPointer, isText: Bool, _ flow: MessageFlow) -> FrameOutcome {
        if !isReady, step < flow.connect.count, case .expect(let expect) = flow.connect[step] {
            if expect.match.holds(payload, isText: isText) {
                step += 1
                return .stepDone(index: step - 1)
            }
            switch flow.classify(payload, isText: isText) {
            case .respond(let i): return .respond(i)
            case .ignore(let i): return .ignore(i)
            case .reply, .unrecognised: return expect.strict ? .stepFailed(index: step) : .unrecognised
            }
        }
        switch flow.classify(payload, isText: isText) {
        case .reply(let i): return .reply(i)
        case .respond(let i): return .respond(i)
        case .ignore(let i): return .ignore(i)
        case .unrecognised: return .unrecognised
        }
    }
}
