import Foundation
import Testing

/// `stampede serve` over TLS as third-party clients meet it: the Python `websockets` client
/// over wss://, curl over https:// (ETag revalidation, chunked bodies), signalrcore over
/// https:// + wss:// with each of its transports; and every bad TLS flag ending with exit 2.
/// Everything listens and connects on loopback only.
@Suite(.serialized) struct ServeTLSTests {
    /// A self-signed certificate for localhost and 127.0.0.1 made by the `openssl` command (not
    /// by Stampede, so the server is checked against a certificate it did not make), its key,
    /// and a second key that does not match it.
    struct Files {
        let folder = temporaryFolder("serve-tls")
        var certificate: String { folder.appendingPathComponent("cert.pem").path }
        var key: String { folder.appendingPathComponent("key.pem").path }
        var otherKey: String { folder.appendingPathComponent("other-key.pem").path }

        init() throws {
            let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=localhost"]
            for (key, cert) in [("key.pem", "cert.pem"), ("other-key.pem", "other-cert.pem")] {
                let r = try runProcess("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", key, "-out", cert,
                                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], timeout: 20, cwd: folder)
                guard r.status == 0 else { throw PeerError("openssl req: \(r.stderr)") }
            }
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    /// Starts `stampede serve` with `arguments` on a free port; returns it and its "listening on" URL.
    static func serve(_ arguments: [String]) throws -> (BackgroundProcess, String) {
        let p = try BackgroundProcess(stampedeBinary.path, ["serve", "--port", "0", "--max-seconds", "60"] + arguments)
        let line = try p.waitForLine(prefix: "listening on ", timeout: 20)
        let url = String(line.dropFirst("listening on ".count).prefix { $0 != " " })
        return (p, url)
    }

    /// The URL with its host replaced (the certificate names both localhost and 127.0.0.1).
    static func url(_ url: String, host: String) -> String {
        url.replacingOccurrences(of: "127.0.0.1", with: host)
    }

    @Test func pythonWebsocketsClientChatsOverWSSWithACertificateFromFiles() throws {
        let files = try Files()
        defer { files.remove() }
        let (serve, url) = try Self.serve(["--tls-cert", files.certificate, "--tls-key", files.key])
        defer { serve.stop() }
        #expect(url.hasPrefix("wss://127.0.0.1:"))
        #expect(url.hasSuffix("/chat"))
        // An ssl context trusting only our certificate; the name checked is the URL's (localhost).
        let script = """
            import asyncio, json, ssl, sys, websockets
            async def main(url, ca):
                context = ssl.create_default_context(cafile=ca)
                async with websockets.connect(url, ssl=context, open_timeout=10, proxy=None) as ws:
                    await ws.send(json.dumps({"message": "hello over tls", "user": "py", "userID": "py-1"}))
                    print(await asyncio.wait_for(ws.recv(), 10))
            asyncio.run(main(sys.argv[1], sys.argv[2]))
            """
        let r = try runProcess(try peerPython("websockets"), ["-c", script, Self.url(url, host: "localhost"), files.certificate], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        let reply = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(reply?["message"] as? String == "hello over tls")
        #expect(reply?["userID"] as? String == "py-1")
        #expect(reply?["id"] != nil)
    }

    @Test func curlGetsChunkedTwoHundredThenNotModifiedOverHTTPS() throws {
        let files = try Files()
        defer { files.remove() }
        let (serve, url) = try Self.serve(["--rest", "--chunked", "--change-rate", "0", "--tls-cert", files.certificate, "--tls-key", files.key])
        defer { serve.stop() }
        #expect(url.hasPrefix("https://127.0.0.1:"))
        let resource = url + "/items/1"
        let first = try runProcess("/usr/bin/curl", ["-sS", "-i", "--http1.1", "--noproxy", "*", "--max-time", "10", "--cacert", files.certificate, resource], timeout: 20)
        #expect(first.status == 0, "\(first.stderr)")
        let head = first.stdout.lowercased()
        #expect(head.hasPrefix("http/1.1 200"))
        #expect(head.contains("transfer-encoding: chunked"))
        // curl decoded the chunks: the body is whole JSON.
        let body = first.stdout.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        #expect((try? JSONSerialization.jsonObject(with: Data(body.utf8))) != nil, "body: \(body.prefix(300))")
        let etag = try #require(first.stdout.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }?.dropFirst(5)
            .trimmingCharacters(in: .whitespaces))
        let second = try runProcess("/usr/bin/curl", ["-sS", "-i", "--http1.1", "--noproxy", "*", "--max-time", "10", "--cacert", files.certificate,
                                                      "-H", "If-None-Match: \(etag)", Self.url(resource, host: "localhost")], timeout: 20)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.lowercased().hasPrefix("http/1.1 304"), "\(second.stdout.prefix(300))")
    }

