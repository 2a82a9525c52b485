/**
 * The speech-to-text conformance suite: what every STT provider client must do, checked against
 * that provider's local fake through the real client code path. A provider joins by describing
 * an {@link SttTarget} and calling {@link sttConformance}; tests/stt_conformance_test.ts lists
 * them. Streaming clients (audio goes out as it comes) and segmented ones (a segment between
 * speechStarted and speechStopped is sent whole) run the same checks through one driver.
 *
 * The checks: speech at 8 and 16 kHz becomes a final Transcription with the provider's text;
 * muted audio never reaches the provider (silence may, to keep a stream open); a wrong key is a `FlowcatError` of kind `auth` naming
 * the provider and never holding the key; a server error (segmented: retried; streaming: a
 * dropped connection or failed stream reopened) is reported at most once, naming the provider,
 * and does not lose the next utterance's transcript; `stop` is idempotent.
 * @module
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { AudioFrame, Frame, FrameOf } from "../core/frames.ts";
import type { SttService } from "../core/seams.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { startParams } from "./_tts_conformance.ts";

/** A running fake of one provider. */
export interface SttRig {
  /** Options that point the client at the fake with the key it accepts. */
  options: Omit<ServiceOptions, "provider">;
  /** The key the fake refuses (the secret an error must never hold). */
  wrongKey: string;
  /** Options carrying {@link wrongKey}; default `{ apiKey: wrongKey }` (AWS: credentials). */
  wrongOptions?: Partial<ServiceOptions>;
  /** The fake answers the audio it gets next with this final transcript. */
  say(text: string): void;
  /** Segmented: the next request fails once with a server error. Streaming: the connection
   * drops now. */
  fail(): void;
  /** Audio bytes the fake has received so far. */
  audioBytes(): number;
  /**
   * Bytes of those that are not silence. Given by rigs of clients that keep a muted stream
   * alive with silence (Transcribe closes a stream that hears nothing for 15 s).
   */
  loudBytes?(): number;
  /** Stop the fake. */
  close(): Promise<void>;
}

/** A provider under the suite. */
export interface SttTarget {
  /** The provider's name as the config spells it (errors must carry it). */
  provider: string;
  /** Makes the client, exactly as the registry does. */
  create(opts: ServiceOptions): SttService;
  /** Starts the fake. */
  rig(): Promise<SttRig>;
  /** Checks that do not apply, with the reason (a local server takes no key). */
  skip?: { auth?: string };
}

/** `secs` of a 440 Hz tone at `rate` in 20 ms frames (speech stands in; fakes do not listen). */
export function toneFrames(secs: number, rate: number): AudioFrame[] {
  const per = rate / 50;
  let n = 0;
  return Array.from({ length: Math.round(secs * 50) }, () => {
    const pcm = new Int16Array(per);
    for (let i = 0; i < per; i++, n++) {
      pcm[i] = Math.round(8000 * Math.sin(2 * Math.PI * 440 * n / rate));
    }
    return { pcm, sampleRate: rate, numChannels: 1 };
  });
}

/**
 * One utterance through the client as the pipeline drives it: speech frames (between
 * speechStarted and speechStopped for segmented clients), then 20 ms of silence at a time until
 * a final Transcription arrives or `ms` pass. Returns every frame the client gave.
 */
export async function utterance(
  stt: SttService,
  rate: number,
  ms = 5000,
  errors?: unknown[],
): Promise<Frame[]> {
  // The pipeline reports a rejected runStt as a non-fatal error and goes on feeding audio:
  // with `errors` given, so does this driver.
  const run = async (f: AudioFrame): Promise<Frame[]> => {
    if (errors === undefined) return await stt.runStt(f);
    try {
      return await stt.runStt(f);
    } catch (err) {
      errors.push(err);
      return [];
    }
  };
  const out: Frame[] = [];
  stt.speechStarted?.();
  for (const f of toneFrames(0.5, rate)) out.push(...await run(f));
  if (stt.speechStopped) out.push(...await stt.speechStopped());
  const silence: AudioFrame = { pcm: new Int16Array(rate / 50), sampleRate: rate, numChannels: 1 };
  const end = Date.now() + ms;
  while (!out.some((f) => f.kind === "Transcription") && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    out.push(...await run(silence));
  }
  return out;
}

