import ArgumentParser
import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import StampedeServers
#if canImport(Glibc)
import Glibc
#endif

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a reference server (on 127.0.0.1, or the local address --host names): the chat server (/chat), a SignalR hub (--hub), a Socket.IO server (--socketio) or a REST target (--rest).",
        discussion: """
            A WebSocket endpoint that broadcasts every {"message","user","userID"} it receives to \
            every connected client, with the server's "date" and "id" added.

            With --rest, an HTTP/1.1 JSON API for ETag polling: every path under --path (/api) \
            is a resource whose version changes --change-rate times a second; answers 304 to a \
            matching If-None-Match, 401 without the --token, 429 past --rate-limit 200s a second.

            With --hub, a SignalR hub at --path (/hub); with --token (or --token-env), its \
            negotiate requires 'Authorization: Bearer <token>' (401 otherwise).

            With --socketio, a Socket.IO 4 server (Socket.IO 5 over Engine.IO 4) at --path \
            (/socket.io/): long polling, WebSocket and the upgrade; any namespace; the server \
            pings every --ping-interval ms and drops a client silent for --ping-timeout ms. Events: \
            join(room) joins a room; say({room?, text}) sends `said` with the same arguments to \
            the room (or the namespace), sender included; any other event with an ack is acked \
            with its own arguments (echo); binary attachments travel along; acks are [true] for \
            join and say. With --token (or --token-env), a CONNECT whose auth lacks \
            {"token":"<token>"} gets CONNECT_ERROR {"message":"not authorized"}.

            With --tls-cert and --tls-key (PEM files), or --tls-self-signed (a throw-away \
            certificate for localhost, 127.0.0.1, ::1 and --host, written where the output says), \
            every connection speaks TLS: wss:// for chat, https:// (and wss://) for the hub and REST.

            With --admin-port, a fault switch listens on 127.0.0.1 only:
              POST /fault/drop?mode=reset|close  drop every connection (RST or clean)
              POST /fault/reject?seconds=S       answer new connections 503 for S s
              POST /fault/stall?seconds=S        hang the server for S s (S <= 3600)
              POST /fault/delay?us=N             hold every broadcast/response N µs (0: off)
              POST /fault/delay?ms=N             the same in ms (max 10 s; not --hub)
              GET  /status                       statistics as JSON

            With --processes N, N server processes share the port (SO_REUSEPORT) under one \
            supervisor: chat broadcasts reach the clients of every process, admin faults reach \
            every process and /status sums them. Hub broadcasts and groups cross too, but hub \
            clients must use WebSockets and skip negotiation (no sticky sessions). Socket.IO \
            `said` broadcasts cross too, but Socket.IO clients must use the WebSocket transport \
            only (transports: [websocket]): a polling session lives in the process that \
            answered its handshake, and without sticky sessions its next request may reach another.

            Example:
              stampede serve --port 8765          # then target ws://127.0.0.1:8765/chat
              stampede serve --hub --port 5000    # then target http://127.0.0.1:5000/hub
              stampede serve --socketio --port 3000 --token secret   # then target http://127.0.0.1:3000
              stampede serve --rest --port 8080 --change-rate 0.5 --token-env API_TOKEN --rate-limit 100
              stampede serve --port 8443 --tls-cert cert.pem --tls-key key.pem   # then wss://localhost:8443/chat
              stampede serve --hub --port 5001 --tls-self-signed --tls-cert-out /tmp/hub.pem
              stampede serve --port 8765 --admin-port 9100 &
              curl -X POST 'http://127.0.0.1:9100/fault/drop?mode=reset'
              stampede serve --port 8765 --processes 4   # up to 4 x 18,000 chat connections
              stampede serve --port 8765 --processes 6 --max-connections 60000   # 503 to the 60,001st (a known capacity)
            """)

    @Option(help: "Local IPv4 or IPv6 address to listen on (127.0.0.1, ::1, or an address of this machine).")
    var host: String = "127.0.0.1"

    @Option(help: "Port (0 picks a free one).")
    var port: Int = 8765

    @Option(help: "Path (default /chat, /hub with --hub, /socket.io/ with --socketio, /api with --rest).")
    var path: String?

    @Flag(help: "Serve the reference SignalR hub instead of the chat server.")
    var hub = false

    @Flag(help: "Serve the reference Socket.IO server instead of the chat server (WebSocket-only clients with --processes).")
    var socketio = false

    @Option(help: "Socket.IO: the server pings every this many milliseconds (100...3600000; default 25000).")
    var pingInterval: Int?

    @Option(help: "Socket.IO: a ping unanswered this many milliseconds closes the session (100...3600000; default 20000).")
    var pingTimeout: Int?

    @Option(help: "Socket.IO: largest message or polling body accepted, in bytes (1024...67108864; default 1000000).")
    var maxPayload: Int?

    @Flag(help: "Serve the reference REST target for ETag polling instead of the chat server.")
    var rest = false

    @Option(help: "REST: version changes per second per resource (0 = never; default 1).")
    var changeRate: Double?

    @Option(help: "REST, hub (its negotiate): require 'Authorization: Bearer <token>'. Socket.IO: require {\"token\":\"<token>\"} in the CONNECT's auth.")
    var token: String?

    @Option(help: "REST, hub, Socket.IO: read the required token from this environment variable.")
    var tokenEnv: String?

    @Option(help: "REST: at most this many 200 responses per second (304s do not count); 429 beyond.")
    var rateLimit: Int?

    @Option(help: "REST: about how large a 200's JSON body is, in bytes (0...16777216; default 256).")
    var bodySize: Int?

    @Flag(help: "REST: frame 200 bodies with Transfer-Encoding: chunked.")
    var chunked = false

    @Option(help: "Stop by itself after this many seconds (0 = until Ctrl-C).")
    var maxSeconds: Double = 0

    @Option(help: "Hold every chat broadcast (REST: response) this long, in whole microseconds, like 100us, 2ms or 0.5s (a bare number is ms; 0 to 10s): a known regression for `stampede compare`.")
    var delay: String?

    @Option(help: "Chat: relay at most N client messages per second (a known capacity for `stampede capacity`); the rest queue in order, so latency grows without bound past N (1 to 10000000; default: no limit).")
    var maxRate: Double?

    @Flag(help: "Chat: send each message back to its sender only (an echo server with the chat framing) instead of to every client, so --max-rate can be searched at any client count.")
    var echo = false

    @Option(help: "Chat, hub: at most N WebSocket connections (Socket.IO: sessions) open at once, counted across all --processes; past N an upgrade gets HTTP 503 (a known capacity for `stampede capacity --vary clients`; 1 to 10000000; default: no limit).")
    var maxConnections: Int?

    @Option(help: "Chat: CPU microseconds spent per open connection per second (0 to 10000), so latency grows gradually with connections; each process spins for its own.")
    var connectionCost: Double?

    @Option(help: "Port of the fault switch on 127.0.0.1 (0 picks a free one; default: none).")
    var adminPort: Int?

    @Option(help: "Most output queued for one connection before it is dropped as a slow consumer, in bytes (65536...1073741824; default 4194304).")
    var maxOutputBytes: Int?

    @Option(help: "Seconds a connection may accept none of its waiting output before it is dropped as a slow consumer (default 10).")
    var sendTimeout: Double?

    @Option(help: "Seconds a started request or upgrade head has to complete (default 10).")
    var headerTimeout: Double?

    @Option(help: "Seconds a connection with no request under way may stay silent (default 60).")
    var idleTimeout: Double?

    @OptionGroup(title: "TLS")
    var tls: ServeTLSOptions

    @Option(help: "Server processes sharing the port (SO_REUSEPORT; 1 to 64): a supervisor starts them, applies --admin-port faults to all and sums their statistics; chat broadcasts reach the clients of every process. --max-rate and --rate-limit are for all of them together.")
    var processes: Int = 1

    /// Internal (a server process of `--processes N`): its index, and its supervisor's link socket.
    @Option(help: .hidden)
    var processIndex: Int?

    @Option(help: .hidden)
    var processLink: String?

    /// Internal: the Unix time REST versions count from (the supervisor's start).
    @Option(help: .hidden)
    var restEpoch: Double?

    /// Internal: the file holding the open connection count every server process shares (`ConnectionQuota`).
    @Option(help: .hidden)
    var connectionCountFile: String?

    func validate() throws {
        guard (1...64).contains(processes) else { throw ValidationError("--processes must be from 1 to 64, got \(processes)") }
        if (processIndex == nil) != (processLink == nil) { throw ValidationError("--process-index and --process-link are internal and come together") }
        if let processIndex, !(0..<processes).contains(processIndex) { throw ValidationError("--process-index must be from 0 to --processes - 1") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535, got \(port)") }
        guard maxSeconds.isFinite, (0...7 * 24 * 3600).contains(maxSeconds) else {
            throw ValidationError("--max-seconds must be from 0 (until Ctrl-C) to 604800 (168h), got \(maxSeconds)")
        }
        if let maxRate {
            guard maxRate.isFinite, (1...10_000_000).contains(maxRate) else { throw ValidationError("--max-rate must be from 1 to 10000000 messages per second, got \(maxRate)") }
            guard !hub && !rest && !socketio else { throw ValidationError("--max-rate is acted out by the chat server only, not by --hub, --socketio or --rest") }
        }
        if let maxConnections {
            guard (1...ConnectionQuota.maxLimit).contains(maxConnections) else { throw ValidationError("--max-connections must be from 1 to 10000000, got \(maxConnections)") }
            guard !rest else { throw ValidationError("--max-connections is acted out by the chat, hub and Socket.IO servers (their WebSockets), not by --rest") }
        }
        if connectionCountFile != nil && (processLink == nil || maxConnections == nil) {
            throw ValidationError("--connection-count-file is internal and comes with --process-link and --max-connections")
        }
        if let connectionCost {
            guard connectionCost.isFinite, (0...ConnectionCost.maxMicroseconds).contains(connectionCost) else {
                throw ValidationError("--connection-cost must be from 0 to 10000 microseconds per connection per second, got \(connectionCost)")
            }
            guard !hub && !rest && !socketio else { throw ValidationError("--connection-cost is acted out by the chat server only, not by --hub, --socketio or --rest") }
        }
        if let delay {
            guard TargetFault.delayMicroseconds(delay) != nil else {
                throw ValidationError("--delay must be from 0 to 10s, in whole microseconds, like 100us, 2ms or 0.5s, got '\(delay)'")
            }
            guard !hub && !socketio else { throw ValidationError("--delay is acted out by the chat and REST servers only, not yet by --hub or --socketio") }
        }
        if [hub, rest, socketio].filter({ $0 }).count > 1 { throw ValidationError("--hub, --socketio and --rest are exclusive") }
        if echo && (hub || rest || socketio) { throw ValidationError("--echo is the chat server's, not --hub's, --socketio's or --rest's") }
        if !socketio && (pingInterval != nil || pingTimeout != nil || maxPayload != nil) {
            throw ValidationError("--ping-interval, --ping-timeout and --max-payload are Socket.IO flags, they need --socketio")
        }
        for (value, flag) in [(pingInterval, "--ping-interval"), (pingTimeout, "--ping-timeout")] {
            if let value, !(100...3_600_000).contains(value) { throw ValidationError("\(flag) must be from 100 to 3600000 milliseconds, got \(value)") }
        }
        if let maxPayload, !(1024...(64 << 20)).contains(maxPayload) { throw ValidationError("--max-payload must be from 1024 to 67108864 bytes, got \(maxPayload)") }
    }

    func run() throws {
        // Any local address: binding tells whether it is one (the error names the address).
        guard let listenAddress = SocketAddress(host: host, port: 0), host != "localhost" else {
            throw ValidationError("--host must be an IPv4 or IPv6 address of this machine (like 127.0.0.1, ::1 or 10.0.0.5), got '\(host)'")
        }
        let bindError = listenAddress.localBindError
        guard bindError == 0 else {
            throw ValidationError("--host \(host) is not an address of this machine (\(String(cString: strerror(bindError))))")
        }
        let at = listenAddress.with(port: UInt16(clamping: port))
        let shownHost = listenAddress.isIPv6 ? "[\(listenAddress.hostText)]" : listenAddress.hostText
        if let p = adminPort, !(0...65535).contains(p) { throw ValidationError("--admin-port must be from 0 to 65535") }
        var restSettings = try restConfiguration()
        let limits = try serverLimits()
        restSettings?.limits = limits
        let path = self.path ?? (hub ? "/hub" : socketio ? "/socket.io/" : rest ? "/api" : "/chat")
        let socketIOSettings = try socketIOConfiguration(limits: limits)
        ServerLimits.raiseOpenFilesLimit()
        if processes > 1 && processLink == nil {
            return try runSupervisor(at: at, shownHost: shownHost, path: path)
        }
        let quota = try connectionQuota()
        let isProcess = processLink != nil
        if isProcess {
            // A server process ends with its supervisor, however that ends (see ServeProcesses.swift).
            ServerProcessLink.endWithParent()
            if let n = restSettings?.rateLimit { restSettings?.rateLimit = (n + processes - 1) / processes }
            if let restEpoch, restEpoch.isFinite { restSettings?.versionEpoch = restEpoch }
        }
        let tlsMade = try tls.make(host: listenAddress.hostText)
        defer { if tlsMade.removeAtExit, let f = tlsMade.trustFile { try? FileManager.default.removeItem(at: f.deletingLastPathComponent()) } }
        installSignalHandlers()
        let loop: EventLoop
        var chatServer: ChatServer?
        var hubServer: HubServer?
        var socketIOServer: SocketIOServer?
        var restServer: RestServer?
        do {
            loop = try EventLoop(index: 0)
            loop.reusePort = isProcess
            if var configuration = restSettings {
                configuration.path = path
                restServer = try RestServer(loop: loop, address: at, configuration: configuration, tls: tlsMade.context)
            } else if let socketIOSettings {
                socketIOServer = try SocketIOServer(loop: loop, address: at, path: path, configuration: socketIOSettings, tls: tlsMade.context)
                socketIOServer?.connectionQuota = quota
            } else if hub {
                var configuration = HubServer.Configuration()
                configuration.limits = limits
                configuration.token = try requiredToken()
                hubServer = try HubServer(loop: loop, address: at, path: path, configuration: configuration, tls: tlsMade.context)
                hubServer?.connectionQuota = quota
            } else {
                chatServer = try ChatServer(loop: loop, address: at, path: path, limits: limits, tls: tlsMade.context)
                chatServer?.connectionQuota = quota
                if let connectionCost { chatServer?.setConnectionCost(microseconds: connectionCost) }
            }
            // Before the loop starts, so the first message already waits.
            // --max-rate is the whole server's: each of N processes relays its share.
            if let maxRate { chatServer?.setMaxRate(maxRate / Double(processes)) }
            chatServer?.echoesToSender = echo
            if let us = delay.flatMap(TargetFault.delayMicroseconds) {
                if let chatServer { chatServer.apply(.delay(microseconds: us)) } else { restServer?.apply(.delay(microseconds: us)) }
            }
        } catch {
            FileHandle.standardError.write(Data("error: cannot listen on \(at): \(error)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
        let target: any FaultTarget
        if let restServer { target = restServer } else if let hubServer { target = hubServer } else if let socketIOServer { target = socketIOServer } else { target = chatServer! }
        var link: ServerProcessLink?
        if let processLink, let processIndex {
            do { link = try ServerProcessLink(path: processLink, index: processIndex, target: target, sharing: chatServer.map { $0 as any SharedBroadcasts } ?? hubServer.map { $0 as any SharedBroadcasts } ?? socketIOServer) } catch {
                FileHandle.standardError.write(Data("error: server process \(processIndex): cannot reach its supervisor: \(error)\n".utf8))
                throw ExitCode(ExitStatus.runFailed)
            }
        }
        var admin: TargetAdmin?
        if let adminPort, !isProcess {
            do {
                admin = try TargetAdmin(target: target, address: .ipv4(0x7F00_0001, port: UInt16(adminPort)))
            } catch {
                FileHandle.standardError.write(Data("error: cannot start the admin endpoint on 127.0.0.1:\(adminPort): \(error)\n".utf8))
                throw ExitCode(ExitStatus.runFailed)
            }
        }
        loop.start(name: "stampede-serve")
        let s = tlsMade.context == nil ? "" : "s"
        if isProcess {
            // The supervisor prints where the group listens.
        } else if let restServer {
            print("listening on http\(s)://\(shownHost):\(restServer.port)\(path) (REST)")
        } else if let hubServer {
            print("listening on http\(s)://\(shownHost):\(hubServer.port)\(path) (SignalR hub)")
        } else if let socketIOServer {
            print("listening on http\(s)://\(shownHost):\(socketIOServer.port)\(path) (Socket.IO)")
        } else if let chatServer {
            print("listening on ws\(s)://\(shownHost):\(chatServer.port)\(path)")
        }
        if let f = tlsMade.trustFile, !isProcess {
            print("TLS: self-signed certificate for \(tlsMade.names.joined(separator: ", ")); clients trust it with \(f.path)")
        }
        if let admin { print("admin on http://127.0.0.1:\(admin.port)") }
        fflush(nil)
        let start = Date()
        while !interrupt.isRaised && link?.isLost != true && (maxSeconds <= 0 || Date().timeIntervalSince(start) < maxSeconds) {
            Thread.sleep(forTimeInterval: 0.1)
        }
        admin?.stop()
        link?.stop()
        let served = processIndex.map { "process \($0) served:" } ?? "served:"
        if let stats = chatServer?.statisticsSnapshot() {
            print("\(served) \(stats.upgraded) connections, \(stats.messagesReceived) messages received, \(stats.framesBroadcast) frames broadcast, \(stats.invalidMessages) invalid, "
                + (maxRate != nil ? "\(stats.relaysQueued) still queued by --max-rate, \(stats.relaysRefused) refused (queue full), " : "")
                + (maxConnections != nil ? "\(stats.connectionsRefused) refused by --max-connections, " : "")
                + (connectionCost != nil ? "\(stats.connectionCostSpunMicroseconds / 1000) ms spent by --connection-cost, " : "")
                + "\(stats.limits.slowConsumersDropped) slow consumers dropped")
        }
        if let hubServer {
            // Tell every client to reconnect (Close with allowReconnect), as ASP.NET Core does on shutdown.
            hubServer.loop.execute { _ in hubServer.shutdown() }
            Thread.sleep(forTimeInterval: 0.2)
        }
        if let stats = hubServer?.statisticsSnapshot() {
            print("\(served) \(stats.handshakes) hub connections, \(stats.invocations.total) invocations, \(stats.protocolErrors) protocol errors"
                + (maxConnections != nil ? ", \(stats.connectionsRefused) refused by --max-connections" : ""))
        }
        if let socketIOServer {
            // Every session gets the close packet, as a Socket.IO server does on shutdown.
            socketIOServer.loop.execute { _ in socketIOServer.shutdown() }
            Thread.sleep(forTimeInterval: 0.2)
        }
        if let stats = socketIOServer?.statisticsSnapshot() {
            print("\(served) \(stats.handshakesPolling + stats.handshakesWebSocket) Socket.IO sessions (\(stats.upgrades) upgraded), \(stats.namespaceConnects) namespace connects, "
                + "\(stats.eventsReceived) events, \(stats.packetsBroadcast) packets broadcast, \(stats.protocolErrors) protocol errors"
                + (maxConnections != nil ? ", \(stats.connectionsRefused) refused by --max-connections" : ""))
        }
        if let stats = restServer?.statisticsSnapshot() {
            print("\(served) \(stats.requests) requests: \(stats.ok) ok, \(stats.notModified) not modified, \(stats.unauthorized) unauthorized, "
                + "\(stats.rateLimited) rate limited, \(stats.notFound) not found")
        }
        let refusals = [chatServer?.statisticsSnapshot().limits.acceptRefusals, hubServer?.statisticsSnapshot().limits.acceptRefusals,
                        socketIOServer?.statisticsSnapshot().limits.acceptRefusals, restServer?.statisticsSnapshot().limits.acceptRefusals]
        for case let r? in refusals where r.total > 0 {
            print("\(served) \(r.total) accepts refused (\(r.processDescriptorLimit) at the process's descriptor limit, \(r.systemDescriptorLimit) at the system's, "
                + "\(r.kernelMemory) for kernel memory), accepting resumed \(r.resumes) times")
        }
        loop.stop()
        loop.join()
    }

    /// `--max-connections`: the quota a server process maps from its supervisor's file, or one
    /// of its own for a lone server; nil without the flag.
    func connectionQuota() throws -> ConnectionQuota? {
        guard let maxConnections else { return nil }
        guard let connectionCountFile else { return ConnectionQuota(limit: maxConnections) }
        do { return try ConnectionQuota(limit: maxConnections, sharedFile: connectionCountFile, create: false) } catch {
            FileHandle.standardError.write(Data("error: server process \(processIndex ?? 0): \(error)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
    }

    /// Prints `message` as an error and returns exit code 2 (bad input) to throw.
    /// The output limit and timeouts from the flags (see `ServerLimits`); a value out of range
    /// names the flag (exit code 2, as every bad flag).
    func serverLimits() throws -> ServerLimits {
        var limits = ServerLimits()
        if let n = maxOutputBytes {
            guard (65536...(1 << 30)).contains(n) else { throw ValidationError("--max-output-bytes must be from 65536 to 1073741824") }
            limits.maxOutputBytes = n
        }
        func seconds(_ value: Double?, _ flag: String) throws -> Double? {
            guard let value else { return nil }
            guard value.isFinite, value >= 0.001, value <= ServerLimits.maxTimeout else {
                throw ValidationError("\(flag) must be a number of seconds from 0.001 to 3600")
            }
            return value
        }
        if let s = try seconds(sendTimeout, "--send-timeout") { limits.sendTimeout = s }
        if let s = try seconds(headerTimeout, "--header-timeout") { limits.headerTimeout = s }
        if let s = try seconds(idleTimeout, "--idle-timeout") { limits.idleTimeout = s }
        return limits
    }

    /// The REST target's configuration from the flags (nil without --rest); the path is set later.
    func restConfiguration() throws -> RestServer.Configuration? {
        guard rest else {
            var given: [String] = []
            if changeRate != nil { given.append("--change-rate") }
            if token != nil && !socketio && !hub { given.append("--token") }
            if tokenEnv != nil && !socketio && !hub { given.append("--token-env") }
            if rateLimit != nil { given.append("--rate-limit") }
            if bodySize != nil { given.append("--body-size") }
            if chunked { given.append("--chunked") }
            if !given.isEmpty { throw ValidationError("\(given.joined(separator: ", ")): REST flags, they need --rest") }
            return nil
        }
        var configuration = RestServer.Configuration()
        if let r = changeRate {
            guard r.isFinite, r >= 0 else { throw ValidationError("--change-rate must be a number >= 0") }
            configuration.changeRate = r
        }
        configuration.token = try requiredToken()
        if let n = rateLimit {
            guard n >= 1 else { throw ValidationError("--rate-limit must be >= 1") }
            configuration.rateLimit = n
        }
        if let b = bodySize {
            guard (0...RestServer.maxBodySize).contains(b) else { throw ValidationError("--body-size must be from 0 to \(RestServer.maxBodySize)") }
            configuration.bodySize = b
        }
        configuration.chunked = chunked
        return configuration
    }
}

extension Serve {
    /// --token or --token-env's token (nil: neither given).
    func requiredToken() throws -> String? {
        if token != nil && tokenEnv != nil { throw ValidationError("--token and --token-env are exclusive") }
        var required: String?
        if let t = token {
            guard !t.isEmpty else { throw ValidationError("--token must not be empty") }
            required = t
        }
        if let name = tokenEnv {
            // The token itself is never printed, not even in errors.
            guard let t = ProcessInfo.processInfo.environment[name], !t.isEmpty else {
                throw ValidationError("--token-env: the environment variable \(name) is not set or empty")
            }
            required = t
        }
        if let t = required, t.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F || $0 == 0x22 || $0 == 0x5C }) {
            throw ValidationError("the token must not contain spaces, quotes, backslashes or control characters")
        }
        return required
    }

    /// The Socket.IO server's configuration from the flags (nil without --socketio).
    func socketIOConfiguration(limits: ServerLimits) throws -> SocketIOServer.Configuration? {
        guard socketio else { return nil }
        var c = SocketIOServer.Configuration()
        if let pingInterval { c.pingInterval = Double(pingInterval) / 1000 }
        if let pingTimeout { c.pingTimeout = Double(pingTimeout) / 1000 }
        if let maxPayload { c.maxPayload = maxPayload }
        c.token = try requiredToken()
        c.limits = limits
        return c
    }
}

/// `stampede serve`'s TLS flags: a certificate and key from files, or a throw-away self-signed
/// certificate made at start. Every bad combination or file is a `ValidationError` naming the
/// flag (exit code 2).
struct ServeTLSOptions: ParsableArguments {
    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve TLS (wss://, https://) with this PEM certificate (its chain may follow it); needs --tls-key.", valueName: "file"))
    var certificate: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
    var key: String?

    @Flag(name: .customLong("tls-self-signed"), help: "Serve TLS with a throw-away self-signed certificate made at start (for localhost, 127.0.0.1, ::1 and --host); prints where the certificate is, for clients to trust.")
    var selfSigned = false

    @Option(name: .customLong("tls-cert-out"), help: ArgumentHelp("With --tls-self-signed: write the certificate (PEM) to this file instead of a temporary folder.", valueName: "file"))
    var certificateOut: String?

    /// Days a --tls-self-signed certificate stays valid (a server may run for a while).
    static let selfSignedDays = 30

    var isEnabled: Bool { certificate != nil || key != nil || selfSigned }

    func validate() throws {
        if selfSigned && (certificate != nil || key != nil) {
            throw ValidationError("--tls-self-signed and --tls-cert/--tls-key are exclusive")
        }
        if (certificate == nil) != (key == nil) {
            throw ValidationError(certificate == nil ? "--tls-key needs --tls-cert (give both)" : "--tls-cert needs --tls-key (give both)")
        }
        if certificateOut != nil && !selfSigned { throw ValidationError("--tls-cert-out needs --tls-self-signed") }
    }

    /// What the flags ask for, made: the server context (nil without TLS) and, for a self-signed
    /// certificate, the file a client trusts plus whether it is ours to remove at exit.
    struct Made {
        var context: TLSContext?
        var trustFile: URL?
        var removeAtExit = false
        /// The names and addresses a self-signed certificate is for.
        var names: [String] = []
    }

    /// Reads the files or makes the certificate. `host` is the --host address (added to a
    /// self-signed certificate's names).
    func make(host: String) throws -> Made {
        if let certificate, let key {
            let certificateText = try Self.read(certificate, flag: "--tls-cert")
            let keyText = try Self.read(key, flag: "--tls-key")
            do {
                return Made(context: try TLSContext(serverCertificatePEM: certificateText, privateKeyPEM: keyText))
            } catch {
                // TLSContext names the part that failed first: "certificate…" or "key…".
                if error.description.hasPrefix("key") {
                    throw ValidationError("--tls-key \(key): not a PEM private key, or not the key of --tls-cert \(certificate) (\(error.description))")
                }
                throw ValidationError("--tls-cert \(certificate): not a usable PEM certificate (\(error.description))")
            }
        }
        guard selfSigned else { return Made() }
        var addresses = ["127.0.0.1", "::1"]
        // An unspecified address (listen on all) is not one a client connects to.
        if !addresses.contains(host) && host != "0.0.0.0" && host != "::" { addresses.append(host) }
        let made: SelfSignedCertificate
        let context: TLSContext
        do {
            made = try SelfSignedCertificate(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: addresses, validDays: Self.selfSignedDays)
            context = try TLSContext(serverCertificatePEM: made.certificatePEM, privateKeyPEM: made.privateKeyPEM)
        } catch {
            throw ValidationError("--tls-self-signed: \(error.description)")
        }
        let file: URL
        var removeAtExit = false
        if let certificateOut {
            file = URL(fileURLWithPath: certificateOut)
        } else {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-serve-\(UUID().uuidString)")
            do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
                throw ValidationError("--tls-self-signed: cannot make a temporary folder \(folder.path): \(error.localizedDescription)")
            }
            file = folder.appendingPathComponent("certificate.pem")
            removeAtExit = true
        }
        do { try made.certificatePEM.write(to: file, atomically: true, encoding: .utf8) } catch {
            throw ValidationError("\(certificateOut != nil ? "--tls-cert-out" : "--tls-self-signed"): cannot write \(file.path): \(error.localizedDescription)")
        }
        return Made(context: context, trustFile: file, removeAtExit: removeAtExit, names: ["localhost"] + addresses)
    }

    /// The file's text; an error naming the flag and the file otherwise.
    static func read(_ path: String, flag: String) throws -> String {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { throw ValidationError("\(flag) \(path): no such file") }
        guard !isFolder.boolValue else { throw ValidationError("\(flag) \(path): is a folder, not a file") }
        // A PEM file is small; a huge one is a wrong file, not worth reading whole.
        let attributes = (try? FileManager.default.attributesOfItem(atPath: URL(fileURLWithPath: path).resolvingSymlinksInPath().path)) ?? [:]
        // A device or pipe (/dev/zero, a FIFO) could be read forever.
        guard attributes[.type] as? FileAttributeType == .typeRegular else { throw ValidationError("\(flag) \(path): not a regular file") }
        let size = attributes[.size] as? Int ?? 0
        guard size <= 1 << 20 else { throw ValidationError("\(flag) \(path): larger than 1 MiB, not a PEM file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("\(flag) \(path): cannot read it (permissions?)") }
        return String(decoding: data, as: UTF8.self)
    }
}
