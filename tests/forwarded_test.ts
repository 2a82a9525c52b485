/**
 * The public origin behind a proxy: X-Forwarded-Proto / X-Forwarded-Host are believed from the
 * configured proxy addresses only, and only when well formed.
 */
import assert from "node:assert/strict";
import { forwardedOrigin, peerKey } from "../server/forwarded.ts";

const req = (headers: Record<string, string>) =>
  new Request("http://10.0.0.11:6210/telephony/answer/twilio?x=1", { headers });
const trusted = new Set(["10.0.0.5", "fd00::5"]);
const forwarded = { "x-forwarded-proto": "https", "x-forwarded-host": "Agent.Example.com" };

Deno.test("forwardedOrigin: a trusted proxy's headers give the public origin", () => {
  assert.equal(forwardedOrigin(req(forwarded), "10.0.0.5", trusted), "https://agent.example.com");
  assert.equal(forwardedOrigin(req(forwarded), "[FD00::5]", trusted), "https://agent.example.com");
  // Appended to: the last value is the trusted proxy's own; earlier ones came from its client.
  assert.equal(
    forwardedOrigin(
      req({
        "x-forwarded-proto": "http, https",
        "x-forwarded-host": "evil.example, a.example:8443",
      }),
      "10.0.0.5",
      trusted,
    ),
    "https://a.example:8443",
  );
  // A dual-stack listener sees an IPv4 proxy as ::ffff:a.b.c.d.
  assert.equal(
    forwardedOrigin(req(forwarded), "::ffff:10.0.0.5", trusted),
    "https://agent.example.com",
  );
  // Only the scheme forwarded: the Host header for the host.
  assert.equal(
    forwardedOrigin(req({ "x-forwarded-proto": "https", host: "lb.example" }), "10.0.0.5", trusted),
    "https://lb.example",
  );
});

Deno.test("forwardedOrigin: anyone else's headers are ignored", () => {
  assert.equal(forwardedOrigin(req(forwarded), "192.0.2.7", trusted), "http://10.0.0.11:6210");
  assert.equal(forwardedOrigin(req(forwarded), undefined, trusted), "http://10.0.0.11:6210");
  assert.equal(forwardedOrigin(req(forwarded), "10.0.0.5", new Set()), "http://10.0.0.11:6210");
});

Deno.test("forwardedOrigin: malformed forwarded values fall back to the request's own", () => {
  const bad = (host: string, proto = "https") =>
    forwardedOrigin(
      req({ "x-forwarded-proto": proto, "x-forwarded-host": host }),
      "10.0.0.5",
      trusted,
    );
  assert.equal(bad("evil.example/path"), "http://10.0.0.11:6210");
  assert.equal(bad("user@evil.example"), "http://10.0.0.11:6210");
  assert.equal(bad("a.example", "javascript"), "http://a.example", "unknown scheme: the request's");
  assert.equal(peerKey("[::1]"), "::1");
});
