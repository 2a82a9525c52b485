/**
 * Amazon Nova Sonic (providers/aws/nova_sonic.ts) against a local fake of Bedrock
 * `InvokeModelWithBidirectionalStream` over HTTP/2 with TLS (tests/fakes/nova_sonic_fake.ts)
 * that verifies the request's SigV4 signature and every event's chained signature as the body
 * streams in: the session's opening events, caller audio, transcripts, voice out, usage, a
 * tool call round trip, barge-in, the orderly close, a new session on a prompt change and on a
 * dropped connection, a throttling exception, a validation error and a refused signature.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { RealtimeEvent } from "../core/seams.ts";
import { NovaSonicRealtime } from "../providers/aws/nova_sonic.ts";
import type { AwsCredentials } from "../providers/aws/sigv4.ts";
import { REALTIME_PROVIDERS } from "../providers/registry.ts";
import { makeTestCerts } from "./_tls_certs.ts";
import { FAKE_AWS_CREDENTIALS } from "./fakes/aws_http_fake.ts";
import { type NovaFake, novaOut, startNovaSonicFake } from "./fakes/nova_sonic_fake.ts";

const REGION = "us-east-1";
const TOOLS = [{
  name: "get_weather",
  description: "Weather in a city",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
}];

async function withFake(
  fn: (fake: NovaFake, make: (creds?: AwsCredentials) => NovaSonicRealtime) => Promise<void>,
  fakeCreds: AwsCredentials = FAKE_AWS_CREDENTIALS,
): Promise<void> {
  const certs = makeTestCerts();
  const fake = startNovaSonicFake({
    credentials: fakeCreds,
    region: REGION,
    cert: Deno.readTextFileSync(certs.certFile),
    key: Deno.readTextFileSync(certs.keyFile),
  });
  // HTTP/2 only: the client must not fall back to HTTP/1.1.
  const client = Deno.createHttpClient({
    caCerts: [Deno.readTextFileSync(certs.caFile)],
    http1: false,
    http2: true,
  });
  const clientFetch: typeof fetch = (input, init) => fetch(input, { ...init, client });
  const models: NovaSonicRealtime[] = [];
  const make = (creds: AwsCredentials = FAKE_AWS_CREDENTIALS) => {
    const m = new NovaSonicRealtime({
      url: fake.url,
      voice: "tiffany",
      credentials: {
        AWS_ACCESS_KEY_ID: creds.accessKeyId,
        AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
        AWS_REGION: REGION,
        ...(creds.sessionToken ? { AWS_SESSION_TOKEN: creds.sessionToken } : {}),
      },
      options: { reconnect_backoff_ms: 10 },
      fetch: clientFetch,
    });
    models.push(m);
    return m;
  };
  try {
    await fn(fake, make);
  } finally {
    for (const m of models) await m.close();
    await fake.close();
    client.close();
    Deno.removeSync(certs.dir, { recursive: true });
  }
}

/** The next `n` events that are not audio. */
async function nextEvents(m: NovaSonicRealtime, n: number): Promise<RealtimeEvent[]> {
  const out: RealtimeEvent[] = [];
  while (out.length < n) {
    const ev = await m.nextEvent();
    if (ev === undefined) break;
    out.push(ev);
  }
  return out;
}

function pcm(n: number, seed: number): Int16Array {
  return Int16Array.from({ length: n }, (_, i) => ((i * 37 + seed) % 2000) - 1000);
}

