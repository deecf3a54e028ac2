// StampedeSession: every connection's protocol logic, once, as value types.
//
// A session is one connection's protocol state machine (a WebSocket client or server, an HTTP
// client exchange, a SignalR hub protocol session). It is pure: it sees bytes and the time it
// is told, and answers with actions that the runtime carries out on the event loop (write these
// bytes, deliver this message, arm a timeout, shut down the write side, close TCP, the
// connection ended in this class). It owns no socket, reads no clock and schedules nothing
// itself, so tests drive it with byte fixtures and a fake clock, and the fuzz targets feed it
// arbitrary input, whole and in pieces.
//
// The conventions every session follows:
// - Input is pulled one action at a time, like `WebSocketReceiver.next`: the caller hands the
//   buffered input and `now`, carries out the action, drops `consumed` bytes and asks again
//   until the session says it needs more. Nothing on that path allocates (no arrays of
//   actions), so a message costs no malloc.
// - Commands (connected, close, a timer fired, send) return what to do as a small value
//   (a single action or a fixed-size step), never an Array.
// - Ranges in actions index the buffer just given; payloads are valid until the caller drops
//   the consumed bytes.
// - Every way a connection can end is one `ended` answer with its class, given once.
// - Times are monotonic nanoseconds (`now`); a timeout is an absolute deadline the session
//   asks for, and the caller reports back with the session's own timer call when it passes.
//   A session recognises a stale timeout itself (it compares the deadline it is waiting for).
