/** server/log_env.ts: FLOWCAT_LOG and FLOWCAT_LOG_FORMAT make the server's logger. */
import assert from "node:assert/strict";
import { loggerFromEnv } from "../server/log_env.ts";

function logged(env: Record<string, string>): string[] {
  const lines: string[] = [];
  const log = loggerFromEnv((n) => env[n], "flowcat", { write: (l) => lines.push(l) });
  log.debug("dbg");
  log.info("call started", { runId: 1 });
  return lines;
}

Deno.test("log env: text by default, JSON with FLOWCAT_LOG_FORMAT=json, levels from FLOWCAT_LOG", () => {
  assert.deepEqual(logged({}), ['[info] flowcat: call started {"runId":1}']);
  const json = logged({ FLOWCAT_LOG_FORMAT: "json", FLOWCAT_LOG: "debug" }).map((l) =>
    JSON.parse(l)
  );
  assert.deepEqual(json.map((o) => [o.level, o.scope, o.msg]), [
    ["debug", "flowcat", "dbg"],
    ["info", "flowcat", "call started"],
  ]);
  assert.equal(json[1].runId, 1);
  assert.deepEqual(logged({ FLOWCAT_LOG: "warn" }), []);
});

Deno.test("log env: a value that is no format or level falls back, saying so once", () => {
  assert.deepEqual(logged({ FLOWCAT_LOG_FORMAT: "xml", FLOWCAT_LOG: "loud" }), [
    "[warn] flowcat: FLOWCAT_LOG=loud is not a level (debug, info, warn, error, silent); using info",
    "[warn] flowcat: FLOWCAT_LOG_FORMAT=xml is not a format (text, json); using text",
    '[info] flowcat: call started {"runId":1}',
  ]);
});
