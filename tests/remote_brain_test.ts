import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { memoryLogger } from "../core/log.ts";
import {
  BRAIN_UNAVAILABLE,
  type GraphSpec,
  parseGraphSpec,
  RemoteBrain,
} from "../core/agent/mod.ts";
import { serveBrain } from "../server/brain_server.ts";

const spec: GraphSpec = (() => {
  const res = parseGraphSpec(Deno.readTextFileSync("examples/graph.yaml"));
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.spec;
})();

const SESSION = {
  system_prompt: "p0",
  tools: [{ name: "go", description: "d", params: { type: "object", properties: {} } }],
  node_id: "n0",
  collected_vars: {},
};

/** A local fake brain: `reply` decides per request; every request is recorded. */
async function withFake(
  reply: (path: string, body: Record<string, unknown>) => Response | Promise<Response>,
  fn: (
    base: string,
    seen: { path: string; body: Record<string, unknown>; headers: Headers }[],
  ) => Promise<void>,
): Promise<void> {
  const seen: { path: string; body: Record<string, unknown>; headers: Headers }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const body = await req.json();
    seen.push({ path, body, headers: req.headers });
    return await reply(path, body);
  });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

const json = (v: unknown, status = 200) =>
  new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json" } });

async function rejectsWith(p: Promise<unknown>, kind: string, re: RegExp): Promise<void> {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof FlowcatError, `not a FlowcatError: ${e}`);
    assert.equal(e.kind, kind, e.message);
    assert.match(e.message, re);
    return true;
  });
}

Deno.test("against the real brain server: a whole booking", async () => {
  const server = serveBrain({ spec, port: 0 });
  try {
    const brain = await RemoteBrain.connect(`http://127.0.0.1:${server.addr.port}/`, {
      variables: { caller_name: "Ada" },
    }, "gemini");
    assert.equal(brain.currentNodeId(), "greeting");
    assert.match(brain.systemPrompt(), /Hi Ada/);
    assert.deepEqual(brain.tools().map((t) => t.name), [
      "wants_booking",
      "not_interested",
      "end_call",
    ]);

    const t1 = await brain.onToolCall("wants_booking", {});
    assert.equal(t1.type, "transition");
    assert.equal(t1.type === "transition" && t1.say, "Lovely, let's find you a table.");
    assert.equal(brain.currentNodeId(), "collect_details");

    assert.deepEqual(await brain.onToolCall("check_availability", { party_size: 2 }), {
      type: "stay",
    });
    const unknown = await brain.onToolCall("fly", {});
    assert.equal(unknown.type, "stay");
    assert.match(JSON.stringify(unknown), /unknown tool/);

    await brain.onToolCall("details_collected", { party_size: 2, date: "Sunday", time: "noon" });
    assert.equal(brain.currentNodeId(), "confirm");
    assert.match(brain.systemPrompt(), /table for 2 on Sunday at\s+noon/);
    const end = await brain.onToolCall("confirmed", {});
    assert.deepEqual(end, {
      type: "end",
      disposition: "booked",
      say: "You're all set, Ada. See you on Sunday at noon. Goodbye!",
    });
    assert.ok(brain.isFinished());
    assert.equal(brain.disposition(), "booked");
    assert.deepEqual(brain.collectedVars(), {
      caller_name: "Ada",
      party_size: 2,
      date: "Sunday",
      time: "noon",
    });
    assert.deepEqual(brain.tools(), brain.tools()); // stable after the end
  } finally {
    await server.shutdown();
  }
});

Deno.test("wire: snake_case bodies, JSON content type, caller headers", async () => {
  await withFake(
    (path) =>
      path.endsWith("/session") ? json({ ...SESSION, collected_vars: { a: 1 } }) : json({
        action: "transition",
        system_prompt: "p1",
        tools: [],
        node_id: "n1",
        collected_vars: { a: 2 },
        say: null,
      }),
    async (base, seen) => {
      const brain = await RemoteBrain.connect(`${base}/brain/`, { graph: "g" }, "openai", {
        headers: { authorization: "Bearer t0k" },
      });
      const a = await brain.onToolCall("go", { x: 1 });
      assert.deepEqual(a, { type: "transition", systemPrompt: "p1", tools: [], nodeId: "n1" }); // null say dropped
      assert.deepEqual(seen.map((s) => s.path), ["/brain/session", "/brain/tool-call"]);
      assert.deepEqual(seen[0].body, { brain_config: { graph: "g" }, provider: "openai" });
      assert.deepEqual(seen[1].body, {
        node_id: "n0",
        tool: { name: "go", args: { x: 1 } },
        collected_vars: { a: 1 },
      });
      assert.equal(seen[1].headers.get("authorization"), "Bearer t0k");
      assert.match(seen[1].headers.get("content-type")!, /application\/json/);
      assert.deepEqual(brain.collectedVars(), { a: 2 });
    },
  );
});

