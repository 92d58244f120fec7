import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// The dashboard's authority is its own page's (issue 30, attacks 2 and 3): a page served from
    /// another port of 127.0.0.1 (Tests/Fixtures/hostile_page.py), in the same headless Chromium
    /// that has the dashboard open, gets no token and cannot steer the broadcast; the dashboard
    /// under another host name (DNS rebinding) is refused; requests of another Origin or Host are
    /// refused; the token opens only what the page's buttons do.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct DashboardAuthorityTests {
        let livepush = BuiltProducts.path("livepush")

        private func temporary(_ name: String) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make(name)).path
        }

        private func startBroadcast(_ extra: [String] = [], dashboard: String = "0") throws
            -> (LiveBroadcast, url: String, port: Int, token: String)
        {
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: UniqueName.make("authkey")), "--display",
                try TestEnvironment.display(), "--region", "0,0,320,240", "--resolution", "320x240", "--no-mic",
                "--quiet", "--dashboard", dashboard, "--duration", "120",
            ] + extra)
            #expect(try broadcast.waitUntilPublishing())
            #expect(broadcast.command.waitForError("dashboard: http://127.0.0.1:"), "\(broadcast.command.errorSoFar)")
            let line = try #require(broadcast.command.errorSoFar.split(separator: "\n")
                .first { $0.contains("dashboard: http") })
            let url = String(line.split(separator: " ").last ?? "")
            let port = try #require(url.split(separator: ":").last?.split(separator: "/").first.flatMap { Int($0) }, "\(url)")
            let token = String(url.split(separator: "=").last ?? "")
            return (broadcast, url, port, token)
        }

        private func status(_ broadcast: LiveBroadcast) throws -> [String: Any] {
            let answer = try #require(try broadcast.ctl(["status"]).answer)
            return try #require(answer["result"] as? [String: Any])
        }

        /// `curl` with `headers`; the status code and the body.
        private func curl(_ method: String, _ url: String, _ headers: [String] = []) throws -> (code: Int, body: String) {
            let body = temporary("body")
            defer { try? FileManager.default.removeItem(atPath: body) }
            let result = try ProcessRunner.run("curl", ["-s", "-o", body, "-w", "%{http_code}", "-X", method]
                + headers.flatMap { ["-H", $0] } + [url])
            return (Int(result.standardOutput) ?? -1, (try? String(contentsOfFile: body, encoding: .utf8)) ?? "")
        }

        @Test(.timeLimit(.minutes(10)))
        func aPageOfAnotherPortOrHostNameCannotSeeOrSteerTheBroadcast() throws {
            let (broadcast, url, port, token) = try startBroadcast()
            let log = temporary("hostile") + ".log", portFile = temporary("hostile") + ".port"
            let snapshot = temporary("stolen") + ".png"
            let server = try ProcessRunner.start("python3", [Repository.path("Tests/Fixtures/hostile_page.py"), portFile, log])
            defer {
                if server.isRunning { kill(server.processIdentifier, SIGKILL) }
                _ = server.finish()
            }
            #expect(waitUntil(timeoutSeconds: 10) { FileManager.default.fileExists(atPath: portFile) })
            let attackerText = try String(contentsOfFile: portFile, encoding: .utf8)
            let attackerPort = try #require(Int(attackerText), "\(attackerText)")
            let attackerURL = "http://127.0.0.1:\(attackerPort)/attack.html?dash=\(port)&token=\(token)&snapshot=\(snapshot)"
            let shot = temporary("victim") + ".png"
            let check = try ProcessRunner.run("python3", [Repository.path("Tests/Fixtures/browser_check.py"), "attack", url,
                                                          attackerURL, shot], timeoutSeconds: 120)
            #expect(check.exitCode == 0, "\(check)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(check.standardOutput.utf8)) as? [String: Any],
                                    "\(check)")
            #expect(seen["victimLoaded"] as? Bool == true, "\(seen)")
            #expect(seen["attackDone"] as? Bool == true, "\(seen)")

            // The other server never received the token: no cookie of the dashboard reached it.
            let requests = try String(contentsOfFile: log, encoding: .utf8)
            #expect(requests.contains("/attack.html"), "\(requests)")
            let cookies = requests.split(separator: "\n").compactMap {
                ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["cookie"] as? String
            }
            #expect(cookies.isEmpty, "the browser sent another port cookies of the dashboard: \(cookies)")
            // Nothing the page tried had an effect.
            let state = try status(broadcast)
            #expect(state["paused"] as? Bool == false, "a page of another port paused the broadcast: \(seen["attack"] ?? "")")
            #expect((state["destinations"] as? [[String: Any]])?.count == 1, "a page of another port added a destination")
            #expect(!FileManager.default.fileExists(atPath: snapshot), "a page of another port wrote a snapshot")
            let attack = seen["attack"] as? [String: String] ?? [:]
            #expect(attack["readStatus"]?.hasPrefix("error") == true, "another origin read the status: \(attack)")
            #expect(attack["headerTokenPause"]?.hasPrefix("error") == true, "\(attack)")
            #expect(attack["preview"] == "refused", "another origin loaded the picture: \(attack)")
            // Under another host name (DNS rebinding), even with the token, nothing is served.
            #expect(seen["reboundDashboard"] as? Bool == false, "the dashboard ran under attacker.example: \(seen)")
            #expect((seen["reboundText"] as? String)?.contains("421") == true, "\(seen)")
            #expect(seen["reboundPause"] as? Int == 421, "\(seen)")
            #expect(try status(broadcast)["paused"] as? Bool == false)
            #expect(seen["victimStillWorks"] as? Bool == true, "the dashboard's own page stopped working: \(seen)")

            // Without a browser: another Origin or Host, or a command no button sends, is refused.
            let api = "http://127.0.0.1:\(port)/api/control"
            let tokenHeader = "X-LivePush-Token: \(token)"
            let evil = try curl("POST", api + "?command=pause", [tokenHeader, "Origin: http://evil.example"])
            #expect(evil.code == 403 && evil.body.contains("Origin"), "\(evil)")
            let rebound = try curl("POST", api + "?command=pause", [tokenHeader, "Host: attacker.example:\(port)"])
            #expect(rebound.code == 421 && rebound.body.contains("attacker.example"), "\(rebound)")
            let cookie = try curl("POST", api + "?command=pause", ["Cookie: livepush_token=\(token)"])
            #expect(cookie.code == 403, "a cookie alone is no token: \(cookie)")
            let query = try curl("POST", api + "?command=pause&token=\(token)")
            #expect(query.code == 403, "a POST takes its token from the header only: \(query)")
            #expect(try status(broadcast)["paused"] as? Bool == false)
            let add = try curl("POST", api + "?command=add&args=rtmp://127.0.0.1:9/live/x", [tokenHeader])
            #expect(add.code == 403 && add.body.contains("--dashboard-control all"), "\(add)")
            let snap = try curl("POST", api + "?command=snapshot&args=\(snapshot)", [tokenHeader])
            #expect(snap.code == 403, "\(snap)")
            #expect(!FileManager.default.fileExists(atPath: snapshot))
            // The page's own buttons work with the header, from its own origin.
            let pause = try curl("POST", api + "?command=pause", [tokenHeader, "Origin: http://127.0.0.1:\(port)"])
            #expect(pause.code == 200, "\(pause)")
            #expect(try status(broadcast)["paused"] as? Bool == true)
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
        }

        @Test func everyCommandIsOpenOnlyWhenTheUserSaysSo() throws {
            let (broadcast, _, port, token) = try startBroadcast(["--dashboard-control", "all"])
            let snapshot = temporary("allowed") + ".png"
            defer { try? FileManager.default.removeItem(atPath: snapshot) }
            let answer = try curl("POST", "http://127.0.0.1:\(port)/api/control?command=snapshot&args=\(snapshot)",
                                  ["X-LivePush-Token: \(token)"])
            #expect(answer.code == 200, "\(answer)")
            #expect(FileManager.default.fileExists(atPath: snapshot))
            #expect(broadcast.stop().exitCode == 0)
        }

        @Test func aNonLoopbackAddressIsRefusedUnlessTheUserSaysSo() throws {
            let refused = try ProcessRunner.run(livepush, ["push", "rtmp://127.0.0.1:9/live/k", "--dashboard", "0.0.0.0:0"])
            #expect(refused.exitCode == 2, "\(refused)")
            #expect(refused.standardError.contains("'--dashboard': 0.0.0.0 is not a loopback address: the page and its "
                + "token would travel in clear text over the network; add --dashboard-remote to serve it there anyway"),
                    "\(refused)")
            let (broadcast, _, _, _) = try startBroadcast(["--dashboard-remote"], dashboard: "0.0.0.0:0")
            #expect(broadcast.command.isRunning)
            #expect(broadcast.stop().exitCode == 0)
        }
    }
}
