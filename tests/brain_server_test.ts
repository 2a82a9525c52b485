import assert from "node:assert/strict";
import { type GraphSpec, parseGraphSpec } from "../core/agent/mod.ts";
import {
  BRAIN_PORT,
  type ErrorBody,
  main,
  type MainIo,
  MAX_BODY_BYTES,
  serveBrain,
  sessionReply,
  toolCallReply,
} from "../server/brain_server.ts";

const spec: GraphSpec = (() => {
  const res = parseGraphSpec(Deno.readTextFileSync("examples/graph.yaml"));
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.spec;
})();

async function withServer(fn: (base: string) => Promise<void>): Promise<void> {
  const server = serveBrain({ spec, port: 0 });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown();
  }
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function errorBody(res: Response, status: number): Promise<ErrorBody> {
  assert.equal(res.status, status);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = await res.json() as ErrorBody;
  assert.equal(typeof body.error, "string");
  assert.ok(Array.isArray(body.issues));
  return body;
}

Deno.test("BRAIN_PORT is the documented 8080", () => {
  assert.equal(BRAIN_PORT, 8080);
});

Deno.test("404, 405, 415 and 400 answers are JSON with issues", async () => {
  await withServer(async (base) => {
    await errorBody(await fetch(`${base}/nope`), 404);
    const wrong = await fetch(`${base}/session`);
    await errorBody(wrong, 405);
    assert.equal(wrong.headers.get("allow"), "POST");
    await errorBody(await post(`${base}/session`, "{}", { "content-type": "text/plain" }), 415);
    const notJson = await errorBody(await post(`${base}/session`, "{not json"), 400);
    assert.equal(notJson.issues.length, 1);
    const bad = await errorBody(
      await post(`${base}/tool-call`, { node_id: 7, tool: { args: [] } }),
      400,
    );
    const paths = bad.issues.map((i) => i.path).sort();
    assert.deepEqual(paths, ["node_id", "tool.args", "tool.name"]);
    const unknownNode = await errorBody(
      await post(`${base}/tool-call`, {
        node_id: "mars",
        tool: { name: "x", args: {} },
        collected_vars: {},
      }),
      400,
    );
    assert.deepEqual(unknownNode.issues, [{ path: "node_id", message: 'unknown node "mars"' }]);
    const seed = await errorBody(
      await post(`${base}/session`, {
        brain_config: { variables: { callr_name: "x" } },
        provider: "p",
      }),
      400,
    );
    assert.deepEqual(seed.issues.map((i) => i.path), ["brain_config.variables.callr_name"]);
    const health = await fetch(`${base}/health`);
    assert.deepEqual(await health.json(), { ok: true, nodes: spec.nodes.length });
  });
});

