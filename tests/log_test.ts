/** core/log.ts: the text and JSON line formats, levels, and loggers that add fields. */
import assert from "node:assert/strict";
import {
  consoleLogger,
  formatLogLine,
  isLogFormat,
  memoryLogger,
  withFields,
} from "../core/log.ts";

const T0 = Date.UTC(2025, 0, 2, 3, 4, 5, 678);

Deno.test("log: the text format is one readable line, fields as JSON after the message", () => {
  const lines: string[] = [];
  const log = consoleLogger("info", "flowcat", { write: (l) => lines.push(l) });
  log.debug("hidden");
  log.info("call started", { runId: 3, transport: "twilio" });
  log.warn("no fields");
  assert.deepEqual(lines, [
    `[info] flowcat: call started {"runId":3,"transport":"twilio"}`,
    "[warn] flowcat: no fields",
  ]);
});

Deno.test("log: the JSON format is one object per line with time, level, scope and msg", () => {
  const lines: string[] = [];
  const log = consoleLogger("debug", "flowcat", {
    format: "json",
    write: (l) => lines.push(l),
    now: () => T0,
  });
  log.info("call ended", { runId: 3, reason: "caller_hung_up", failures: { "stt/x/connect": 2 } });
  log.error("multi\nline", { err: new Error("boom"), big: 10n, msg: "mine", time: 1 });
  assert.equal(lines.length, 2);
  for (const l of lines) assert.ok(!l.includes("\n"), "one line per record");
  assert.deepEqual(JSON.parse(lines[0]), {
    time: "2025-01-02T03:04:05.678Z",
    level: "info",
    scope: "flowcat",
    msg: "call ended",
    runId: 3,
    reason: "caller_hung_up",
    failures: { "stt/x/connect": 2 },
  });
  assert.deepEqual(JSON.parse(lines[1]), {
    time: "2025-01-02T03:04:05.678Z",
    level: "error",
    scope: "flowcat",
    msg: "multi\nline",
    err: "boom",
    big: "10",
    "field.msg": "mine",
    "field.time": 1,
  });
  assert.ok(Object.keys(JSON.parse(lines[0])).slice(0, 4).join() === "time,level,scope,msg");
});

Deno.test("log: a circular field never throws", () => {
  const o: Record<string, unknown> = {};
  o.self = o;
  for (const format of ["text", "json"] as const) {
    const line = formatLogLine(format, { time: T0, level: "warn", message: "x" }, { o });
    assert.equal(typeof line, "string");
  }
});

Deno.test("log: withFields adds the call's fields; a record's own fields win", () => {
  const mem = memoryLogger();
  const call = withFields(mem, { runId: 7, transport: "sip" });
  call.warn("upload failed", { transport: "twilio", err: "x" });
  call.info("plain");
  assert.deepEqual(mem.records, [
    {
      level: "warn",
      message: "upload failed",
      fields: { runId: 7, transport: "twilio", err: "x" },
    },
    { level: "info", message: "plain", fields: { runId: 7, transport: "sip" } },
  ]);
  assert.ok(isLogFormat("json") && isLogFormat("text") && !isLogFormat("xml"));
});