const finals = (frames: Frame[]) =>
  frames.filter((f): f is FrameOf<"Transcription"> => f.kind === "Transcription");

/** Register the suite's tests for one provider. */
export function sttConformance(t: SttTarget): void {
  const name = (what: string) => `stt conformance: ${t.provider}: ${what}`;

  async function withClient(fn: (stt: SttService, rig: SttRig) => Promise<void>): Promise<void> {
    const rig = await t.rig();
    const stt = t.create({ provider: t.provider, ...rig.options });
    try {
      await stt.start(startParams(16000));
      await fn(stt, rig);
    } finally {
      await stt.stop?.();
      await rig.close();
    }
  }

  for (const rate of [8000, 16000]) {
    Deno.test(
      name(`speech at ${rate} Hz becomes a final transcription`),
      () =>
        withClient(async (stt, rig) => {
          rig.say("hello conformance");
          const got = finals(await utterance(stt, rate));
          assert.equal(got.length, 1, "not one final transcription");
          assert.equal(got[0].text, "hello conformance");
          assert.equal(got[0].final, true);
          // The audio is on its way while the transcript (scripted ahead) is back already.
          const end = Date.now() + 2000;
          while (rig.audioBytes() === 0 && Date.now() < end) {
            await new Promise((r) => setTimeout(r, 10));
          }
          assert.ok(rig.audioBytes() > 0, "no audio reached the provider");
        }),
    );
  }

  Deno.test(name("muted audio never reaches the provider"), () =>
    withClient(async (stt, rig) => {
      stt.setMuted(true);
      const heard = () => rig.loudBytes?.() ?? rig.audioBytes();
      const before = heard();
      stt.speechStarted?.();
      for (const f of toneFrames(0.5, 16000)) await stt.runStt(f);
      await stt.speechStopped?.();
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(heard(), before);
    }));

  if (!t.skip?.auth) {
    Deno.test(
      name("a wrong key is an auth error naming the provider, not the key"),
      () => wrongKeyFails(),
    );
  }

  async function wrongKeyFails(): Promise<void> {
    const rig = await t.rig();
    const stt = t.create({
      provider: t.provider,
      ...rig.options,
      ...(rig.wrongOptions ?? { apiKey: rig.wrongKey }),
    });
    try {
      rig.say("never heard");
      let err: unknown;
      try {
        await stt.start(startParams(16000));
        // Streaming clients may learn of the refusal only when their connection reports it.
        const end = Date.now() + 3000;
        while (err === undefined && Date.now() < end) {
          await utterance(stt, 16000, 200).catch((e) => (err = e));
        }
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof FlowcatError, `not a FlowcatError: ${String(err)}`);
      assert.equal(err.kind, "auth");
      assert.ok(err.message.includes(t.provider), `"${err.message}" does not name the provider`);
      assert.ok(!err.message.includes(rig.wrongKey), "the error holds the key");
    } finally {
      await stt.stop?.();
      await rig.close();
    }
  }

  Deno.test(
    name("a server failure does not lose the next transcript"),
    () =>
      withClient(async (stt, rig) => {
        rig.fail();
        rig.say("after the failure");
        // The failure may be reported (once, naming the provider); the speech after it counts.
        const errors: unknown[] = [];
        let got = finals(await utterance(stt, 16000, 5000, errors));
        if (got.length === 0) got = finals(await utterance(stt, 16000, 5000, errors));
        assert.deepEqual(got.map((f) => f.text), ["after the failure"]);
        assert.ok(errors.length <= 1, `the failure was reported ${errors.length} times`);
        for (const err of errors) {
          assert.ok(err instanceof Error && err.message.includes(t.provider), String(err));
        }
      }),
  );

  Deno.test(name("stop is idempotent"), () =>
    withClient(async (stt) => {
      await stt.stop?.();
      await stt.stop?.();
    }));
}