Deno.test("nova-sonic: opening events, audio both ways, transcripts and usage", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Be brief.", tools: TOOLS });
    const s = await fake.session(0);
    assert.equal(s.modelId, "amazon.nova-2-sonic-v1:0");
    await s.waitFor("contentStart", 2);
    assert.deepEqual(s.names().slice(0, 6), [
      "sessionStart",
      "promptStart",
      "contentStart",
      "textInput",
      "contentEnd",
      "contentStart",
    ]);
    const [prompt] = s.bodies("promptStart");
    const audioOut = prompt.audioOutputConfiguration as Record<string, unknown>;
    assert.equal(audioOut.sampleRateHertz, 24000);
    assert.equal(audioOut.voiceId, "tiffany");
    assert.equal(audioOut.mediaType, "audio/lpcm");
    const tools = (prompt.toolConfiguration as { tools: { toolSpec: Record<string, unknown> }[] })
      .tools;
    assert.equal(tools[0].toolSpec.name, "get_weather");
    assert.deepEqual(
      JSON.parse((tools[0].toolSpec.inputSchema as { json: string }).json),
      TOOLS[0].params,
    );
    const [system, audio] = s.bodies("contentStart");
    assert.equal(system.role, "SYSTEM");
    assert.equal(s.bodies("textInput")[0].content, "Be brief.");
    assert.equal(audio.type, "AUDIO");
    assert.equal(
      (audio.audioInputConfiguration as { sampleRateHertz: number }).sampleRateHertz,
      16000,
    );

    const caller = pcm(320, 1);
    m.sendAudio({ pcm: caller, sampleRate: 16000, numChannels: 1 });
    await s.waitFor("audioInput");
    const sent = s.bodies("audioInput")[0];
    assert.equal(sent.contentName, audio.contentName);
    assert.deepEqual(new Int16Array(Uint8Array.fromBase64(sent.content as string).buffer), caller);

    const voice = pcm(480, 7);
    s.send(
      novaOut.completionStart(),
      ...novaOut.textBlock("USER", "What's up?"),
      ...novaOut.textBlock("ASSISTANT", "Not much.", "SPECULATIVE", "PARTIAL_TURN"),
      novaOut.contentStart("ASSISTANT", "AUDIO"),
      novaOut.audioOutput(voice),
      novaOut.contentEnd("PARTIAL_TURN", "AUDIO"),
      novaOut.contentStart("ASSISTANT", "TEXT", "FINAL"),
      novaOut.textOutput("ASSISTANT", "Not much."),
      novaOut.usage(120, 45),
      novaOut.contentEnd("END_TURN"),
      novaOut.completionEnd(),
    );
    const evs = await nextEvents(m, 6);
    assert.deepEqual(evs[0], { type: "user_text", text: "What's up?", final: true });
    assert.deepEqual(evs[1], { type: "bot_text", text: "Not much.", final: false });
    assert.equal(evs[2].type, "audio_out");
    if (evs[2].type === "audio_out") {
      assert.equal(evs[2].audio.sampleRate, 24000);
      assert.deepEqual(evs[2].audio.pcm, voice);
    }
    assert.deepEqual(evs[3], { type: "bot_text", text: "Not much.", final: true });
    assert.deepEqual(evs[4], {
      type: "usage",
      usage: { promptTokens: 120, completionTokens: 45, totalTokens: 165 },
    });
    assert.deepEqual(evs[5], { type: "turn_complete" });
    assert.equal(s.refusal, undefined);
  });
});

Deno.test("nova-sonic: a tool call round trip", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Use tools.", tools: TOOLS });
    const s = await fake.session(0);
    s.send(...novaOut.toolCall("tool-1", "get_weather", { city: "Paris" }));
    const [call] = await nextEvents(m, 1);
    assert.deepEqual(call, {
      type: "tool_call",
      id: "tool-1",
      name: "get_weather",
      args: { city: "Paris" },
    });
    await m.sendToolResult("tool-1", { temperature: 21 });
    await s.waitFor("toolResult");
    const start = s.bodies("contentStart").at(-1)!;
    assert.equal(start.type, "TOOL");
    assert.equal(start.role, "TOOL");
    assert.equal(
      (start.toolResultInputConfiguration as { toolUseId: string }).toolUseId,
      "tool-1",
    );
    const [result] = s.bodies("toolResult");
    assert.equal(result.contentName, start.contentName);
    assert.deepEqual(JSON.parse(result.content as string), { temperature: 21 });
    await s.waitFor("contentEnd", 2);
    assert.equal(s.bodies("contentEnd").at(-1)!.contentName, start.contentName);
  });
});

