/**
 * The SIP trunk's TLS files: read into the agent's TLS options, with errors that name the field;
 * and the whole path from YAML: a server with `telephony.sip.tls` and SRTP required takes a call
 * from baresip over TLS, the caller's tone and key press reach the agent, its BYE ends the run.
 */

import assert from "node:assert/strict";
import { readSipTlsFiles, sipTlsReads } from "../server/sip_tls.ts";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { hasBaresip, startBaresip } from "./_baresip.ts";
import { until } from "./_core_helpers.ts";
import { sine8k, sipAndRtpPorts } from "./_sipp.ts";
import { makeTestCerts } from "./_tls_certs.ts";

Deno.test("sip tls files: certificate, key and CA read; missing or non-PEM files named", async () => {
  const c = makeTestCerts();
  try {
    const tls = await readSipTlsFiles({
      port: 5061,
      certFile: c.certFile,
      keyFile: c.keyFile,
      caFile: c.caFile,
    });
    assert.equal(tls.port, 5061);
    assert.match(tls.cert!, /BEGIN CERTIFICATE/);
    assert.match(tls.key!, /PRIVATE KEY/);
    assert.equal(tls.caCerts?.length, 1);
    const clientOnly = await readSipTlsFiles({ port: 5061, caFile: c.caFile });
    assert.equal(clientOnly.cert, undefined);
    await assert.rejects(
      readSipTlsFiles({ port: 5061, certFile: `${c.dir}/nope.pem`, keyFile: c.keyFile }),
      /telephony\.sip\.tls\.cert_file: cannot read .*nope\.pem/,
    );
    await assert.rejects(
      readSipTlsFiles({ port: 5061, certFile: c.certFile, keyFile: c.certFile }),
      /telephony\.sip\.tls\.key_file: .* holds no PEM block/,
    );
    assert.deepEqual(sipTlsReads({ port: 1, caFile: "ca.pem" }), ["ca.pem"]);
    assert.deepEqual(sipTlsReads(undefined), []);
  } finally {
    Deno.removeSync(c.dir, { recursive: true });
  }
});

Deno.test({
  name: "server SIP trunk over TLS with SRTP required: baresip calls in, presses 1, hangs up",
  ignore: !hasBaresip(),
  fn: async () => {
    const certs = makeTestCerts();
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const tlsPort = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const config = {
      agent: {
        graph: {
          version: 1,
          start: "a",
          nodes: [
            {
              id: "a",
              prompt: "First.",
              transitions: [{ name: "next", description: "Go on.", target: "b" }],
            },
            {
              id: "b",
              prompt: "Second.",
              transitions: [{ name: "done", description: "Done.", target: "c" }],
            },
            { id: "c", prompt: "Bye.", terminal: true },
          ],
        },
      },
      pipeline: "s2s",
      providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
      telephony: {
        sip: {
          server: `sips:127.0.0.1:${tlsPort + 1}`, // nothing answers REGISTER: it retries
          login: "flowcat",
          password_env: "SIP_PASSWORD",
          caller_id: "+15551230000",
          ...sipAndRtpPorts(4),
          rtp_port_tries: 4,
          allow_hosts: ["127.0.0.1"],
          tls: { port: tlsPort, cert_file: certs.certFile, key_file: certs.keyFile },
          media: { srtp: "required" },
        },
      },
    };
    const r = await parseConfigText(JSON.stringify(config), "json", ".");
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    const logger = memoryLogger();
    const app = await createAgentServer({
      config: r.config,
      env: (n) => (n === "SIP_PASSWORD" ? "tls-trunk-pw" : undefined),
      logger,
      sipBindHost: "127.0.0.1",
    });
    const bs = startBaresip({
      tone: sine8k(8000 * 3, 440),
      mediaenc: "srtp-mand",
      dial: `sip:+15557654321@127.0.0.1:${tlsPort};transport=tls`,
      quitAfterSeconds: 5,
      tls: { certAndKeyFile: certs.bundleFile, caFile: certs.caFile },
    });
    try {
      await until(() => app.sessions.get(1) !== undefined, 5000, "inbound run");
      const run = app.sessions.get(1)!;
      await new Promise((r) => setTimeout(r, 800)); // media flowing
      await bs.press("1");
      await until(() => run.finalize !== undefined, 8000, "finalized");
      assert.equal(run.finalize!.usage.endedBy, "end: caller hung up");
      const bytes = app.sessions.memoryArtifact("run-1-transcript.json")!;
      const lines = JSON.parse(new TextDecoder().decode(bytes)).lines as {
        role: string;
        text: string;
      }[];
      assert.ok(
        lines.some((l) => l.role === "user" && l.text === "(pressed 1)"),
        JSON.stringify(lines),
      );
      assert.ok(lines.some((l) => l.role === "node" && l.text === "b"), JSON.stringify(lines));
      // baresip's tone, decrypted, reached the model (it counts the 20 ms frames it heard).
      assert.ok(
        Number(run.finalize!.usage.promptTokens) >= 20,
        JSON.stringify(run.finalize!.usage),
      );
      const out = await bs.done;
      assert.match(out.output, /SRTP is Enabled/);
      assert.ok(!JSON.stringify(logger.records).includes("tls-trunk-pw"));
      assert.ok(!JSON.stringify(logger.records).includes("PRIVATE KEY"));
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await app.calls.drain(1000);
      await app.close();
      Deno.removeSync(certs.dir, { recursive: true });
    }
  },
});
