import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { HttpSessionSource } from "../server/session_http.ts";

/** A fake control plane recording every request. */
function controlPlane() {
  const seen: { method: string; path: string; auth: string | null; body: unknown }[] = [];
  const uploads = new Map<string, Uint8Array>();
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const auth = req.headers.get("authorization");
    if (req.method === "PUT") {
      uploads.set(url.pathname, new Uint8Array(await req.arrayBuffer()));
      seen.push({ method: "PUT", path: url.pathname, auth, body: req.headers.get("content-type") });
      return new Response(null, { status: 204 });
    }
    const body = await req.json();
    seen.push({ method: req.method, path: url.pathname, auth, body });
    if (auth !== "Bearer svc") return new Response("no", { status: 401 });
    if (body.token !== "tok") return Response.json({ error: "bad token" }, { status: 404 });
    const base: string = `http://127.0.0.1:${server.addr.port}`;
    switch (url.pathname) {
      case "/cp/runs/7/resolve":
        return Response.json({ provider: "gemini", brain_config: { a: 1 }, is_completed: false });
      case "/cp/runs/7/complete":
        return new Response(null, { status: 204 });
      case "/cp/runs/7/artifacts":
        return Response.json({
          upload_url: `${base}/up/${body.kind}`,
          public_url: `s3://b/${body.kind}`,
        });
      case "/cp/runs/7/node-tools":
        return Response.json({
          tools: [{
            name: "lookup",
            description: "Find",
            params: { type: "object", properties: {} },
          }],
        });
      case "/cp/runs/7/tool-call":
        return Response.json({ result: JSON.stringify({ found: body.args.q }) });
    }
    return new Response("?", { status: 404 });
  });
  return {
    seen,
    uploads,
    base: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}

Deno.test("HttpSessionSource speaks the documented contract", async () => {
  const cp = controlPlane();
  try {
    const s = new HttpSessionSource(`${cp.base}/cp/`, { bearer: "svc" });
    assert.deepEqual(await s.resolve(7, "tok"), {
      provider: "gemini",
      brainConfig: { a: 1 },
      isCompleted: false,
    });
    const target = await s.artifactUploadUrl(7, "tok", "recording");
    assert.equal(target.publicUrl, "s3://b/recording");
    await s.putBytes(target.uploadUrl, new Uint8Array([1, 2, 3]), "audio/wav");
    assert.deepEqual(cp.uploads.get("/up/recording"), new Uint8Array([1, 2, 3]));
    assert.deepEqual((await s.nodeTools(7, "tok", "n1")).map((t) => t.name), ["lookup"]);
    assert.equal(await s.toolCall(7, "tok", "n1", "lookup", { q: "x" }), '{"found":"x"}');
    await s.complete(7, "tok", { usage: {}, collectedVars: { b: 2 } });
    const complete = cp.seen.find((r) => r.path === "/cp/runs/7/complete")!;
    assert.deepEqual(complete.body, {
      token: "tok",
      finalize: { usage: {}, collectedVars: { b: 2 } },
    });
    assert.ok(cp.seen.filter((r) => r.method === "POST").every((r) => r.auth === "Bearer svc"));
    assert.ok(cp.seen.every((r) => !r.path.includes("tok")), "the call token never goes in a URL");
  } finally {
    await cp.close();
  }
});

Deno.test("HttpSessionSource: refusals and bad replies are FlowcatErrors", async () => {
  const cp = controlPlane();
  try {
    const noAuth = new HttpSessionSource(`${cp.base}/cp`);
    await assert.rejects(
      noAuth.resolve(7, "tok"),
      (e) => e instanceof FlowcatError && e.kind === "auth",
    );
    const s = new HttpSessionSource(`${cp.base}/cp`, { bearer: "svc" });
    await assert.rejects(
      s.resolve(7, "wrong"),
      (e) => e instanceof FlowcatError && e.kind === "protocol",
    );
    await assert.rejects(s.resolve(8, "tok"), FlowcatError);
    const dead = new HttpSessionSource("http://127.0.0.1:1/cp", { timeoutMs: 500 });
    await assert.rejects(dead.resolve(7, "tok"), FlowcatError);
    assert.throws(() => new HttpSessionSource("file:///etc"), FlowcatError);
  } finally {
    await cp.close();
  }
});
