import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

extension EventLoop {
    // MARK: Slots

    func allocateSlot(fd: Int32, state: Slot.State) -> ConnectionID {
        let index: UInt32
        if let free = freeSlots.popLast() {
            index = free
        } else {
            index = UInt32(slots.count)
            slots.append(Slot())
        }
        slots[Int(index)].fd = fd
        slots[Int(index)].state = state
        liveSlots += 1
        return ConnectionID(index: index, generation: slots[Int(index)].generation)
    }

    func releaseSlot(_ index: Int) {
        var s = slots[index]
        if let out = s.out { queuedBytes -= out.count; recycle(out); s.out = nil }
        if let pending = s.pending { recycle(pending); s.pending = nil }
        s.fd = -1
        s.stream = .plainTCP
        s.state = .free
        s.generation &+= 1
        s.pollingOut = false
        s.backedUp = false
        s.closeWhenFlushed = false
        s.shutdownWhenFlushed = false
        s.readPaused = false
        s.throttled = false
        s.overLimit = false
        s.deadline = .max
        s.deadlineTag = 0
        s.registrationErrno = 0
        s.tlsServer = nil
        s.exempt = false
        let wasPaused = s.acceptPaused
        s.acceptPaused = false
        // `dirty` stays set if queued; flushDirty skips free slots and clears it.
        slots[index] = s
        freeSlots.append(UInt32(index))
        liveSlots -= 1
        if wasPaused { pausedListeners -= 1 }
        // A descriptor came free (its owner closes it around this call): worth another accept.
        if pausedListeners > 0 { resumeAllAccepting() }
    }

    @inline(__always)
    func slotIndex(_ id: ConnectionID) -> Int? {
        let i = Int(id.index)
        guard i < slots.count, slots[i].generation == id.generation, slots[i].state != .free else { return nil }
        return i
    }

    /// Whether `id` still names a live connection.
    public func isAlive(_ id: ConnectionID) -> Bool { slotIndex(id) != nil }

    /// Number of slots ever created (the dense table's size).
    public var slotCapacity: Int { slots.count }

    // MARK: Connections

    /// Starts a non-blocking connect. Returns the connection, or the errno of an immediate failure
    /// (EMFILE, EADDRNOTAVAIL, ECONNREFUSED …). Completion comes through `connectCompleted`.
    public func connect(to address: SocketAddress, from source: UInt32? = nil, timeoutNs: UInt64, tls: TLSContext? = nil) -> Result<ConnectionID, LoopError> {
        connect(to: address, fromAddress: source.map { .ipv4($0, port: 0) }, timeoutNs: timeoutNs, tls: tls)
    }