Deno.test("nova-sonic: barge-in (INTERRUPTED) interrupts once, without its note", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Talk.", tools: [] });
    const s = await fake.session(0);
    s.send(
      novaOut.contentStart("ASSISTANT", "AUDIO"),
      novaOut.audioOutput(pcm(240, 3)),
      novaOut.contentEnd("INTERRUPTED", "AUDIO"),
      ...novaOut.textBlock("ASSISTANT", '{ "interrupted" : true }', "FINAL", "INTERRUPTED"),
      ...novaOut.textBlock("USER", "Stop."),
    );
    const evs = await nextEvents(m, 3);
    assert.equal(evs[0].type, "audio_out");
    assert.deepEqual(evs[1], { type: "interrupted" });
    assert.deepEqual(evs[2], { type: "user_text", text: "Stop.", final: true });
  });
});

Deno.test("nova-sonic: close ends the audio, prompt and session, then the signed input", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Hi.", tools: [] });
    const s = await fake.session(0);
    s.send(
      novaOut.contentStart("ASSISTANT", "AUDIO"),
      novaOut.usage(30, 12),
      novaOut.audioOutput(pcm(96, 5)),
    );
    // The voice comes after the usage on the wire: once it is here, so is the count.
    assert.equal((await m.nextEvent())?.type, "audio_out");
    await m.close();
    await s.until(() => s.inputEnded);
    assert.deepEqual(s.names().slice(-3), ["contentEnd", "promptEnd", "sessionEnd"]);
    const audioName = s.bodies("contentStart")[1].contentName;
    assert.equal(s.bodies("contentEnd").at(-1)!.contentName, audioName);
    assert.equal(s.refusal, undefined);
    // The tokens of the turn the hangup cut short are still reported.
    assert.deepEqual(await m.nextEvent(), {
      type: "usage",
      usage: { promptTokens: 30, completionTokens: 12, totalTokens: 42 },
    });
    assert.equal(await m.nextEvent().then((e) => e?.type), "closed");
  });
});

Deno.test("nova-sonic: a new prompt opens a new session seeded with the transcript", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Greet.", tools: [] });
    const first = await fake.session(0);
    first.send(
      ...novaOut.textBlock("USER", "My name is Ann."),
      ...novaOut.textBlock("ASSISTANT", "Hello Ann."),
    );
    assert.deepEqual((await nextEvents(m, 2)).map((e) => e.type), ["user_text", "bot_text"]);
    await m.updateSystem("Take the order.", TOOLS);
    await first.until(() => first.inputEnded);
    const second = await fake.session(1);
    await second.waitFor("contentStart", 4);
    const texts = second.bodies("textInput").map((b) => b.content);
    assert.deepEqual(texts, ["Take the order.", "My name is Ann.", "Hello Ann."]);
    assert.deepEqual(
      second.bodies("contentStart").map((b) => b.role),
      ["SYSTEM", "USER", "ASSISTANT", "USER"],
    );
    assert.ok(second.bodies("promptStart")[0].toolConfiguration);
    // Audio now goes to the new session.
    m.sendAudio({ pcm: pcm(160, 2), sampleRate: 16000, numChannels: 1 });
    await second.waitFor("audioInput");
  });
});

Deno.test("nova-sonic: a tool result after a transition is told to the new session", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Node one.", tools: TOOLS });
    const first = await fake.session(0);
    first.send(...novaOut.toolCall("tool-9", "get_weather", { city: "Oslo" }));
    assert.equal((await nextEvents(m, 1))[0].type, "tool_call");
    // The brain's order: new prompt and tools first, then the result.
    await m.updateSystem("Node two.", []);
    await m.sendToolResult("tool-9", "sunny");
    const second = await fake.session(1);
    await second.waitFor("textInput", 2);
    assert.equal(second.bodies("toolResult").length, 0);
    const line = second.bodies("contentStart").at(-1)!;
    assert.equal(line.role, "USER");
    assert.equal(line.interactive, true);
    assert.equal(
      second.bodies("textInput").at(-1)!.content,
      "(The get_weather tool returned: sunny)",
    );
    assert.equal(first.bodies("toolResult").length, 0);
  });
});

