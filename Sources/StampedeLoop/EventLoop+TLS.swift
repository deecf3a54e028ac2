import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

/// The TLS handshake, driven by the loop between the TCP connect (or accept) and the moment
/// the handler hears of the connection: a client's `connectCompleted` comes once the handshake
/// is done (error 0) or failed (a `TLSFailure` raw value, or an errno; ETIMEDOUT when it does
/// not finish within the connect timeout); a server's `accepted` comes once it is done, and a
/// failed or stalled one is only counted on its `TLSContext`.
extension EventLoop {
    /// A slot for a connection that speaks TLS through `context`, or nil when OpenSSL could not
    /// make one (out of memory, an unusable server name). `serverName` replaces the context's.
    func makeTLSStream(_ context: TLSContext, reuse: TLSSessionReuse = .none, serverName: String? = nil) -> ByteStream? {
        TLSConnection(context: context, reuse: reuse, serverName: serverName).map { .tls($0) }
    }

    /// How `id`'s TLS handshake went: nil for a plain connection or one still handshaking.
    /// Ask in `connectCompleted` or `accepted`.
    public func tlsHandshake(of id: ConnectionID) -> TLSHandshakeResult? {
        guard let i = slotIndex(id), slots[i].state == .stream, case .tls(let t) = slots[i].stream else { return nil }
        return TLSHandshakeResult(durationNs: t.handshakeDurationNs, resumed: t.resumed)
    }

    /// The protocol the server chose by ALPN for `id` (RFC 7301), or nil.
    public func tlsALPNProtocol(of id: ConnectionID) -> String? {
        guard let i = slotIndex(id), slots[i].state == .stream, case .tls(let t) = slots[i].stream else { return nil }
        return t.alpnProtocol
    }

    /// The TCP connection is up: the handshake starts (its duration is measured from here).
    func startHandshake(_ i: Int, id: ConnectionID) {
        guard case .tls(let t) = slots[i].stream else { return }
        t.handshakeStartNs = Self.now()
        slots[i].state = .handshaking
        advanceHandshake(i, id: id)
    }

    /// Accepted `fd` on a TLS listener: the handshake starts; the handler hears of it when done.
    func acceptTLS(fd: Int32, listener: ConnectionID, context: TLSContext) {
        guard case .tls(let t)? = makeTLSStream(context) else {
            Glibc.close(fd)
            context.noteFailure(.handshakeFailed, reason: "SSL_new failed")
            return
        }
        t.listener = listener
        t.handshakeStartNs = Self.now()
        let id = allocateSlot(fd: fd, state: .handshaking)
        slots[Int(id.index)].stream = .tls(t)
        let (epfd, i) = (epfd, Int(id.index))
        let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN.rawValue | EPOLLRDHUP.rawValue, id.packed) }
        guard e == 0 else {
            Glibc.close(fd); releaseSlot(i)
            context.noteFailure(.handshakeFailed, reason: "epoll_ctl: \(errnoDescription(e))")
            return
        }
        timers.push(deadline: Self.now() + context.handshakeTimeoutNs, token: TimerToken(layer: .loop, LoopTimer.connectTimeout, slot: i, epoch: id.generation))
        advanceHandshake(i, id: id)
    }

    /// Runs the handshake as far as the socket allows; ends it when done or failed.
    func advanceHandshake(_ i: Int, id: ConnectionID) {
        guard case .tls(let t) = slots[i].stream else { return }
        let fd = slots[i].fd
        switch t.handshake(fd, scratch: readBuffer) {
        case .waiting:
            // Output the socket did not take yet needs EPOLLOUT; otherwise wait for input.
            let wantOut = t.hasPendingCiphertext
            if wantOut != slots[i].pollingOut {
                slots[i].pollingOut = wantOut
                let epfd = epfd
                let events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (wantOut ? EPOLLOUT.rawValue : 0)
                let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, events, id.packed) }
                if e != 0 { handshakeEnded(i, id: id, error: e) }
            }
        case .failed(let e):
            handshakeEnded(i, id: id, error: e)
        case .done:
            t.handshakeDurationNs = Self.now() &- t.handshakeStartNs
            t.shrinkMemoryBIOs(above: 0)
            let resumed = t.resumed
            t.context.counts.withLock { $0.completed += 1; if resumed { $0.resumed += 1 } }
            slots[i].state = .stream
            slots[i].pollingOut = t.hasPendingCiphertext
            updateInterestAfterHandshake(i, id: id)
            if t.hasPendingCiphertext { markDirty(i) }
            if let listener = t.listener {
                handler.accepted(id, listener: listener, loop: self)
            } else {
                handler.connectCompleted(id, error: 0, loop: self)
            }
            // Application data that came with the last handshake flight is already in OpenSSL.
            if let j = slotIndex(id), slots[j].stream.hasBufferedInput { readAvailable(j, id: id) }
        }
    }

    private func updateInterestAfterHandshake(_ i: Int, id: ConnectionID) {
        var events: UInt32 = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        if slots[i].pollingOut { events |= EPOLLOUT.rawValue }
        let (epfd, fd) = (epfd, slots[i].fd)
        let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, events, id.packed) }
        if e != 0 { registrationFailed(i, errno: e) }
    }

    /// The handshake failed (`error`: a `TLSFailure` raw value or an errno) or timed out.
    func handshakeEnded(_ i: Int, id: ConnectionID, error: Int32) {
        guard case .tls(let t) = slots[i].stream else { return }
        Glibc.close(slots[i].fd)
        releaseSlot(i)
        if error == ETIMEDOUT { t.context.counts.withLock { $0.timeouts += 1 } }
        // A client hears why; a server's handler never heard of the connection.
        if t.listener == nil { handler.connectCompleted(id, error: error, loop: self) }
    }
}
