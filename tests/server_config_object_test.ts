/**
 * `parseConfig`: a config written in code goes through the same checks, messages and defaults
 * as the same config in a file, and a bad one throws a ConfigError listing every problem.
 */

import assert from "node:assert/strict";
import { stringify } from "yaml";
import { ConfigError, loadConfig, parseConfig, parseConfigText } from "../server/config.ts";
import { FlowcatError } from "../core/errors.ts";

const GRAPH = {
  start: "a",
  nodes: [
    { id: "a", prompt: "Hi", transitions: [{ name: "go", description: "go", target: "b" }] },
    { id: "b", terminal: true },
  ],
};

Deno.test("parseConfig: an object gets the file path's defaults and camelCase form", async () => {
  const doc = {
    agent: { graph: GRAPH, vars: {} },
    providers: { realtime: { name: "echo", options: { tts: "none" } } },
    limits: { max_calls: 7 },
  };
  const fromObject = await parseConfig(doc);
  const fromText = await parseConfigText(JSON.stringify(doc), "json", ".");
  assert.ok(fromText.ok);
  assert.deepEqual(fromObject, fromText.config);
  assert.equal(fromObject.limits.maxCalls, 7);
  assert.equal(fromObject.server.port, 6210);
  assert.equal(fromObject.playground.enabled, true);
});

Deno.test("parseConfig: the same problems as the YAML file, thrown as one ConfigError", async () => {
  const doc = {
    pipline: "s2s",
    agent: { graph: GRAPH },
    providers: { realtime: { name: "gemnii" } },
    limits: { max_calls: -1 },
  };
  const dir = await Deno.makeTempDir({ dir: ".tmp" });
  try {
    await Deno.writeTextFile(`${dir}/agent.yaml`, stringify(doc));
    const fromFile = await loadConfig(`${dir}/agent.yaml`);
    assert.ok(!fromFile.ok);
    const err = await parseConfig(doc).then(() => undefined, (e) => e);
    assert.ok(err instanceof ConfigError, String(err));
    assert.ok(err instanceof FlowcatError && err.kind === "config");
    assert.deepEqual(err.problems, fromFile.problems);
    assert.ok(err.problems.length >= 3, err.message);
    assert.match(err.message, /^config: \d+ problems\n {2}pipline: unknown key "pipline"/);
    assert.match(err.message, /did you mean "pipeline"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseConfig: a graph file resolves against baseDir", async () => {
  const dir = await Deno.makeTempDir({ dir: ".tmp" });
  try {
    await Deno.writeTextFile(`${dir}/graph.json`, JSON.stringify(GRAPH));
    const doc = { agent: { graph: "graph.json" }, providers: { realtime: { name: "echo" } } };
    const config = await parseConfig(doc, { baseDir: dir });
    assert.equal(config.agent.kind === "graph" ? config.agent.graphFile : "", `${dir}/graph.json`);
    const err = await parseConfig(doc).then(() => undefined, (e) => e);
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /agent\.graph: graph file "graph\.json" not found/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
