/**
 * The default echo canceller on a real carrier call through the agent server: a caller on a
 * speakerphone (the Twilio-framed client plays what it is sent on its own clock and sends back its
 * echo, 160 ms late and about 10 dB down, G.711 both ways) while the agent says a long greeting in
 * a cascaded pipeline (energy VAD, eSpeak). With `audio.echo_cancel` unset the agent is not
 * interrupted by its own voice; with `off` it is, which is what the default is there to prevent.
 */

import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import { ulawEncode } from "../core/audio/g711.ts";
import { createAgentServer } from "../server/app.ts";
import { sleep, until } from "./_core_helpers.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall, type TwilioCall } from "./_twilio_client.ts";
import { OpenAIChatFake } from "./fakes/openai_chat_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";
import { CALLER_TEXT, espeakAt } from "../bench/aec_set.ts";

const GREETING = "Thank you for calling the billing department. Your account shows a balance of " +
  "forty two dollars, due on the fifteenth of next month.";

/**
 * Plays the agent's audio on the caller's clock and sends its echo back, for `secs`; with the
 * caller's own words over it from 4 s on when `words` is given.
 */
async function speakerphone(call: TwilioCall, secs: number, words?: Int16Array): Promise<void> {
  const delay = 8; // frames: 160 ms
  const played: Int16Array[] = [];
  let heard = 0;
  const t0 = performance.now();
  for (let n = 0; n < secs * 50; n++) {
    const media = call.media();
    const frame = heard < media.length ? call.decode([media[heard++]]) : new Int16Array(160);
    played.push(frame);
    const src = played[n - delay];
    const echo = new Int16Array(160);
    for (let i = 0; i < 160; i++) {
      const said = words?.[(n - 200) * 160 + i] ?? 0;
      echo[i] = Math.round((src === undefined ? 0 : 0.3 * src[i]) + said + ((i * 7919) % 17) - 8);
    }
    await call.send({
      event: "media",
      streamSid: "MZ1",
      media: { track: "inbound", payload: ulawEncode(echo).toBase64() },
    });
    // On the caller's own steady clock, whatever the timers do.
    const next = t0 + (n + 1) * 20 - performance.now();
    if (next > 0) await sleep(next);
  }
}

/** Interruptions (Twilio `clear`) and STT requests while the agent greets a speakerphone. */
async function greetSpeakerphone(audio: string, words?: Int16Array) {
  const llm = new OpenAIChatFake();
  const stt = new WhisperHttpFake();
  await stt.start();
  const res = await parse(`agent: { graph: graph.yaml, greeting: "${GREETING}" }
pipeline: cascaded
${audio}
providers:
  stt: { name: speaches, url: "${stt.url}/v1" }
  llm: { name: ollama, url: "${llm.baseUrl}", model: tiny }
  tts: { name: espeak }`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  const app = await createAgentServer({
    config: res.config,
    env: () => undefined,
    logger: silentLogger,
  });
  const { call, report } = await agentServerCall(app);
  try {
    await until(() => call.media().length > 0, 5000, "the greeting");
    await speakerphone(call, 7, words);
    await call.hangup();
    await report;
    return {
      clears: call.got.filter((m) => m.event === "clear").length,
      sttRequests: stt.requests.length,
      greetingFrames: call.media().length,
    };
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await llm.close();
    await stt.close();
  }
}

Deno.test("speakerphone caller: the default canceller keeps the agent from interrupting itself", async () => {
  const off = await greetSpeakerphone("audio: { echo_cancel: off }");
  assert.ok(
    off.clears + off.sttRequests > 0,
    `without the canceller the echo barges in: ${JSON.stringify(off)}`,
  );
  const byDefault = await greetSpeakerphone("");
  assert.equal(byDefault.clears, 0, `interrupted by its own echo: ${JSON.stringify(byDefault)}`);
  assert.equal(byDefault.sttRequests, 0, "the echo was taken for the caller's words");
  assert.ok(byDefault.greetingFrames > 200, `the greeting played: ${byDefault.greetingFrames}`);
});

const caller = await espeakAt(CALLER_TEXT, "en-gb-x-rp", 8000);

Deno.test({
  name:
    "speakerphone caller: with the default canceller, the caller talking over the agent is heard",
  ignore: caller === undefined,
  async fn() {
    // At about -24 dBFS, a few dB below the agent and above its echo.
    let ms = 0;
    for (const v of caller!) ms += v * v;
    const g = 2000 / Math.sqrt(ms / caller!.length);
    const words = caller!.map((v) => Math.round(v * g));
    const r = await greetSpeakerphone("", words);
    assert.ok(r.clears >= 1, `the caller's barge-in did not stop the agent: ${JSON.stringify(r)}`);
  },
});
