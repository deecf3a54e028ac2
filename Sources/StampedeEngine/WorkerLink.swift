import CStampedeLinux
import Foundation
import StampedeFleet
import StampedeLoop

/// One end of a coordinator–worker stream: a socket, or a pipe pair to a local worker process.
/// Blocking in spirit, with a deadline on every wait (poll), so a dead or frozen peer is noticed
/// instead of hanging the run; used by one thread at a time.
final class WorkerLink: @unchecked Sendable {
    let readFD: Int32
    let writeFD: Int32
    var frames = FleetFrameReader()
    /// Where reads land (kept: a receive happens at every tick).
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    var closed = false
    /// Why the stream ended (EOF, an error, a deadline), once it has.
    private(set) var failure: String?

    init(readFD: Int32, writeFD: Int32) {
        self.readFD = readFD; self.writeFD = writeFD
        _ = fcntl(readFD, F_SETFL, fcntl(readFD, F_GETFL) | O_NONBLOCK)
        if writeFD != readFD { _ = fcntl(writeFD, F_SETFL, fcntl(writeFD, F_GETFL) | O_NONBLOCK) }
    }

    deinit { close() }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(readFD)
        if writeFD != readFD { Glibc.close(writeFD) }
    }

    func fail(_ why: String) { if failure == nil { failure = why } }

    /// Writes the whole frame by `deadlineNs` (EventLoop.now); false (and `failure` set) if not.
    @discardableResult
    func send(_ m: FleetMessage, deadlineNs: UInt64) -> Bool {
        guard failure == nil else { return false }
        let bytes = m.frame()
        var done = 0
        while done < bytes.count {
            let r = bytes.withUnsafeBytes { p in syscall { write(writeFD, p.baseAddress! + done, p.count - done) } }
            switch r {
            case .done(let n): done += n
            case .wouldBlock:
                guard wait(for: writeFD, events: Int16(POLLOUT), deadlineNs: deadlineNs) else { fail("the worker stopped reading (no room to write for the deadline)"); return false }
            case .failed(let e): fail("write failed: \(errnoDescription(e))"); return false
            }
        }
        return true
    }

    /// The next message by `deadlineNs`; nil (and `failure` set) on EOF, an error, a bad frame
    /// or — unless `quietDeadline`, for a caller that only waits a while — the deadline.
    func receive(deadlineNs: UInt64, quietDeadline: Bool = false) -> FleetMessage? {
        guard failure == nil else { return nil }
        while true {
            do {
                if let payload = try frames.next() { return try FleetMessage.decode(payload) }
            } catch {
                fail("\(error)")
                return nil
            }
            let r = chunk.withUnsafeMutableBytes { p in syscall { read(readFD, p.baseAddress!, p.count) } }
            switch r {
            case .done(0): fail("the stream ended (the peer closed it or its process ended)"); return nil
            case .done(let n): chunk.withUnsafeBytes { frames.feed(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            case .wouldBlock:
                guard wait(for: readFD, events: Int16(POLLIN), deadlineNs: deadlineNs) else {
                    if failure == nil && !quietDeadline { fail("no answer before the deadline (the process is frozen or overloaded)") }
                    return nil
                }
            case .failed(let e): fail("read failed: \(errnoDescription(e))"); return nil
            }
        }
    }

    /// Waits for `events` on `fd` until the deadline; true when ready (or the peer hung up, which
    /// the next read or write reports).
    func wait(for fd: Int32, events: Int16, deadlineNs: UInt64) -> Bool {
        while true {
            let now = EventLoop.now()
            guard now < deadlineNs else { return false }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let ms = Int32(min(UInt64(Int32.max), (deadlineNs - now + 999_999) / 1_000_000))
            let r = poll(&p, 1, ms)
            if r > 0 { return true }
            if r < 0 && cs_errno() != EINTR { fail("poll failed: \(errnoDescription(cs_errno()))"); return false }
        }
    }
}