Deno.test("nova-sonic: a dropped connection is replaced by a new session", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Stay.", tools: [] });
    (await fake.session(0)).drop();
    const second = await fake.session(1);
    await second.waitFor("contentStart", 2);
    assert.equal(second.bodies("textInput")[0].content, "Stay.");
    second.send(
      ...novaOut.textBlock("USER", "Still there?"),
    );
    assert.deepEqual(await nextEvents(m, 1), [
      { type: "user_text", text: "Still there?", final: true },
    ]);
  });
});

Deno.test("nova-sonic: a throttling exception ends the call with its message", async () => {
  await withFake(async (fake, make) => {
    const m = make();
    await m.connect({ systemPrompt: "Hi.", tools: [] });
    (await fake.session(0)).exception("throttlingException", "Too many requests, slow down");
    const [ev] = await nextEvents(m, 1);
    assert.equal(ev.type, "closed");
    if (ev.type === "closed") {
      assert.match(ev.reason ?? "", /nova-sonic: throttlingException: Too many requests/);
    }
    assert.equal(await m.nextEvent(), undefined);
    assert.equal(fake.sessions.length, 1);
  });
});

Deno.test("nova-sonic: a validation error at connect is a clear error", async () => {
  await withFake(async (fake, make) => {
    fake.refusals.push({
      status: 400,
      code: "ValidationException",
      message: "Invalid model identifier",
    });
    const err = await make().connect({ systemPrompt: "Hi.", tools: [] }).catch((e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.equal(err.kind, "protocol");
    assert.equal(
      err.message,
      "nova-sonic: ValidationException (HTTP 400): Invalid model identifier",
    );
  });
});

Deno.test("nova-sonic: a refused signature is an auth error without the key", async () => {
  await withFake(async (_fake, make) => {
    const wrong = { ...FAKE_AWS_CREDENTIALS, secretAccessKey: "not-the-secret-0123456789" };
    const err = await make(wrong).connect({ systemPrompt: "Hi.", tools: [] }).catch((e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.equal(err.kind, "auth");
    assert.match(err.message, /^nova-sonic: InvalidSignatureException \(HTTP 403\)/);
    assert.ok(!err.message.includes(wrong.secretAccessKey));
    assert.ok(!err.message.includes(FAKE_AWS_CREDENTIALS.secretAccessKey));
  });
});

Deno.test("nova-sonic: temporary credentials sign their session token", async () => {
  const creds = { ...FAKE_AWS_CREDENTIALS, sessionToken: "FwoGZXIvYXdzEXAMPLETOKEN" };
  await withFake(async (fake, make) => {
    await make(creds).connect({ systemPrompt: "Hi.", tools: [] });
    assert.equal(fake.sessions.length, 1);
    const err = await make().connect({ systemPrompt: "Hi.", tools: [] }).catch((e) => e);
    assert.equal(err.kind, "auth");
  }, creds);
});

Deno.test("nova-sonic: registry row, region hosts and config errors", () => {
  const info = REALTIME_PROVIDERS["nova-sonic"];
  assert.deepEqual(info.hosts, ["bedrock-runtime.us-east-1.amazonaws.com:443"]);
  assert.deepEqual(info.hostsFor!({ region: "eu-north-1" }, () => undefined), [
    "bedrock-runtime.eu-north-1.amazonaws.com:443",
  ]);
  assert.deepEqual(info.env!.map((v) => v.name), [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
  ]);
  assert.throws(
    () => new NovaSonicRealtime({ credentials: {} }),
    /nova-sonic: missing AWS credentials \(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\)/,
  );
  assert.throws(
    () =>
      new NovaSonicRealtime({
        credentials: { AWS_ACCESS_KEY_ID: "a", AWS_SECRET_ACCESS_KEY: "b" },
        options: { temperature: 3 },
      }),
    /options.temperature must be a number from 0 to 1/,
  );
});
