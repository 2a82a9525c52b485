/**
 * The text-to-speech conformance suite: what every TTS provider client must do, checked against
 * that provider's local fake through the real client code path. A provider joins by describing
 * a {@link TtsTarget} (its factory and a rig around its fake) and calling
 * {@link ttsConformance}; tests/tts_conformance_test.ts lists them. A provider's own test file
 * keeps only what is particular to its wire (request shapes, framing, options).
 *
 * The checks: audio streams as TtsStarted, TtsAudio..., a `tts_usage` Metrics frame, TtsStopped
 * at the rate the service reports, for every sample rate it offers; blank text sends nothing;
 * an abort mid-stream ends the stream promptly; a wrong key is a `FlowcatError` of kind `auth`
 * that names the provider and never holds the key; a rate limit and a server error either are
 * retried to success (clients that retry) or end in an error naming the provider, never of kind
 * `auth`; a connection dropped mid-stream fails that utterance and the next one works; `stop` is
 * idempotent.
 * @module
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, StartParams } from "../core/frames.ts";
import type { TtsService } from "../core/seams.ts";
import type { ServiceOptions } from "../providers/service_options.ts";

/** How the fake answers the next utterance. */
export type TtsScenario =
  /** Audio, then the end of the utterance. */
  | "audio"
  /** Some audio, then nothing until the client gives up (cancellation). */
  | "stall"
  /** HTTP 429 or the provider's rate-limit message. */
  | "rate_limit"
  /** HTTP 5xx or the provider's server-error message. */
  | "server_error"
  /** Some audio, then the connection is cut. */
  | "drop";

/** A running fake of one provider. */
export interface TtsRig {
  /** Options that point the client at the fake with the key it accepts. */
  options: Omit<ServiceOptions, "provider">;
  /** The key the fake refuses (the secret an error must never hold). */
  wrongKey: string;
  /** Options carrying {@link wrongKey}; default `{ apiKey: wrongKey }` (AWS: credentials). */
  wrongOptions?: Partial<ServiceOptions>;
  /** Script how the fake answers from the next utterance on (default "audio"). */
  next(scenario: TtsScenario): void;
  /** Utterances (requests or generation messages) the fake has received. */
  utterances(): number;
  /** Stop the fake. */
  close(): Promise<void>;
}

/** A provider under the suite. */
export interface TtsTarget {
  /** The provider's name as the config spells it (errors must carry it). */
  provider: string;
  /** Makes the client, exactly as the registry does. */
  create(opts: ServiceOptions): TtsService;
  /** Output rates the client can be asked for with `options.sample_rate`. */
  sampleRates: number[];
  /** Starts the fake; absent for in-process engines (no network checks then). */
  rig?(): Promise<TtsRig>;
  /** Whether a 429 / 5xx is retried (the fake answers once with it, then with audio). */
  retries?: boolean;
  /** Checks that do not apply, with the reason (e.g. a wire without a rate-limit signal). */
  skip?: Partial<Record<"rate_limit" | "drop" | "auth", string>>;
}

/** Start parameters with usage metrics on, at `outRate`. */
export function startParams(outRate: number): StartParams {
  return {
    audioInSampleRate: 16000,
    audioOutSampleRate: outRate,
    enableMetrics: true,
    enableUsageMetrics: true,
    enableTracing: false,
    reportOnlyInitialTtfb: false,
  };
}

/** Every frame of one utterance. */
export async function collectFrames(
  it: AsyncIterable<Frame>,
  onFrame?: (f: Frame) => void,
): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) {
    out.push(f);
    onFrame?.(f);
  }
  return out;
}

/** The thrown value of `fn`, which must throw. */
async function failure(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  assert.fail("expected an error");
}

function assertNamed(err: unknown, provider: string, secret?: string): void {
  assert.ok(err instanceof Error, `not an Error: ${String(err)}`);
  assert.ok(err.message.includes(provider), `"${err.message}" does not name ${provider}`);
  if (secret) assert.ok(!err.message.includes(secret), "the error holds the key");
}

