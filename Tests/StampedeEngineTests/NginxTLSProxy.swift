import Foundation
import StampedeTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// nginx from Debian (scripts/ensure-packages.sh installs it) terminating TLS on 127.0.0.1 in
/// front of one plain upstream on a loopback port: a third-party TLS server for chat
/// WebSockets, the hub (negotiate, WebSockets, SSE, long polling) and REST. Each proxy has its
/// own folder (config, pid, error log, temp paths), runs in the foreground as a child of the
/// test (`-g 'daemon off;'`), and is stopped and its folder removed by `stop()`.
final class NginxTLSProxy: @unchecked Sendable {
    static let executable = "/usr/sbin/nginx"
    let folder: URL
    /// The TLS port on 127.0.0.1.
    let port: Int
    let upstreamPort: Int
    private let process: BackgroundProcess

    /// Starts nginx with `certificates`' leaf in front of 127.0.0.1:`upstreamPort` and waits
    /// until its port accepts. `serverDirectives` go into the server block as they are.
    init(upstreamPort: Int, certificates: TestCertificates, serverDirectives: String = "") throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw PeerError("\(Self.executable) is missing: run scripts/ensure-packages.sh (Debian package nginx)")
        }
        self.upstreamPort = upstreamPort
        folder = temporaryFolder("nginx")
        var lastError = ""
        // The free port is found by binding and releasing it, so another process may take it
        // before nginx binds: a few tries, each bounded.
        for _ in 0..<3 {
            let port = unusedPort()
            let config = Self.configuration(folder: folder, port: port, upstreamPort: upstreamPort,
                                            certificates: certificates, serverDirectives: serverDirectives)
            let file = folder.appendingPathComponent("nginx.conf")
            try config.write(to: file, atomically: true, encoding: .utf8)
            let process = try BackgroundProcess(Self.executable, ["-p", folder.path + "/", "-e", folder.appendingPathComponent("error.log").path,
                                                                  "-c", file.path, "-g", "daemon off;"])
            if Self.waitUntilAccepting(port: port, while: process, timeout: 15) {
                self.port = port
                self.process = process
                return
            }
            process.stop()
            lastError = process.errors.withLock { $0 } + ((try? String(contentsOf: folder.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")
            if !lastError.contains("Address already in use") { break }
        }
        try? FileManager.default.removeItem(at: folder)
        throw PeerError("nginx did not start: \(lastError.suffix(2000))")
    }

    /// `scheme://127.0.0.1:port/path`, e.g. `url("wss", "/chat")`.
    func url(_ scheme: String, _ path: String) -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }

    /// What nginx logged (warnings and errors: upstream failures show up here).
    var errorLog: String { (try? String(contentsOf: folder.appendingPathComponent("error.log"), encoding: .utf8)) ?? "" }

    /// SIGTERM (nginx's fast shutdown: the master stops its workers), SIGKILL after 3 s; then
    /// any worker a killed master left behind, and the folder.
    func stop() {
        guard !stopped else { return }
        stopped = true
        let master = process.process.processIdentifier
        let workers = Self.children(of: master)
        process.stop()
        for pid in workers where Self.commandLine(of: pid).hasPrefix("nginx: worker") { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: folder)
    }
    private var stopped = false

    deinit { stop() }

    /// One `location /` serves every kind of request, because the hub's transports share one
    /// path: WebSocket upgrades get HTTP/1.1 and the Upgrade/Connection headers (RFC 6455
    /// §4.1; hop-by-hop headers are not forwarded otherwise), SSE and long polls are passed on
    /// unbuffered and may stay open long, and plain requests reuse upstream connections.
    static func configuration(folder: URL, port: Int, upstreamPort: Int, certificates: TestCertificates,
                              serverDirectives: String) -> String {
        let f = folder.path
        return """
            worker_processes 1;
            pid \(f)/nginx.pid;
            error_log \(f)/error.log warn;
            events { worker_connections 4096; }
            http {
                access_log off;
                client_body_temp_path \(f)/client_body;
                proxy_temp_path \(f)/proxy;
                fastcgi_temp_path \(f)/fastcgi;
                uwsgi_temp_path \(f)/uwsgi;
                scgi_temp_path \(f)/scgi;
                map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
                upstream stampede_upstream {
                    server 127.0.0.1:\(upstreamPort);
                    keepalive 64;
                    keepalive_requests 1000000;
                    keepalive_timeout 300s;
                }
                server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(certificates.certificateFile);
                    ssl_certificate_key \(certificates.keyFile);
                    ssl_protocols TLSv1.2 TLSv1.3;
                    ssl_session_cache shared:stampede:1m;
                    ssl_session_tickets on;
                    keepalive_requests 1000000;
                    keepalive_timeout 300s;
                    client_max_body_size 16m;
                    \(serverDirectives)
                    location / {
                        proxy_pass http://stampede_upstream;
                        proxy_http_version 1.1;
                        proxy_set_header Host $http_host;
                        proxy_set_header Upgrade $http_upgrade;
                        proxy_set_header Connection $connection_upgrade;
                        proxy_buffering off;
                        proxy_request_buffering off;
                        proxy_cache off;
                        proxy_read_timeout 300s;
                        proxy_send_timeout 300s;
                    }
                }
            }

            """
    }

    static func waitUntilAccepting(port: Int, while process: BackgroundProcess, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && process.process.isRunning {
            if let fd = connectLoopback(port: UInt16(port)) { close(fd); return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    /// The processes whose parent is `pid` (from /proc).
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { candidate in
            guard let stat = try? String(contentsOfFile: "/proc/\(candidate)/stat", encoding: .utf8),
                  let end = stat.lastIndex(of: ")") else { return false }
            // "pid (comm) state ppid …": the comm may hold spaces, so read after its ")".
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid
        }
    }

    static func commandLine(of pid: Int32) -> String {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return "" }
        return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }
}
