import assert from "node:assert/strict";
import {
  browserRequestRefusal,
  hostOfHeader,
  playgroundHosts,
  RateLimiter,
} from "../server/browser_guard.ts";
import { silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { loadConfig } from "../server/config.ts";

const offer = (headers: Record<string, string>, url = "http://127.0.0.1:6210/webrtc/offer") =>
  new Request(url, { method: "POST", headers, body: "{}" });

Deno.test("playgroundHosts: loopback, the listen address, interfaces on a wildcard, extras", () => {
  const ifs = [{ address: "192.0.2.2" }, { address: "fd00::2" }];
  assert.deepEqual([...playgroundHosts("127.0.0.1", ifs, [])].sort(), [
    "127.0.0.1",
    "[::1]",
    "localhost",
  ]);
  assert.ok(playgroundHosts("192.0.2.9", ifs, []).has("192.0.2.9"));
  assert.ok(!playgroundHosts("192.0.2.9", ifs, []).has("192.0.2.2"));
  const wild = playgroundHosts("0.0.0.0", ifs, ["Agent.LAN"]);
  assert.ok(wild.has("192.0.2.2") && wild.has("[fd00::2]") && wild.has("agent.lan"));
  assert.ok(!wild.has("0.0.0.0"));
});

Deno.test("hostOfHeader: names, ports, IPv6; junk is undefined", () => {
  assert.equal(hostOfHeader("LocalHost:6210"), "localhost");
  assert.equal(hostOfHeader("[::1]:80"), "[::1]");
  assert.equal(hostOfHeader("192.0.2.2"), "192.0.2.2");
  assert.equal(hostOfHeader("evil.example/x"), undefined);
  assert.equal(hostOfHeader("a b"), undefined);
  assert.equal(hostOfHeader(null), undefined);
});

Deno.test("browserRequestRefusal: DNS rebinding and cross-site offers are refused", () => {
  const hosts = playgroundHosts("127.0.0.1", [], []);
  // The page's own offer.
  assert.equal(
    browserRequestRefusal(
      offer({ host: "127.0.0.1:6210", origin: "http://127.0.0.1:6210" }),
      hosts,
      true,
    ),
    undefined,
  );
  // curl / a script: no Origin, not a browser acting for a site.
  assert.equal(browserRequestRefusal(offer({ host: "localhost:6210" }), hosts, true), undefined);
  // Another site's page posting through the visitor's browser.
  assert.match(
    browserRequestRefusal(
      offer({ host: "127.0.0.1:6210", origin: "https://evil.example" }),
      hosts,
      true,
    )!,
    /cross-origin/,
  );
  assert.match(
    browserRequestRefusal(
      offer({ host: "127.0.0.1:6210", "sec-fetch-site": "cross-site" }),
      hosts,
      true,
    )!,
    /cross-site/,
  );
  // A rebound name: same origin as far as the browser knows, but not a name of this server.
  assert.match(
    browserRequestRefusal(
      offer({ host: "evil.example:6210", origin: "http://evil.example:6210" }),
      hosts,
      true,
    )!,
    /host name/,
  );
  assert.match(browserRequestRefusal(offer({ host: "bad host" }), hosts, true)!, /host name/);
  // A GET needs only the host check.
  assert.equal(
    browserRequestRefusal(new Request("http://127.0.0.1/", { headers: { origin: "x" } }), hosts),
    undefined,
  );
});

Deno.test("RateLimiter: a burst, then the sustained rate, per client", () => {
  let now = 0;
  const rl = new RateLimiter(3, 60, () => now);
  assert.deepEqual([rl.take("a"), rl.take("a"), rl.take("a"), rl.take("a")], [
    true,
    true,
    true,
    false,
  ]);
  assert.equal(rl.take("b"), true, "another client has its own bucket");
  now += 1000; // 60 a minute: one more a second
  assert.equal(rl.take("a"), true);
  assert.equal(rl.take("a"), false);
});

Deno.test("server: the playground and its offer route apply the guard; CSP forbids framing", async () => {
  const loaded = await loadConfig("examples/agent.yaml");
  assert.ok(loaded.ok);
  const app = await createAgentServer({
    config: loaded.config,
    env: () => undefined,
    logger: silentLogger,
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    const page = await fetch(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
    await page.body?.cancel();
    const cross = await fetch(`${base}/webrtc/offer`, {
      method: "POST",
      headers: { origin: "https://evil.example", "content-type": "application/json" },
      body: JSON.stringify({ sdp: "v=0" }),
    });
    assert.equal(cross.status, 403);
    assert.match((await cross.json()).error, /cross-origin/);
    assert.equal(app.calls.active, 0);
    // Rebinding: the handler sees a Host that is not this server's.
    const rebound = await app.handler(
      new Request(`http://evil.example:${server.addr.port}/`, {
        headers: { host: `evil.example:${server.addr.port}` },
      }),
    );
    assert.equal(rebound.status, 403);
    await rebound.body?.cancel();
    // Offers beyond the burst from one client are refused with 429 before any work.
    const codes: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await fetch(`${base}/webrtc/offer`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ sdp: "not sdp" }),
      });
      codes.push(r.status);
      await r.body?.cancel();
    }
    assert.deepEqual(codes.slice(0, 5), [400, 400, 400, 400, 400]);
    assert.equal(codes.at(-1), 429);
  } finally {
    await app.calls.drain(100);
    await server.shutdown();
  }
});