Deno.test("connect fails clearly: non-JSON, out of contract, HTTP 500, bad URL, refused", async () => {
  await withFake(() => new Response("<html>oops</html>"), async (base) => {
    await rejectsWith(RemoteBrain.connect(base, {}, "p"), "protocol", /not JSON/);
  });
  await withFake(
    () => json({ system_prompt: 1, tools: [{ description: "d", params: {} }], collected_vars: {} }),
    async (base) => {
      await rejectsWith(
        RemoteBrain.connect(base, {}, "p"),
        "protocol",
        /out of contract: system_prompt: .*tools\[0\]\.name: .*node_id: /,
      );
    },
  );
  await withFake(() => json({ error: "boom" }, 500), async (base) => {
    await rejectsWith(RemoteBrain.connect(base, {}, "p"), "protocol", /HTTP 500/);
  });
  await rejectsWith(RemoteBrain.connect("not a url", {}, "p"), "config", /invalid base URL/);
  await rejectsWith(RemoteBrain.connect("ftp://127.0.0.1/", {}, "p"), "config", /http or https/);
  // A port nothing listens on: bind one, free it, dial it.
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  await rejectsWith(
    RemoteBrain.connect(`http://127.0.0.1:${port}`, {}, "p"),
    "other",
    /request failed/,
  );
});

Deno.test("connect times out", async () => {
  const release = Promise.withResolvers<void>();
  await withFake(async () => {
    await release.promise;
    return json(SESSION);
  }, async (base) => {
    const t0 = performance.now();
    await rejectsWith(
      RemoteBrain.connect(base, {}, "p", { timeoutMs: 150 }),
      "timeout",
      /no reply within 150 ms/,
    );
    assert.ok(performance.now() - t0 < 2000);
    release.resolve();
  });
});

Deno.test("timeout holds even with an injected fetch that ignores the signal", async () => {
  let calls = 0;
  const never = () => {
    calls++;
    return new Promise<Response>(() => {});
  };
  await rejectsWith(
    RemoteBrain.connect("http://brain.invalid", {}, "p", { fetch: never, timeoutMs: 50 }),
    "timeout",
    /50 ms/,
  );
  assert.equal(calls, 1);
});

Deno.test("mid-call failures never drop the call: stay with an error result, logged, state kept", async () => {
  let mode = "ok";
  const release = Promise.withResolvers<void>();
  await withFake(async (path) => {
    if (path === "/session") return json(SESSION);
    switch (mode) {
      case "500":
        return json({ error: "down" }, 503);
      case "html":
        return new Response("not json");
      case "contract":
        return json({ action: "transition", system_prompt: "p", tools: [] }); // no node_id
      case "action":
        return json({ action: "dance" });
      case "slow":
        await release.promise;
        return json({ action: "stay" });
      default:
        return json({
          action: "transition",
          system_prompt: "p1",
          tools: [],
          node_id: "n1",
          collected_vars: { k: 1 },
        });
    }
  }, async (base) => {
    const log = memoryLogger();
    const brain = await RemoteBrain.connect(base, {}, "p", { logger: log, timeoutMs: 150 });
    const expect = [
      ["500", /HTTP 503/],
      ["html", /not JSON/],
      ["contract", /node_id/],
      ["action", /action: Invalid discriminator/],
      ["slow", /no reply within 150 ms/],
    ] as const;
    for (const [m, re] of expect) {
      mode = m;
      const a = await brain.onToolCall("go", {});
      assert.deepEqual(a, { type: "stay", result: BRAIN_UNAVAILABLE }, m);
      assert.equal(brain.currentNodeId(), "n0");
      assert.equal(brain.systemPrompt(), "p0");
      assert.equal(brain.isFinished(), false);
      const rec = log.records.at(-1)!;
      assert.equal(rec.level, "error");
      assert.match(String(rec.fields?.error), re, m);
    }
    release.resolve();
    mode = "ok";
    assert.equal((await brain.onToolCall("go", {})).type, "transition");
    assert.equal(brain.currentNodeId(), "n1");
    assert.equal(log.records.length, expect.length);
  });
});

Deno.test("tool calls are sent in order, each from the node the previous one left", async () => {
  let n = 0;
  await withFake(async (path, body) => {
    if (path === "/session") return json(SESSION);
    n++;
    if (n === 1) await new Promise((r) => setTimeout(r, 30)); // the first is slower
    return json({
      action: "transition",
      system_prompt: `after ${body.node_id}`,
      tools: [],
      node_id: `${body.node_id}+`,
      collected_vars: {},
    });
  }, async (base, seen) => {
    const brain = await RemoteBrain.connect(base, {}, "p");
    const [a, b] = await Promise.all([brain.onToolCall("go", {}), brain.onToolCall("go", {})]);
    assert.equal(a.type === "transition" && a.nodeId, "n0+");
    assert.equal(b.type === "transition" && b.nodeId, "n0++");
    assert.deepEqual(seen.slice(1).map((s) => s.body.node_id), ["n0", "n0+"]);
  });
});

Deno.test("end: recorded, and later calls stay without asking the brain", async () => {
  await withFake(
    (path) =>
      path === "/session"
        ? json(SESSION)
        : json({ action: "end", disposition: "done", collected_vars: { z: 1 } }),
    async (base, seen) => {
      const brain = await RemoteBrain.connect(base, {}, "p");
      assert.deepEqual(await brain.onToolCall("end_call", {}), {
        type: "end",
        disposition: "done",
      });
      assert.ok(brain.isFinished());
      assert.equal(brain.disposition(), "done");
      assert.deepEqual(brain.collectedVars(), { z: 1 });
      const after = await brain.onToolCall("go", {});
      assert.equal(after.type, "stay");
      assert.equal(seen.length, 2);
    },
  );
});
