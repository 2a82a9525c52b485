/**
 * The agent server with `realtime: nova-sonic` against the local Bedrock bidirectional fake: the
 * AWS variables read at start reach the client, the session opens signed with the greeting as a
 * caller line, the model's voice reaches a Twilio-framed caller and the caller's audio reaches
 * the model; missing credentials stop the server at start. The fake runs plain HTTP here (the
 * server's fetch trusts only public CAs); the HTTP/2 path is tests/nova_sonic_test.ts.
 */

import assert from "node:assert/strict";
import { rms, sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import { silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { until } from "./_core_helpers.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall } from "./_twilio_client.ts";
import { awsEnv, FAKE_AWS_CREDENTIALS } from "./fakes/aws_http_fake.ts";
import { novaOut, startNovaSonicFake } from "./fakes/nova_sonic_fake.ts";

async function s2sConfig(realtime: string) {
  const res = await parse(`agent: { graph: graph.yaml, greeting: "Hi there." }
pipeline: s2s
providers:
  realtime: ${realtime}`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.config;
}

Deno.test("server nova-sonic: a call runs on a signed session with the AWS variables", async () => {
  const fake = startNovaSonicFake({ credentials: FAKE_AWS_CREDENTIALS, region: "eu-north-1" });
  const config = await s2sConfig(`{ name: nova-sonic, url: "${fake.url}", voice: amy }`);
  const env = awsEnv(FAKE_AWS_CREDENTIALS, "eu-north-1");
  const app = await createAgentServer({ config, env: (n) => env[n], logger: silentLogger });
  const { call, report } = await agentServerCall(app);
  try {
    const s = await fake.session(0);
    await s.waitFor("textInput", 2);
    assert.equal(s.refusal, undefined);
    const audio = s.bodies("promptStart")[0].audioOutputConfiguration as { voiceId: string };
    assert.equal(audio.voiceId, "amy");
    const greeting = s.bodies("textInput")[1].content as string;
    assert.match(greeting, /Hi there\./);
    const voice = sine({ freq: 440, sampleRate: 24000, samples: 12000, amplitude: 8000 });
    s.send(
      novaOut.contentStart("ASSISTANT", "AUDIO"),
      novaOut.audioOutput(voice),
      novaOut.contentEnd("END_TURN", "AUDIO"),
    );
    await until(() => call.media().length > 20, 5000, "the model's voice at the caller");
    assert.ok(rms(call.decode(call.media())) > 300);
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 4000, amplitude: 9000 }));
    await s.waitFor("audioInput", 5);
    await call.hangup();
    await report;
    await s.until(() => s.inputEnded);
    assert.deepEqual(s.names().slice(-3), ["contentEnd", "promptEnd", "sessionEnd"]);
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await fake.close();
  }
});

Deno.test("server nova-sonic: missing AWS credentials stop the server at start", async () => {
  const config = await s2sConfig("{ name: nova-sonic }");
  await assert.rejects(
    createAgentServer({ config, env: () => undefined, logger: silentLogger }),
    (err) =>
      err instanceof FlowcatError && err.kind === "config" &&
      err.message ===
        "AWS_ACCESS_KEY_ID is not set (AWS access key id, for realtime provider nova-sonic)",
  );
});
