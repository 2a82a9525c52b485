/** providers/http.ts: provider fetch (deadline, retries, errors) and the SSE reader. */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { providerFetch, readSse, retryAfterMs } from "../providers/http.ts";

function serve(handler: (req: Request, n: number) => Response | Promise<Response>) {
  let n = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) => handler(req, ++n),
  );
  return { url: `http://127.0.0.1:${server.addr.port}/x`, close: () => server.shutdown() };
}

function streamOf(chunks: string[], gapMs = 0): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    async start(c) {
      for (const ch of chunks) {
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
        c.enqueue(enc.encode(ch));
      }
      c.close();
    },
  });
}

Deno.test("readSse: events split across chunks, CRLF, comments, multi-line data, unfinished tail", async () => {
  const body = streamOf([
    ": comment\r\n",
    'event: delta\r\ndata: {"a"',
    ":1}\r\n\r",
    "\ndata: line one\ndata: line two\nid: 7\n\n",
    "data:no-space\n\n",
    "data: tail",
  ]);
  const got = [];
  for await (const ev of readSse(body)) got.push(ev);
  assert.deepEqual(got, [
    { event: "delta", data: '{"a":1}' },
    { data: "line one\nline two", id: "7" },
    { data: "no-space", id: "7" }, // the last event id carries over
    // "data: tail" has no closing blank line: an unfinished event is dropped.
  ]);
});

Deno.test("readSse: an abort stops reading at once", async () => {
  const ctl = new AbortController();
  const body = streamOf(["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"], 50);
  const got: string[] = [];
  for await (const ev of readSse(body, ctl.signal)) {
    got.push(ev.data);
    ctl.abort();
  }
  assert.deepEqual(got, ["1"]);
});

Deno.test("providerFetch: 503 is retried (Retry-After honoured), then succeeds", async () => {
  const s = serve((_req, n) =>
    n < 3
      ? new Response("busy", { status: 503, headers: { "retry-after": "0" } })
      : new Response("ok")
  );
  try {
    const res = await providerFetch("acme", s.url, { method: "POST", body: "x" }, {
      backoffMs: 10,
    });
    assert.equal(await res.text(), "ok");
  } finally {
    await s.close();
  }
});

Deno.test("providerFetch: 401 is an auth error naming the provider, not retried", async () => {
  let calls = 0;
  const s = serve(() => {
    calls++;
    return new Response('{"error":"invalid key"}', { status: 401 });
  });
  try {
    await assert.rejects(
      providerFetch("acme", s.url, { headers: { authorization: "Bearer sk-secret" } }),
      (err) =>
        err instanceof FlowcatError && err.kind === "auth" &&
        /^acme: HTTP 401: .*invalid key/.test(err.message) && !err.message.includes("sk-secret"),
    );
    assert.equal(calls, 1);
  } finally {
    await s.close();
  }
});

Deno.test("providerFetch: no headers within the deadline is a timeout error", async () => {
  const s = serve(async () => {
    await new Promise((r) => setTimeout(r, 400));
    return new Response("late");
  });
  try {
    await assert.rejects(
      providerFetch("acme", s.url, {}, { timeoutMs: 50, retries: 0 }),
      (err) =>
        err instanceof FlowcatError && err.kind === "timeout" &&
        /acme: no answer/.test(err.message),
    );
  } finally {
    await new Promise((r) => setTimeout(r, 400));
    await s.close();
  }
});

Deno.test("providerFetch: a body streaming past the header deadline is not cut", async () => {
  const s = serve(() => new Response(streamOf(["a", "b", "c"], 80)));
  try {
    const res = await providerFetch("acme", s.url, {}, { timeoutMs: 100 });
    assert.equal(await res.text(), "abc");
  } finally {
    await s.close();
  }
});

Deno.test("retryAfterMs: seconds, dates and junk", () => {
  assert.equal(retryAfterMs("2"), 2000);
  assert.equal(retryAfterMs(null), undefined);
  assert.equal(retryAfterMs("soon"), undefined);
  assert.ok(retryAfterMs(new Date(Date.now() + 5000).toUTCString())! > 3000);
});
