import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { parseConfigText } from "../server/config.ts";
import { parseServerArgs, serverPermissionOptions } from "../server/main.ts";
import { readTlsFiles } from "../server/tls.ts";

const MINIMAL = `
agent: { graph: echo_graph.yaml }
providers: { realtime: { name: echo } }`;

Deno.test("--tls-cert and --tls-key go together", () => {
  assert.deepEqual(parseServerArgs(["--tls-cert", "c.pem", "--tls-key", "k.pem"]).tls, {
    certFile: "c.pem",
    keyFile: "k.pem",
  });
  assert.equal(parseServerArgs([]).tls, undefined);
  assert.throws(() => parseServerArgs(["--tls-cert", "c.pem"]), /go together/);
  assert.throws(() => parseServerArgs(["--tls-key", "k.pem"]), FlowcatError);
});

Deno.test("server.tls: paths resolved against the config, granted to read", async () => {
  const res = await parseConfigText(
    `${MINIMAL}\nserver: { host: 0.0.0.0, tls: { cert_file: tls/cert.pem, key_file: /etc/k.pem } }`,
    "yaml",
    "examples",
  );
  assert.ok(res.ok);
  assert.deepEqual(res.config.server.tls, {
    certFile: "examples/tls/cert.pem",
    keyFile: "/etc/k.pem",
  });
  const opts = serverPermissionOptions(res.config, { config: "examples/agent.yaml" });
  assert.ok(opts.extraRead?.includes("examples/tls/cert.pem"));
  assert.ok(opts.extraRead?.includes("/etc/k.pem"));
  const bad = await parseConfigText(
    `${MINIMAL}\nserver: { tls: { cert_file: a.pem } }`,
    "yaml",
    "examples",
  );
  assert.ok(!bad.ok);
});

Deno.test("readTlsFiles: a missing or non-PEM file names the field", async () => {
  const dir = await Deno.makeTempDir({ dir: "./.tmp", prefix: "tls-" });
  try {
    await Deno.writeTextFile(`${dir}/cert.pem`, "-----BEGIN CERTIFICATE-----\nAA==\n");
    await Deno.writeTextFile(`${dir}/key.pem`, "-----BEGIN PRIVATE KEY-----\nAA==\n");
    await Deno.writeTextFile(`${dir}/junk.pem`, "not a key");
    const pem = await readTlsFiles({ certFile: `${dir}/cert.pem`, keyFile: `${dir}/key.pem` });
    assert.match(pem.cert, /BEGIN CERTIFICATE/);
    await assert.rejects(
      readTlsFiles({ certFile: `${dir}/none.pem`, keyFile: `${dir}/key.pem` }),
      /server\.tls\.cert_file: cannot read/,
    );
    await assert.rejects(
      readTlsFiles({ certFile: `${dir}/cert.pem`, keyFile: `${dir}/junk.pem` }),
      /server\.tls\.key_file: .* holds no PEM block/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
