/**
 * The realtime conformance suite's rig for Amazon Nova Sonic: the local Bedrock fake
 * (tests/fakes/nova_sonic_fake.ts: HTTP/2 over TLS as Bedrock serves it; it checks the request's
 * SigV4 signature and every event's chained signature as the body streams in) scripted with Nova
 * Sonic's output events. Over HTTP/1.1 a refused request would not answer until the client's
 * never-ending body ended.
 * @module
 */

import type { RealtimeRig } from "./_realtime_conformance.ts";
import { until } from "./_realtime_conformance.ts";
import { modelVoice } from "./_realtime_rigs.ts";
import { awsEnv, FAKE_AWS_CREDENTIALS } from "./fakes/aws_http_fake.ts";
import { type NovaOut, novaOut, startNovaSonicFake } from "./fakes/nova_sonic_fake.ts";
import { makeTestCerts } from "./_tls_certs.ts";

const REGION = "us-east-1";
const WRONG_SECRET = "wJalrXUtnFEMI/CONFORMANCE/WRONGSECRET";

/** Amazon Nova Sonic on Bedrock (bidirectional event stream). */
export function novaSonicRig(): Promise<RealtimeRig> {
  const certs = makeTestCerts();
  const fake = startNovaSonicFake({
    credentials: FAKE_AWS_CREDENTIALS,
    region: REGION,
    cert: Deno.readTextFileSync(certs.certFile),
    key: Deno.readTextFileSync(certs.keyFile),
  });
  const client = Deno.createHttpClient({
    caCerts: [Deno.readTextFileSync(certs.caFile)],
    http1: false,
    http2: true,
  });
  const clientFetch: typeof fetch = (input, init) => fetch(input, { ...init, client });
  const env = awsEnv(FAKE_AWS_CREDENTIALS, REGION);
  let current = 0;
  // Events are scripted once the current session opened its audio block (after a drop, the new one).
  const send = async (...events: NovaOut[]) => {
    const s = await fake.session(current);
    await s.waitFor("contentStart", 2);
    s.send(...events);
  };
  const audioIn = () =>
    fake.sessions.reduce(
      (n, s) =>
        n + s.bodies("audioInput").reduce(
          (m, b) => m + Uint8Array.fromBase64(b.content as string).length / 2,
          0,
        ),
      0,
    );
  return Promise.resolve({
    options: {
      url: fake.url,
      credentials: env,
      options: { reconnect_backoff_ms: 10 },
      fetch: clientFetch,
    } as RealtimeRig["options"],
    wrongKey: WRONG_SECRET,
    wrongOptions: { credentials: { ...env, AWS_SECRET_ACCESS_KEY: WRONG_SECRET } },
    missingOptions: { credentials: {} },
    answer: (_llm, turn) =>
      send(
        novaOut.completionStart(),
        ...novaOut.textBlock("USER", turn.user),
        novaOut.contentStart("ASSISTANT", "AUDIO"),
        novaOut.audioOutput(modelVoice(24000)),
        novaOut.contentEnd("PARTIAL_TURN", "AUDIO"),
        novaOut.contentStart("ASSISTANT", "TEXT", "FINAL"),
        novaOut.textOutput("ASSISTANT", turn.bot),
        novaOut.usage(90, 30),
        novaOut.contentEnd("END_TURN"),
        novaOut.completionEnd(),
      ),
    startAnswer: () =>
      send(novaOut.contentStart("ASSISTANT", "AUDIO"), novaOut.audioOutput(modelVoice(24000))),
    // The service hears the caller itself and ends its audio block INTERRUPTED.
    bargeIn: () =>
      send(
        novaOut.contentEnd("INTERRUPTED", "AUDIO"),
        ...novaOut.textBlock("ASSISTANT", '{ "interrupted" : true }', "FINAL", "INTERRUPTED"),
      ),
    callTool: (_llm, name, args) => send(...novaOut.toolCall("tool-conf", name, args)),
    async toolOutput(id) {
      const s = await fake.session(current);
      const answered = () =>
        s.bodies("contentStart").find((b) =>
          (b.toolResultInputConfiguration as { toolUseId?: string } | undefined)?.toolUseId === id
        );
      await until(
        () => answered() !== undefined && s.bodies("toolResult").length > 0,
        "a toolResult",
      );
      const name = answered()!.contentName;
      const result = s.bodies("toolResult").find((b) => b.contentName === name)!;
      return JSON.parse(result.content as string);
    },
    audioIn,
    async drop() {
      const s = await fake.session(current);
      current++;
      s.drop();
    },
    async close() {
      await fake.close();
      client.close();
    },
  });
}