/** Register the suite's tests for one provider. */
export function ttsConformance(t: TtsTarget): void {
  const name = (what: string) => `tts conformance: ${t.provider}: ${what}`;

  /** A client over a fresh fake (or none), started; both closed after `fn`. */
  async function withClient(
    extra: Partial<ServiceOptions>,
    fn: (tts: TtsService, rig: TtsRig | undefined) => Promise<void>,
  ): Promise<void> {
    const rig = await t.rig?.();
    const tts = t.create({ provider: t.provider, ...rig?.options, ...extra });
    try {
      await tts.start(startParams(tts.sampleRate()));
      await fn(tts, rig);
    } finally {
      await tts.stop?.();
      await rig?.close();
    }
  }

  for (const rate of t.sampleRates) {
    Deno.test(
      name(`streams audio at ${rate} Hz with a usage frame`),
      () =>
        withClient({ options: { sample_rate: rate } }, async (tts) => {
          assert.equal(tts.sampleRate(), rate);
          const text = "Conformance is a contract.";
          const frames = await collectFrames(tts.runTts(text));
          const kinds = frames.map((f) => f.kind);
          assert.equal(kinds[0], "TtsStarted");
          assert.equal(kinds.at(-1), "TtsStopped");
          const audio = frames.flatMap((f) => f.kind === "TtsAudio" ? [f] : []);
          assert.ok(audio.length > 0, "no audio");
          for (const f of audio) {
            assert.equal(f.audio.sampleRate, rate);
            assert.equal(f.audio.numChannels, 1);
          }
          const lastAudio = kinds.lastIndexOf("TtsAudio");
          const usage = frames.findIndex((f) =>
            f.kind === "Metrics" && f.data.some((d) => d.type === "tts_usage")
          );
          assert.ok(usage > lastAudio, "no tts_usage Metrics frame after the audio");
          const data = (frames[usage] as Extract<Frame, { kind: "Metrics" }>).data
            .find((d) => d.type === "tts_usage");
          assert.equal(data && "characters" in data ? data.characters : -1, text.length);
        }),
    );
  }

  Deno.test(name("blank text sends nothing"), () =>
    withClient({}, async (tts, rig) => {
      const before = rig?.utterances() ?? 0;
      const kinds = (await collectFrames(tts.runTts("  "))).map((f) => f.kind);
      assert.deepEqual(kinds.filter((k) => k !== "Metrics"), ["TtsStarted", "TtsStopped"]);
      assert.equal(rig?.utterances() ?? 0, before);
    }));

  Deno.test(
    name("an abort mid-stream ends the stream promptly"),
    () =>
      withClient({}, async (tts, rig) => {
        rig?.next("stall");
        const ctl = new AbortController();
        // Abort at the first audio, or after a second for clients that buffer a whole answer.
        const late = setTimeout(() => ctl.abort(), 1000);
        let abortedAt = 0;
        let afterAbort = 0;
        const onFrame = (f: Frame) => {
          if (f.kind !== "TtsAudio") return;
          if (ctl.signal.aborted) afterAbort++;
          else ctl.abort();
        };
        ctl.signal.addEventListener("abort", () => abortedAt = performance.now());
        try {
          await collectFrames(
            tts.runTts("A long answer that will be cut off.", ctl.signal),
            onFrame,
          )
            .catch((err) => {
              // An abort may surface as an error; anything before it is a failure.
              if (!ctl.signal.aborted) throw err;
            });
        } finally {
          clearTimeout(late);
        }
        assert.ok(ctl.signal.aborted, "the stream ended although the fake stalled");
        assert.equal(afterAbort, 0, "audio after the abort");
        const lag = performance.now() - abortedAt;
        assert.ok(lag < 2000, `the stream outlived the abort by ${Math.round(lag)} ms`);
      }),
  );

  Deno.test(name("stop is idempotent"), () =>
    withClient({}, async (tts) => {
      await tts.stop?.();
      await tts.stop?.();
    }));

  if (!t.rig) return;

  if (!t.skip?.auth) {
    Deno.test(name("a wrong key is an auth error naming the provider, not the key"), async () => {
      const rig = await t.rig!();
      const tts = t.create({
        provider: t.provider,
        ...rig.options,
        ...(rig.wrongOptions ?? { apiKey: rig.wrongKey }),
      });
      try {
        const err = await failure(async () => {
          await tts.start(startParams(tts.sampleRate()));
          await collectFrames(tts.runTts("Hello."));
        });
        assert.ok(err instanceof FlowcatError, `not a FlowcatError: ${String(err)}`);
        assert.equal(err.kind, "auth");
        assertNamed(err, t.provider, rig.wrongKey);
      } finally {
        await tts.stop?.();
        await rig.close();
      }
    });
  }

  const failing: ("rate_limit" | "server_error")[] = ["rate_limit", "server_error"];
  for (const scenario of failing) {
    if (scenario === "rate_limit" && t.skip?.rate_limit) continue;
    const what = scenario === "rate_limit" ? "a rate limit" : "a server error";
    const outcome = t.retries ? "is retried to success" : "fails naming the provider";
    Deno.test(name(`${what} ${outcome}`), () =>
      withClient({}, async (tts, rig) => {
        rig!.next(scenario);
        if (t.retries) {
          const frames = await collectFrames(tts.runTts("Try again."));
          assert.ok(frames.some((f) => f.kind === "TtsAudio"), "no audio after the retry");
          assert.ok(rig!.utterances() >= 2, "not retried");
          return;
        }
        const err = await failure(() => collectFrames(tts.runTts("Try again.")));
        assertNamed(err, t.provider, String(rig!.options.apiKey ?? "") || undefined);
        if (err instanceof FlowcatError) assert.notEqual(err.kind, "auth");
        rig!.next("audio");
        const frames = await collectFrames(tts.runTts("And now?"));
        assert.ok(frames.some((f) => f.kind === "TtsAudio"), "no audio on the next utterance");
      }));
  }

  if (!t.skip?.drop) {
    Deno.test(
      name("a connection cut mid-stream fails that utterance; the next works"),
      () =>
        withClient({}, async (tts, rig) => {
          rig!.next("drop");
          const err = await failure(() => collectFrames(tts.runTts("Cut me off.")));
          assertNamed(err, t.provider);
          rig!.next("audio");
          const frames = await collectFrames(tts.runTts("Still there?"));
          assert.ok(frames.some((f) => f.kind === "TtsAudio"), "no audio after the drop");
        }),
    );
  }
}