Deno.test("413 for bodies over the limit, declared or streamed", async () => {
  await withServer(async (base) => {
    const big = JSON.stringify({
      brain_config: { pad: "x".repeat(MAX_BODY_BYTES) },
      provider: "p",
    });
    await errorBody(await post(`${base}/session`, big), 413);
    // Chunked, no content-length: the limit is enforced while reading.
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (sent++ < 8) ctl.enqueue(chunk);
        else ctl.close();
      },
    });
    const res = await fetch(`${base}/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
    });
    await errorBody(res, 413);
    // Just under the limit is read (and then judged on content).
    const fits = JSON.stringify({
      brain_config: { pad: "x".repeat(MAX_BODY_BYTES - 100) },
      provider: "p",
    });
    assert.equal((await post(`${base}/session`, fits)).status, 200);
  });
});

Deno.test("full conversation through HTTP", async () => {
  await withServer(async (base) => {
    const start = await (await post(`${base}/session`, {
      brain_config: { variables: { caller_name: "Ada" } },
      provider: "gemini",
    })).json();
    assert.equal(start.node_id, "greeting");
    assert.match(start.system_prompt, /Hi Ada/);
    assert.deepEqual(start.tools.map((t: { name: string }) => t.name), [
      "wants_booking",
      "not_interested",
      "end_call",
    ]);
    assert.deepEqual(start.collected_vars, { caller_name: "Ada" });

    const call = async (
      node_id: string,
      name: string,
      args: Record<string, unknown>,
      collected_vars: Record<string, unknown>,
    ) =>
      await (await post(`${base}/tool-call`, { node_id, tool: { name, args }, collected_vars }))
        .json();

    const t1 = await call("greeting", "wants_booking", {}, start.collected_vars);
    assert.equal(t1.action, "transition");
    assert.equal(t1.node_id, "collect_details");
    assert.equal(t1.say, "Lovely, let's find you a table.");
    assert.equal(t1.finished, false);

    const wf = await call(t1.node_id, "check_availability", { party_size: 4 }, t1.collected_vars);
    assert.equal(wf.action, "stay");
    assert.equal(wf.result, undefined);

    const badArgs = await call(
      t1.node_id,
      "details_collected",
      { party_size: "four" },
      t1.collected_vars,
    );
    assert.equal(badArgs.action, "stay");
    assert.match(badArgs.result.error, /party_size: expected integer/);

    const t2 = await call(t1.node_id, "details_collected", {
      party_size: 4,
      date: "Friday",
      time: "8pm",
    }, t1.collected_vars);
    assert.equal(t2.node_id, "confirm");
    assert.deepEqual(t2.collected_vars, {
      caller_name: "Ada",
      party_size: 4,
      date: "Friday",
      time: "8pm",
    });
    assert.match(t2.system_prompt, /table for 4 on Friday at\s+8pm/);

    const end = await call(t2.node_id, "confirmed", {}, t2.collected_vars);
    assert.deepEqual(end, {
      action: "end",
      node_id: "booked",
      disposition: "booked",
      say: "You're all set, Ada. See you on Friday at 8pm. Goodbye!",
      collected_vars: t2.collected_vars,
      finished: true,
    });
  });
});

Deno.test("pure handlers answer without sockets", () => {
  const s = sessionReply(spec, { brain_config: {}, provider: "x" });
  assert.equal(s.status, 200);
  assert.equal((s.body as { node_id: string }).node_id, "greeting");
  assert.equal(sessionReply(spec, { provider: "x" }).status, 400);
  const t = toolCallReply(spec, {
    node_id: "greeting",
    tool: { name: "end_call", args: { disposition: "spam" } },
  });
  assert.deepEqual(t.body, {
    action: "end",
    node_id: "greeting",
    disposition: "spam",
    collected_vars: {},
    finished: true,
  });
});

function captureIo(): MainIo & { out_: string[]; err_: string[] } {
  const out_: string[] = [];
  const err_: string[] = [];
  return { out_, err_, out: (l) => void out_.push(l), err: (l) => void err_.push(l) };
}

Deno.test("main: --help, bad flags and a bad graph file (exit 2, every problem, no stack)", async () => {
  let io = captureIo();
  assert.equal(await main(["--help"], io), 0);
  assert.match(io.out_.join("\n"), /--graph FILE/);

  io = captureIo();
  assert.equal(await main(["--bogus"], io), 2);
  assert.match(io.err_.join("\n"), /usage:/);

  io = captureIo();
  assert.equal(await main(["--port", "99999"], io), 2);

  io = captureIo();
  assert.equal(await main(["--graph", ".tmp/does_not_exist.yaml"], io), 2);
  assert.match(io.err_.join("\n"), /cannot read graph/);

  await Deno.mkdir(".tmp", { recursive: true });
  const file = ".tmp/brain_server_test_bad.yaml";
  await Deno.writeTextFile(file, "start: nowhere\nnodes:\n  - id: a\n    prompt: '{{x}}'\n");
  io = captureIo();
  try {
    assert.equal(await main(["--graph", file], io), 2);
  } finally {
    await Deno.remove(file);
  }
  const text = io.err_.join("\n");
  assert.match(text, /start: unknown start node "nowhere"/);
  assert.match(text, /nodes\[0\]\.prompt: unknown variable/);
  assert.match(text, /nodes\[0\]\.transitions: node "a" is not terminal/);
  assert.doesNotMatch(text, /\bat .*\.ts:\d+/);
});

Deno.test("main serves until the signal aborts", async () => {
  const ctl = new AbortController();
  const io = captureIo();
  const listening = Promise.withResolvers<void>();
  const realOut = io.out;
  io.out = (l) => {
    realOut(l);
    listening.resolve();
  };
  const done = main(["--port", "0"], io, ctl.signal);
  await listening.promise;
  const port = Number(/:(\d+)$/.exec(io.out_[0])![1]);
  const res = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal(res.status, 200);
  await res.body?.cancel();
  ctl.abort();
  assert.equal(await done, 0);
});