    @Test func aChainAfterTheCertificateIsSentSoClientsTrustingOnlyTheRootVerify() throws {
        let folder = temporaryFolder("serve-tls-chain")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Root → intermediate → leaf; the server's file holds the leaf, then the intermediate.
        let make = """
            set -e
            ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            ca="basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
            openssl req -x509 $ec -keyout root.key -out root.pem -days 2 -subj /CN=Root -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
            openssl req $ec -keyout int.key -out int.csr -subj /CN=Intermediate
            printf "$ca" > int.ext
            openssl x509 -req -in int.csr -CA root.pem -CAkey root.key -CAcreateserial -out int.pem -days 2 -extfile int.ext
            openssl req $ec -keyout leaf.key -out leaf.csr -subj /CN=localhost
            printf "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n" > leaf.ext
            openssl x509 -req -in leaf.csr -CA int.pem -CAkey int.key -CAcreateserial -out leaf.pem -days 2 -extfile leaf.ext
            cat leaf.pem int.pem > chain.pem
            """
        let made = try runProcess("/bin/bash", ["-c", make], timeout: 30, cwd: folder)
        try #require(made.status == 0, "\(made.stderr)")
        let (serve, url) = try Self.serve(["--rest", "--tls-cert", folder.appendingPathComponent("chain.pem").path,
                                           "--tls-key", folder.appendingPathComponent("leaf.key").path])
        defer { serve.stop() }
        let r = try runProcess("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "*", "--max-time", "10",
                                                 "--cacert", folder.appendingPathComponent("root.pem").path, Self.url(url, host: "localhost") + "/x"], timeout: 20)
        #expect(r.status == 0 && r.stdout == "200", "\(r.stdout) \(r.stderr)")
    }

    @Test func signalrcoreReachesTheHubOverHTTPSAndWSSOnEveryTransport() throws {
        let (serve, url) = try Self.serve(["--hub", "--tls-self-signed"])
        defer { serve.stop() }
        #expect(url.hasPrefix("https://127.0.0.1:"))
        // Without --tls-cert-out the certificate sits in a temporary folder, named in the output.
        let line = try serve.waitForLine(prefix: "TLS: self-signed certificate", timeout: 5)
        let trust = try #require(line.components(separatedBy: "clients trust it with ").last)
        #expect(FileManager.default.fileExists(atPath: trust))
        let python = try peerPython("signalrcore")
        let driver = repositoryRoot.appendingPathComponent("Tests/peers/signalr_clients_signalrcore.py").path
        // signalrcore verifies with Python's default context, which reads SSL_CERT_FILE: the
        // certificate is the only one it trusts. Long polling with JSON can only do one message
        // at a time in signalrcore 1.0.2 (see the driver), hence echo there.
        for (transport, scenario) in [("websockets", "broadcast"), ("sse", "broadcast"), ("longpolling", "echo")] {
            let r = try runProcess("/usr/bin/env", ["SSL_CERT_FILE=\(trust)", python, driver, "--url", Self.url(url, host: "localhost"), "--transport", transport,
                                                    "--clients", "2", "--messages", "3", "--timeout", "20", "--scenario", scenario], timeout: 40)
            #expect(r.status == 0 && r.stdout.contains("\"ok\":true"), "\(transport): \(r.stdout.suffix(1500)) \(r.stderr.suffix(1500))")
        }
        serve.stop()
        #expect(serve.process.terminationStatus == 0)
        // The throw-away certificate leaves with the server.
        #expect(!FileManager.default.fileExists(atPath: trust))
    }

    @Test func selfSignedCertificateGoesToTheNamedFileAndCoversTheHostAddress() throws {
        let folder = temporaryFolder("serve-tls-out")
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("served.pem").path
        let (serve, url) = try Self.serve(["--host", "::1", "--tls-self-signed", "--tls-cert-out", out])
        defer { serve.stop() }
        #expect(url.hasPrefix("wss://[::1]:"))
        let text = try runProcess("/usr/bin/openssl", ["x509", "-noout", "-ext", "subjectAltName", "-in", out], timeout: 20)
        #expect(text.stdout.contains("DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"), "\(text.stdout)")
        // openssl s_client completes a verified handshake trusting that file.
        let port = try #require(url.split(separator: ":").last?.prefix { $0.isNumber })
        let check = try runProcess("/bin/bash", ["-c", "echo | timeout 10 openssl s_client -connect '[::1]:\(port)' -CAfile '\(out)' -verify_return_error -verify_ip ::1 2>&1"], timeout: 20)
        #expect(check.stdout.contains("Verify return code: 0 (ok)"), "\(check.stdout.suffix(1500))")
        serve.stop()
        // A named file is the user's: it stays.
        #expect(FileManager.default.fileExists(atPath: out))
    }

    /// The bad TLS flags, each with a piece of the message it must print (exit 2, before listening).
    static let badFlags: [([String], String)] = [
        (["--tls-cert", "{cert}"], "--tls-cert needs --tls-key"),
        (["--tls-key", "{key}"], "--tls-key needs --tls-cert"),
        (["--tls-cert-out", "{folder}/x.pem"], "--tls-cert-out needs --tls-self-signed"),
        (["--tls-self-signed", "--tls-cert", "{cert}", "--tls-key", "{key}"], "--tls-self-signed and --tls-cert/--tls-key are exclusive"),
        (["--tls-cert", "{folder}/missing.pem", "--tls-key", "{key}"], "--tls-cert {folder}/missing.pem: no such file"),
        (["--tls-cert", "{cert}", "--tls-key", "{folder}"], "--tls-key {folder}: is a folder"),
        (["--tls-cert", "{key}", "--tls-key", "{key}"], "--tls-cert {key}: not a usable PEM certificate"),
        (["--tls-cert", "{cert}", "--tls-key", "{otherKey}"], "--tls-key {otherKey}: not a PEM private key, or not the key of --tls-cert {cert}"),
        (["--tls-self-signed", "--tls-cert-out", "{folder}/no/such/folder/x.pem"], "--tls-cert-out: cannot write"),
    ]

    @Test func badTLSFlagsExitTwoNamingTheFlagAndFile() throws {
        let files = try Files()
        defer { files.remove() }
        func fill(_ s: String) -> String {
            s.replacingOccurrences(of: "{cert}", with: files.certificate).replacingOccurrences(of: "{otherKey}", with: files.otherKey)
                .replacingOccurrences(of: "{key}", with: files.key).replacingOccurrences(of: "{folder}", with: files.folder.path)
        }
        for (flags, message) in Self.badFlags {
            let r = try runProcess(stampedeBinary.path, ["serve", "--port", "0", "--max-seconds", "5"] + flags.map(fill), timeout: 20)
            #expect(r.status == 2, "\(flags): \(r.stderr)")
            #expect(r.stderr.contains(fill(message)), "\(flags): \(r.stderr)")
            #expect(!r.stdout.contains("listening on"), "\(flags)")
        }
    }
}
