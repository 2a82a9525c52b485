/**
 * Route guards: a route's guards run in order before its handler and the first refusal is the
 * answer; a guard that throws is a 500 like a handler; and the named guards of the agent server
 * (server/route_guards.ts) answer as their routes always did.
 */

import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { type Guard, jsonError, type Route, router } from "../server/router.ts";
import {
  bearerToken,
  enabledCarrier,
  type RefusalLog,
  websocketUpgrade,
} from "../server/route_guards.ts";

const opts = () => ({ maxBodyBytes: 1024, logger: memoryLogger() });

function guard(name: string, seen: string[], refuse?: number): Guard {
  return {
    name,
    check: () => {
      seen.push(name);
      return refuse === undefined ? undefined : jsonError(refuse, name);
    },
  };
}

Deno.test("guards run in order and the first refusal answers instead of the handler", async () => {
  const seen: string[] = [];
  const route: Route = {
    method: "GET",
    path: "/x",
    guards: [guard("a", seen), guard("b", seen, 403), guard("c", seen)],
    handler: () => {
      seen.push("handler");
      return new Response("ran");
    },
  };
  const res = await router([route], opts())(new Request("http://h/x"));
  assert.equal(res.status, 403);
  assert.deepEqual(await res.json(), { error: "b" });
  assert.deepEqual(seen, ["a", "b"]);
});

Deno.test("a request every guard lets through reaches the handler", async () => {
  const seen: string[] = [];
  const route: Route = {
    method: "GET",
    path: "/x",
    guards: [guard("a", seen), guard("b", seen)],
    handler: () => new Response("ran"),
  };
  const res = await router([route], opts())(new Request("http://h/x"));
  assert.equal(await res.text(), "ran");
  assert.deepEqual(seen, ["a", "b"]);
});

Deno.test("a guard that throws is a 500 with no stack trace, and is logged", async () => {
  const logger = memoryLogger();
  const route: Route = {
    method: "GET",
    path: "/x",
    guards: [{ name: "boom", check: () => Promise.reject(new Error("secret detail")) }],
    handler: () => new Response("ran"),
  };
  const res = await router([route], { maxBodyBytes: 1024, logger })(new Request("http://h/x"));
  assert.equal(res.status, 500);
  assert.deepEqual(await res.json(), { error: "internal error" });
  assert.equal(logger.records.some((r) => r.message === "handler failed"), true);
});

function serve(g: Guard, path = "/p/:carrier"): (req: Request) => Promise<Response> {
  const handle = router(
    [{ method: "POST", path, guards: [g], handler: () => new Response("ok") }],
    opts(),
  );
  return (req) => handle(req);
}

Deno.test("bearerToken: 404 while unset, 401 (logged) for a wrong token, through when right", async () => {
  const refusals: string[] = [];
  const log: RefusalLog = (reason, message) => refusals.push(`${reason}: ${message}`);
  const api: { token?: string } = {};
  const handle = serve(bearerToken(() => api.token, log, "off"), "/calls");
  const post = (auth?: string) =>
    handle(
      new Request("http://h/calls", {
        method: "POST",
        headers: auth ? { authorization: auth } : {},
      }),
    );
  const off = await post("Bearer x");
  assert.equal(off.status, 404);
  assert.deepEqual(await off.json(), { error: "off" });
  api.token = "s3cret";
  const bad = await post("Bearer nope");
  assert.equal(bad.status, 401);
  assert.equal(bad.headers.get("www-authenticate"), "Bearer");
  await bad.body?.cancel();
  assert.deepEqual(refusals, ["api_token: POST /calls refused: bad bearer token"]);
  assert.equal(await (await post("Bearer s3cret")).text(), "ok");
});

Deno.test("enabledCarrier and websocketUpgrade refuse as their routes did", async () => {
  const carrier = serve(enabledCarrier(["twilio"]));
  const off = await carrier(new Request("http://h/p/telnyx", { method: "POST" }));
  assert.equal(off.status, 404);
  assert.deepEqual(await off.json(), { error: "unknown or disabled carrier" });
  const unknown = await carrier(new Request("http://h/p/nope", { method: "POST" }));
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
  assert.equal(
    await (await carrier(new Request("http://h/p/twilio", { method: "POST" }))).text(),
    "ok",
  );
  const upgrade = serve(websocketUpgrade, "/ws");
  const plain = await upgrade(new Request("http://h/ws", { method: "POST" }));
  assert.equal(plain.status, 426);
  await plain.body?.cancel();
  const ws = await upgrade(
    new Request("http://h/ws", { method: "POST", headers: { upgrade: "WebSocket" } }),
  );
  assert.equal(await ws.text(), "ok");
});
