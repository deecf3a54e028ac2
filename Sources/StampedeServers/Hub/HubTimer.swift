
/// The hub server's timers (`TimerToken` kinds): a connection's next check, or a stream's
/// next item. The token's slot is the table index and its epoch that slot's generation, so a
/// timer for a disposed connection or a finished stream is recognised and dropped.
enum HubTimer: UInt8 {
    case connection = 1
    case stream = 2
}
