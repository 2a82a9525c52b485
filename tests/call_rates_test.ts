/**
 * The rates a speech-to-speech call runs at (core/call_rates.ts): a model that takes the leg's
 * own rate gets it and the call resamples nowhere (a Twilio call on the echo model comes back
 * sample for sample); a model with its own rates is still resampled both ways.
 */
import assert from "node:assert/strict";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { rms } from "../core/audio/pcm.ts";
import { s2sRates } from "../core/call_rates.ts";
import { FlowcatError } from "../core/errors.ts";
import type { AudioFrame } from "../core/frames.ts";
import { silentLogger } from "../core/log.ts";
import type { RealtimeLlm } from "../core/seams.ts";
import { echoRatesOption } from "../providers/echo/echo_rates.ts";
import { EchoRealtime, type EchoRealtimeOptions } from "../providers/echo/realtime.ts";
import { loadCallShape } from "../server/call_shapes.ts";
import { until } from "./_core_helpers.ts";
import { s2sTwilioCall } from "./_s2s_twilio.ts";
import { parse } from "./_server_config_helpers.ts";

/** The echo model, noting the rate of every frame it is given. */
class WatchedEcho extends EchoRealtime {
  readonly heardRates = new Set<number>();
  override sendAudio(audio: AudioFrame): void {
    this.heardRates.add(audio.sampleRate);
    super.sendAudio(audio);
  }
}

/** Speech-like 8 kHz test signal: two tones and a little noise, `n` samples. */
function voice(n: number): Int16Array {
  const pcm = new Int16Array(n);
  let seed = 7;
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const noise = (seed / 0x7fffffff - 0.5) * 800;
    pcm[i] = Math.round(
      6000 * Math.sin((2 * Math.PI * 310 * i) / 8000) +
        3000 * Math.sin((2 * Math.PI * 1270 * i) / 8000) + noise,
    );
  }
  return pcm;
}

/**
 * One Twilio call (8 kHz mu-law) on the echo model in frame mode: speaks `pcm`, returns what
 * came back, decoded, with the call's parts and its recording.
 */
async function echoCall(pcm: Int16Array, opts: EchoRealtimeOptions = {}) {
  const echo = new WatchedEcho({ mode: "frame", ...opts });
  const { call, finished, sessions, runId, parts } = await s2sTwilioCall(echo);
  const frames = pcm.length / 160;
  await call.speak(pcm, 5);
  await until(() => call.media().length >= frames, 5000, "echoed audio");
  await call.hangup();
  await finished;
  const back = call.decode(call.media());
  const wav = sessions.memoryArtifact(`run-${runId}-recording.wav`)!;
  await call.close();
  const wavRate = new DataView(wav.buffer, wav.byteOffset).getUint32(24, true);
  return { back, echo, parts, wavRate };
}

Deno.test("call rates: a Twilio call on the echo runs at 8 kHz and comes back sample for sample", async () => {
  // What the caller's mu-law carries exactly: its own decode.
  const sent = ulawDecode(ulawEncode(voice(160 * 40)));
  const { back, echo, parts, wavRate } = await echoCall(sent);
  assert.deepEqual([...echo.heardRates], [8000], "the model hears the leg's rate");
  assert.equal(back.length, sent.length);
  // No resampler anywhere: any filter on the way would delay and change the samples.
  assert.deepEqual(back, sent, "the echo is the caller's audio, sample for sample");
  assert.equal(parts.recorder?.sampleRate, 8000, "recorded at the call's rate");
  assert.equal(wavRate, 8000);
});

Deno.test("call rates: an echo at 16/24 kHz is still resampled both ways", async () => {
  const sent = ulawDecode(ulawEncode(voice(160 * 40)));
  const { back, echo, parts, wavRate } = await echoCall(sent, {
    rates: { input: 16000, output: 24000 },
  });
  assert.deepEqual([...echo.heardRates], [16000], "the caller's 8 kHz reaches the model at 16");
  assert.equal(back.length, sent.length, "24 kHz goes back to the leg as 8 kHz, every frame");
  assert.notDeepEqual(back, sent, "resampled audio is not the same samples");
  // The same signal, delayed by the filters: it still carries the caller's energy.
  const tail = back.subarray(800);
  assert.ok(Math.abs(rms(tail) - rms(sent.subarray(800))) < 0.2 * rms(sent), "same level");
  assert.equal(parts.recorder?.sampleRate, 16000, "recorded at 16 kHz, as before");
  assert.equal(wavRate, 16000);
});

