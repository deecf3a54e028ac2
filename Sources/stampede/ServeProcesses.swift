import ArgumentParser
import Foundation
import StampedeLoop
import StampedeServers
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// `stampede serve --processes N`: a supervisor and N server processes (this same executable,
// with the internal --process-index and --process-link) that share one port with SO_REUSEPORT,
// so the kernel spreads new connections over them and each holds its share within its own
// open-file limit. The supervisor:
// - reserves the port first (a bound, not listening, SO_REUSEPORT socket: port 0 becomes one
//   port every process then binds), and makes a --tls-self-signed certificate once, for all;
// - links to every process over a Unix-domain socket in a folder only this user can enter
//   (`ServerGroup`): chat broadcasts cross it, so every client of every process gets every
//   broadcast once; faults from --admin-port reach every process; statistics are summed;
// - prints the usual "listening on …" and "admin on …" lines once, when every process listens;
// - ends them all on SIGINT/SIGTERM or --max-seconds, and, when one of them dies, says which and
//   ends the others (exit 1). The processes end with it however it ends (PR_SET_PDEATHSIG).
extension Serve {
    func runSupervisor(at: SocketAddress, shownHost: String, path: String) throws {
        if socketio {
            FileHandle.standardError.write(Data("note: --socketio with --processes: clients must use the WebSocket transport only (transports: [websocket]); a long-polling session is known only to the process that answered its handshake, and without sticky sessions its next request may reach another; `said` broadcasts reach the clients of every process\n".utf8))
        }
        if hub {
            FileHandle.standardError.write(Data("note: --hub with --processes: clients must use WebSockets and skip negotiation (a negotiated connection id is known only to the process that answered the negotiate, as with ASP.NET Core SignalR without sticky sessions); broadcasts and groups reach the clients of every process\n".utf8))
        }
        // A private folder for the link socket (and a self-signed key): mode 0700.
        var template = Array((FileManager.default.temporaryDirectory.path + "/stampede-serve-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw failure("cannot make a private temporary folder: \(String(cString: strerror(errno)))") }
        let folder = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        let reservation = try reservePort(at)
        defer { Glibc.close(reservation.fd) }
        let port = reservation.port
        let (tlsArguments, trustLine) = try processTLS(folder: folder)
        // --max-connections: one count for all processes, in a file each of them maps.
        let countFile = folder + "/connections"
        var quota: ConnectionQuota?
        if let maxConnections {
            do { quota = try ConnectionQuota(limit: maxConnections, sharedFile: countFile, create: true) } catch {
                throw failure("cannot make the shared connection count: \(error)")
            }
        }

        let group: ServerGroup
        do { group = try ServerGroup(socketPath: folder + "/link.sock", count: processes, supportsDelay: !hub && !socketio) } catch {
            throw failure("cannot make the link between server processes: \(error)")
        }
        installSignalHandlers()
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var children: [Process] = []
        defer { Self.stop(children) }
        for i in 0..<processes {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: executable)
            p.arguments = processArguments(index: i, port: port, path: path, link: folder + "/link.sock") + tlsArguments
                + (quota != nil ? ["--connection-count-file", countFile] : [])
            if let token {
                // Not on the children's command lines (ps shows those to every user).
                p.environment = ProcessInfo.processInfo.environment.merging([Self.tokenVariable: token]) { $1 }
            }
            p.standardInput = FileHandle.nullDevice
            do { try p.run() } catch { throw failure("cannot start server process \(i): \(error)") }
            children.append(p)
        }
        if let problem = group.awaitProcesses(timeoutSeconds: 30, stillFine: {
            if interrupt.isRaised { return "interrupted while the server processes started" }
            return Self.ended(children).map { "\($0) before it listened" }
        }) {
            throw failure(problem)
        }
        defer { group.stop() }
        var admin: TargetAdmin?
        if let adminPort {
            do { admin = try TargetAdmin(target: group, address: .ipv4(0x7F00_0001, port: UInt16(adminPort))) } catch {
                throw failure("cannot start the admin endpoint on 127.0.0.1:\(adminPort): \(error)")
            }
        }
        defer { admin?.stop() }
        let s = tls.isEnabled ? "s" : ""
        if rest {
            print("listening on http\(s)://\(shownHost):\(port)\(path) (REST)")
        } else if hub {
            print("listening on http\(s)://\(shownHost):\(port)\(path) (SignalR hub)")
        } else if socketio {
            print("listening on http\(s)://\(shownHost):\(port)\(path) (Socket.IO)")
        } else {
            print("listening on ws\(s)://\(shownHost):\(port)\(path)")
        }
        print("processes: \(processes) server processes (pids \(children.map { String($0.processIdentifier) }.joined(separator: ", "))) share port \(port) (SO_REUSEPORT)")
        if let trustLine { print(trustLine) }
        if let admin { print("admin on http://127.0.0.1:\(admin.port)") }
        fflush(nil)

        let start = Date()
        var died: String?
        while !interrupt.isRaised && (maxSeconds <= 0 || Date().timeIntervalSince(start) < maxSeconds) {
            if let ended = Self.ended(children) { died = ended; break }
            if let i = group.lostProcess {
                // Its link went: it is ending, or cannot take part any more.
                Thread.sleep(forTimeInterval: 0.2)
                died = Self.ended(children) ?? "server process \(i) (pid \(children[i].processIdentifier)) lost its link"
                break
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        if let died {
            throw failure("\(died); stopping the other server processes")
        }
        if !rest && !hub && !socketio, let json = totalStatus(group), let total = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] {
            func n(_ key: String) -> Int { (total[key] as? NSNumber)?.intValue ?? 0 }
            print("served (\(processes) processes): \(n("upgraded")) connections, \(n("messagesReceived")) messages received, \(n("framesBroadcast")) frames broadcast, \(n("invalidMessages")) invalid"
                + (maxConnections != nil ? ", \(n("connectionsRefused")) refused by --max-connections" : "")
                + (connectionCost != nil ? ", \(n("connectionCostSpunMicroseconds") / 1000) ms spent by --connection-cost" : ""))
        }
        if (hub || socketio) && maxConnections != nil, let json = totalStatus(group),
           let total = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] {
            print("served (\(processes) processes): \((total["connectionsRefused"] as? NSNumber)?.intValue ?? 0) refused by --max-connections")
        }
        fflush(nil)
    }

    /// When the supervisor started (Unix seconds): REST versions count from it in every process.
    static let epoch = Date().timeIntervalSince1970

    /// The environment variable that carries --token to the server processes.
    static let tokenVariable = "STAMPEDE_SERVE_PROCESS_TOKEN"

    /// Prints `message` as an error; the error to throw (exit 1, a run that failed).
    func failure(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
        return ExitCode(ExitStatus.runFailed)
    }

    /// Binds (without listening) an SO_REUSEPORT socket to `at`: the port is ours to share, and
    /// port 0 becomes the one port every server process binds.
    func reservePort(_ at: SocketAddress) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(at.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        if at.isIPv6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        guard at.bind(fd) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw failure("cannot listen on \(at): bind: \(String(cString: strerror(e)))")
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        // sin_port and sin6_port sit at the same offset, in network order.
        let port = withUnsafeBytes(of: &address) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
        return (fd, port)
    }

    /// The TLS flags for the server processes, and the line to print about a self-signed
    /// certificate: one certificate for all of them, made here (its key in the private folder).
    func processTLS(folder: String) throws -> (arguments: [String], trustLine: String?) {
        if let certificate = tls.certificate, let key = tls.key { return (["--tls-cert", certificate, "--tls-key", key], nil) }
        guard tls.selfSigned else { return ([], nil) }
        var addresses = ["127.0.0.1", "::1"]
        if !addresses.contains(host) && host != "0.0.0.0" && host != "::" { addresses.append(host) }
        let made: SelfSignedCertificate
        do { made = try SelfSignedCertificate(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: addresses, validDays: ServeTLSOptions.selfSignedDays) } catch {
            throw ValidationError("--tls-self-signed: \(error.description)")
        }
        let keyFile = folder + "/key.pem"
        let certificateFile = tls.certificateOut ?? folder + "/certificate.pem"
        guard FileManager.default.createFile(atPath: keyFile, contents: Data(made.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw failure("cannot write the self-signed key to \(keyFile)")
        }
        do { try made.certificatePEM.write(toFile: certificateFile, atomically: true, encoding: .utf8) } catch {
            throw ValidationError("\(tls.certificateOut != nil ? "--tls-cert-out" : "--tls-self-signed"): cannot write \(certificateFile): \(error.localizedDescription)")
        }
        return (["--tls-cert", certificateFile, "--tls-key", keyFile],
                "TLS: self-signed certificate for \((["localhost"] + addresses).joined(separator: ", ")); clients trust it with \(certificateFile)")
    }

    /// Server process `index`'s command line: this one's flags, on the reserved port.
    func processArguments(index: Int, port: UInt16, path: String, link: String) -> [String] {
        var a = ["serve", "--host", host, "--port", String(port), "--path", path,
                 "--processes", String(processes), "--process-index", String(index), "--process-link", link]
        if hub { a.append("--hub") }
        if socketio { a.append("--socketio") }
        if let pingInterval { a += ["--ping-interval", String(pingInterval)] }
        if let pingTimeout { a += ["--ping-timeout", String(pingTimeout)] }
        if let maxPayload { a += ["--max-payload", String(maxPayload)] }
        if rest { a += ["--rest", "--rest-epoch", "\(Self.epoch)"] }
        if let changeRate { a += ["--change-rate", "\(changeRate)"] }
        if token != nil { a += ["--token-env", Self.tokenVariable] }
        if let tokenEnv { a += ["--token-env", tokenEnv] }
        if let rateLimit { a += ["--rate-limit", String(rateLimit)] }
        if let bodySize { a += ["--body-size", String(bodySize)] }
        if chunked { a.append("--chunked") }
        if let delay { a += ["--delay", delay] }
        if let maxRate { a += ["--max-rate", "\(maxRate)"] }
        if echo { a += ["--echo"] }
        if let maxConnections { a += ["--max-connections", String(maxConnections)] }
        if let connectionCost { a += ["--connection-cost", "\(connectionCost)"] }
        if let maxOutputBytes { a += ["--max-output-bytes", String(maxOutputBytes)] }
        if let sendTimeout { a += ["--send-timeout", "\(sendTimeout)"] }
        if let headerTimeout { a += ["--header-timeout", "\(headerTimeout)"] }
        if let idleTimeout { a += ["--idle-timeout", "\(idleTimeout)"] }
        return a
    }

    /// The statistics of every process summed (`ServerGroup.status`), waiting at most 3 s.
    func totalStatus(_ group: ServerGroup) -> String? {
        let box = Mutex<String?>(nil)
        group.loop.execute { _ in group.status { json in box.withLock { $0 = json } } }
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline {
            if let json = box.withLock({ $0 }) { return json }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// Which server process has ended, and how, or nil while all run.
    static func ended(_ children: [Process]) -> String? {
        for (i, p) in children.enumerated() where !p.isRunning {
            let how = p.terminationReason == .uncaughtSignal ? "was killed by signal \(p.terminationStatus)" : "exited with status \(p.terminationStatus)"
            return "server process \(i) (pid \(p.processIdentifier)) \(how)"
        }
        return nil
    }

    /// SIGTERM to every server process still running, SIGKILL to any left after 5 s; waits for all.
    static func stop(_ children: [Process]) {
        for p in children where p.isRunning { kill(p.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        while children.contains(where: { $0.isRunning }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        for p in children where p.isRunning { kill(p.processIdentifier, SIGKILL) }
        for p in children { p.waitUntilExit() }
    }
}