    /// Starts a non-blocking connect from `source` (IPv4 or IPv6; ignored when its family is not
    /// the destination's). Returns the connection, or the errno of an immediate failure.
    /// With `tls`, the TLS handshake runs after the TCP connect and `connectCompleted` comes once it
    /// is done (see EventLoop+TLS.swift); the connect timeout covers both. `tlsSession` says
    /// whether the handshake tries to resume a session kept earlier (see `TLSSessionReuse`);
    /// `serverName`, when given, replaces the context's server name for this connection.
    public func connect(to address: SocketAddress, fromAddress source: SocketAddress?, timeoutNs: UInt64,
                        tls: TLSContext? = nil, tlsSession: TLSSessionReuse = .none, serverName: String? = nil) -> Result<ConnectionID, LoopError> {
        var stream = ByteStream.plainTCP
        if let tls {
            guard let s = makeTLSStream(tls, reuse: tlsSession, serverName: serverName) else { return .failure(LoopError(operation: "SSL_new", errno: ENOMEM)) }
            stream = s
        }
        let fd = cs_socket_tcp(address.family)
        guard fd >= 0 else { return .failure(LoopError(operation: "socket", errno: cs_errno())) }
        // Socket options are best effort: without TCP_NODELAY small frames wait for Nagle, and
        // without IP_BIND_ADDRESS_NO_PORT the bind below reserves a port; both still work.
        _ = cs_set_int_option(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        if let src = source, src.isIPv6 == address.isIPv6 {
            // Port 0 with IP_BIND_ADDRESS_NO_PORT lets the kernel pick the port at connect time per
            // (source, destination) pair instead of reserving one per source address. The option
            // is at the IPPROTO_IP level for IPv6 sockets too.
            _ = cs_set_int_option(fd, Int32(IPPROTO_IP), 24 /* IP_BIND_ADDRESS_NO_PORT */, 1)
            let e = syscallStatus { src.with(port: 0).withSockaddr(fd: fd, bind: true) }
            if e != 0 {
                Glibc.close(fd)
                return .failure(LoopError(operation: "bind", errno: e))
            }
        }
        let r: IOResult = syscall { Int(address.withSockaddr(fd: fd, bind: false)) }
        switch r {
        case .failed(let e):
            Glibc.close(fd)
            return .failure(LoopError(operation: "connect", errno: e))
        case .done, .wouldBlock:
            let id = allocateSlot(fd: fd, state: .connecting)
            slots[Int(id.index)].stream = stream
            slots[Int(id.index)].pollingOut = true
            let epfd = epfd
            let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLOUT.rawValue | EPOLLIN.rawValue, id.packed) }
            guard e == 0 else {
                Glibc.close(fd); releaseSlot(Int(id.index))
                return .failure(LoopError(operation: "epoll_ctl", errno: e))
            }
            timers.push(deadline: Self.now() + timeoutNs, token: TimerToken(layer: .loop, LoopTimer.connectTimeout, slot: Int(id.index), epoch: id.generation))
            return .success(id)
        }
    }

    func connectTimedOut(_ id: ConnectionID) {
        guard let i = slotIndex(id) else { return }
        if slots[i].state == .handshaking { handshakeEnded(i, id: id, error: ETIMEDOUT); return }
        guard slots[i].state == .connecting else { return }
        Glibc.close(slots[i].fd)
        releaseSlot(i)
        handler.connectCompleted(id, error: ETIMEDOUT, loop: self)
    }

    /// Listens on a local IPv4 or IPv6 address; returns the listener and the bound port (for port 0).
    /// With `tls`, each accepted connection runs the TLS handshake before `accepted`.
    public func listen(on address: SocketAddress, backlog: Int32 = 4096, tls: TLSContext? = nil) -> Result<(ConnectionID, UInt16), LoopError> {
        let fd = cs_socket_tcp(address.family)
        guard fd >= 0 else { return .failure(LoopError(operation: "socket", errno: cs_errno())) }
        _ = cs_set_int_option(fd, SOL_SOCKET, SO_REUSEADDR, 1)  // best effort: bind reports the outcome
        if reusePort, cs_set_int_option(fd, SOL_SOCKET, SO_REUSEPORT, 1) != 0 {
            let e = cs_errno()
            Glibc.close(fd)
            return .failure(LoopError(operation: "setsockopt SO_REUSEPORT", errno: e))
        }
        if address.isIPv6 { _ = cs_set_int_option(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }  // [::] should not take IPv4 too
        let bindError = syscallStatus { address.withSockaddr(fd: fd, bind: true) }
        guard bindError == 0 else { Glibc.close(fd); return .failure(LoopError(operation: "bind \(address)", errno: bindError)) }
        let listenError = syscallStatus { Glibc.listen(fd, backlog) }
        guard listenError == 0 else { Glibc.close(fd); return .failure(LoopError(operation: "listen", errno: listenError)) }
        let port = UInt16(cs_local_port(fd))
        let id = allocateSlot(fd: fd, state: .listener)
        slots[Int(id.index)].tlsServer = tls
        let epfd = epfd
        let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN.rawValue, id.packed) }
        guard e == 0 else {
            Glibc.close(fd); releaseSlot(Int(id.index))
            return .failure(LoopError(operation: "epoll_ctl", errno: e))
        }
        return .success((id, port))
    }

    /// Takes over a connected stream socket made elsewhere (a Unix-domain socket between server
    /// processes, say): made non-blocking and served like an accepted connection, without an
    /// `accepted` callback. With `exemptFromLimits` the loop's `limits` (output cap, send
    /// timeout, throttling, deadlines) do not apply to it: it is a trusted internal link, not a
    /// client, and must not be dropped as a slow consumer while its peer is busy.
    public func adopt(fd: Int32, exemptFromLimits: Bool) -> Result<ConnectionID, LoopError> {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { return .failure(LoopError(operation: "fcntl O_NONBLOCK", errno: cs_errno())) }
        let id = allocateSlot(fd: fd, state: .stream)
        slots[Int(id.index)].exempt = exemptFromLimits
        let epfd = epfd
        let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN.rawValue | EPOLLRDHUP.rawValue, id.packed) }
        guard e == 0 else {
            releaseSlot(Int(id.index))
            return .failure(LoopError(operation: "epoll_ctl", errno: e))
        }
        return .success(id)
    }

    func acceptAll(_ i: Int, listener: ConnectionID) {
        // An event reported before the pause took it out of epoll: it waits for its resume.
        guard !slots[i].acceptPaused else { return }
        // Bounded per wake-up so a connect storm cannot starve established connections.
        let (epfd, listenFd) = (epfd, slots[i].fd)
        for _ in 0..<256 {
            let accepted: Int
            switch syscall({ Int(cs_accept(listenFd)) }) {
            case .done(let fd): accepted = fd
            case .wouldBlock: return  // the backlog is empty
            case .failed(let e):
                // Out of descriptors or memory: the connection stays in the backlog and the
                // listener readable, so it rests instead of spinning (EventLoop+AcceptPause.swift).
                if let refusal = AcceptRefusal(errno: e) { pauseAccepting(i, listener: listener, refusal); return }
                // ECONNABORTED, EPROTO, EPERM (a firewall): that one connection is gone; the next
                // may be fine. Anything else (EBADF, EINVAL) ends the round, as the backlog did.
                guard e == ECONNABORTED || e == EPROTO || e == EPERM else { return }
                continue
            }
            let fd = Int32(accepted)
            _ = cs_set_int_option(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)  // best effort, as in `connect`
            if let tls = slots[i].tlsServer { acceptTLS(fd: fd, listener: listener, context: tls); continue }
            let id = allocateSlot(fd: fd, state: .stream)
            let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN.rawValue | EPOLLRDHUP.rawValue, id.packed) }
            // Not in epoll: announced all the same, then closed with `.error(e)` at the flush.
            if e != 0 { registrationFailed(Int(id.index), errno: e) }
            handler.accepted(id, listener: listener, loop: self)
        }
    }

    // MARK: Epoll interest

    /// Registers the slot's epoll interest from its flags: reading unless throttled, writing
    /// while output waits for the socket; out of epoll altogether while its owner paused it.
    func updateInterest(_ i: Int) {
        guard !slots[i].readPaused, slots[i].state == .stream else { return }
        let id = ConnectionID(index: UInt32(i), generation: slots[i].generation)
        var events: UInt32 = slots[i].throttled ? 0 : EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        if slots[i].pollingOut { events |= EPOLLOUT.rawValue }
        let (epfd, fd) = (epfd, slots[i].fd)
        let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, events, id.packed) }
        if e != 0 { registrationFailed(i, errno: e) }
    }

    /// epoll refused to change the connection's registration, so its events no longer match
    /// its state (it might never be read again, or spin): it is closed with `.error(errno)` when
    /// it is next flushed, at the latest at the end of this iteration. Not here: this can run
    /// inside a handler's `write`, and closing would call the handler back in the middle of it.
    func registrationFailed(_ i: Int, errno e: Int32) {
        if slots[i].registrationErrno == 0 { slots[i].registrationErrno = e }
        markDirty(i)
    }

    // MARK: Closing

    func peerClosed(_ index: Int, id: ConnectionID, reason: CloseReason) {
        Glibc.close(slots[index].fd)
        releaseSlot(index)
        handler.closed(id, reason: reason, loop: self)
    }

    /// Closes now, dropping queued output; no `closed` callback. `reset` sends RST instead of FIN.
    public func close(_ id: ConnectionID, reset: Bool = false) {
        guard let i = slotIndex(id) else { return }
        let fd = slots[i].fd
        if reset { _ = cs_close_with_reset(fd) } else { slots[i].stream.closeGracefully(fd); Glibc.close(fd) }
        releaseSlot(i)
    }

    /// Closes once the write queue is empty (e.g. after a WebSocket close frame); no callback.
    public func closeAfterFlush(_ id: ConnectionID) {
        guard let i = slotIndex(id) else { return }
        slots[i].closeWhenFlushed = true
        markDirty(i)
    }

    /// Sends FIN once the write queue is empty but keeps reading until the peer closes.
    public func shutdownWriteAfterFlush(_ id: ConnectionID) {
        guard let i = slotIndex(id) else { return }
        slots[i].shutdownWhenFlushed = true
        markDirty(i)
    }

    func closeAll() {
        for i in slots.indices where slots[i].state != .free {
            Glibc.close(slots[i].fd)
            releaseSlot(i)
        }
    }
}