Deno.test("call rates: the model's answer, or 16 kHz in and 24 kHz out", () => {
  const plain = { connect: () => Promise.resolve() } as unknown as RealtimeLlm;
  assert.deepEqual(s2sRates(plain, 8000), { input: 16000, output: 24000 });
  assert.deepEqual(s2sRates(new EchoRealtime(), 8000), { input: 8000, output: 8000 });
  assert.deepEqual(s2sRates(new EchoRealtime(), 48000), { input: 48000, output: 48000 });
  // Not a rate it works at as it is: the hosted models' rates.
  assert.deepEqual(s2sRates(new EchoRealtime(), 4000), { input: 16000, output: 24000 });
  const fixed = new EchoRealtime({ rates: { input: 16000, output: 24000 } });
  assert.deepEqual(s2sRates(fixed, 8000), { input: 16000, output: 24000 });
  const odd = { audioRates: () => ({ input: 8000, output: 0 }) } as unknown as RealtimeLlm;
  assert.throws(
    () => s2sRates(odd, 8000),
    (e) => e instanceof FlowcatError && e.kind === "config" && /8000 in, 0 out/.test(e.message),
  );
});

Deno.test("call rates: the echo's rates option", () => {
  assert.equal(echoRatesOption(undefined), undefined);
  assert.equal(echoRatesOption("leg"), undefined);
  assert.deepEqual(echoRatesOption("16000/24000"), { input: 16000, output: 24000 });
  for (const bad of ["16k", "16000", "1000/8000", 16000, "16000/96000"]) {
    assert.throws(
      () => echoRatesOption(bad),
      (e) => e instanceof FlowcatError && e.kind === "config" && /IN\/OUT/.test(e.message),
      String(bad),
    );
  }
  assert.throws(() => new EchoRealtime({ rates: { input: 16000, output: 100 } }), FlowcatError);
});

Deno.test("call rates: a bad echo rates option stops the server at start, in one line", async () => {
  const res = await parse(`agent: { graph: graph.yaml }
pipeline: s2s
providers:
  realtime: { name: echo, options: { rates: "16k" } }
`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  await assert.rejects(
    loadCallShape({ config: res.config, env: () => undefined, logger: silentLogger }),
    (e) => e instanceof FlowcatError && e.kind === "config" && /options\.rates/.test(e.message),
  );
});

Deno.test("call rates: the caller's audio stops at the model unless the recorder takes it", async () => {
  for (const record of [false, true]) {
    const reached = new Map<string, number>();
    const observer = {
      onPush(e: { frame: { kind: string }; destination: string }) {
        if (e.frame.kind === "InputAudio") {
          reached.set(e.destination, (reached.get(e.destination) ?? 0) + 1);
        }
      },
    };
    const sent = ulawDecode(ulawEncode(voice(160 * 10)));
    const { call, finished, sessions, runId } = await s2sTwilioCall(
      new EchoRealtime({ mode: "frame" }),
      { record, taskParams: { idleTimeoutMs: null, observers: [observer] } },
    );
    await call.speak(sent, 5);
    await until(() => call.media().length >= 10, 5000, "echoed audio");
    await call.hangup();
    await finished;
    await call.close();
    // Every frame reached the model either way; past it only to the recorder's side of the call.
    assert.equal(reached.get("RealtimeProcessor"), 10, `record ${record}`);
    const past = [...reached.keys()].filter((k) =>
      k !== "RealtimeProcessor" && k !== "TransportInput"
    );
    if (!record) assert.deepEqual(past, [], "no hop after the model");
    else {
      assert.ok(past.includes("RecorderProcessor"), [...reached.keys()].join());
      const wav = sessions.memoryArtifact(`run-${runId}-recording.wav`)!;
      const pcm = new Int16Array(
        wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length),
      );
      assert.ok(rms(pcm) > 100, "the recording holds the caller's audio");
    }
  }
});
