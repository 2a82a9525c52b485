/**
 * The realtime (speech-to-speech) conformance suite: what every realtime provider client must
 * do, checked against that provider's local fake (or, for a local model, the model itself)
 * through the real client code path. A provider joins by describing a {@link RealtimeTarget}
 * (its factory and a rig scripting its fake) and calling {@link realtimeConformance};
 * tests/realtime_conformance_test.ts lists them. A provider's own test file keeps only what is
 * particular to its wire (setup shapes, resumption, dialects).
 *
 * The checks: caller audio at 8 and 16 kHz reaches the provider at the rate it takes; the
 * model's answer comes back as `audio_out` at the provider's output rate with final user and
 * assistant transcripts and a `turn_complete`; a barge-in gives `interrupted` and the provider
 * is told (or detected it itself); a tool call round trip; usage where the provider reports
 * it; a rate limit or server error mid-session is survived where the provider's wire allows; a wrong key is a `FlowcatError` of kind `auth` naming the provider and never holding the
 * key; a dropped socket is resumed (the next answer arrives) or ends the session with a
 * `closed` event carrying the reason, as the provider documents; `close` is idempotent.
 * @module
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { AudioFrame, ToolDecl } from "../core/frames.ts";
import type { RealtimeEvent, RealtimeLlm, RealtimeSetup } from "../core/seams.ts";
import type { RealtimeFactory, RealtimeProviderOptions } from "../providers/provider_types.ts";
import { toneFrames } from "./_stt_conformance.ts";

/** What one scripted answer says. */
export interface Turn {
  /** The caller's words (the provider's transcript of them). */
  user: string;
  /** The model's words. */
  bot: string;
}

/** A running fake of one provider (or the driver of a local model). */
export interface RealtimeRig {
  /** Options that point the client at the fake with the key it accepts. */
  options: RealtimeProviderOptions;
  /** The key the fake refuses (the secret an error must never hold); absent without credentials. */
  wrongKey?: string;
  /** Options carrying {@link wrongKey}; default `{ apiKey: wrongKey }` (AWS: credentials). */
  wrongOptions?: Partial<RealtimeProviderOptions>;
  /** Options with the credentials left out; default `{ apiKey: undefined }`. */
  missingOptions?: Partial<RealtimeProviderOptions>;
  /** The model answers the caller's turn `turn`: its audio, both transcripts, the turn end. */
  answer(llm: RealtimeLlm, turn: Turn): Promise<void>;
  /** The model starts an answer and keeps it open (audio sent, no turn end). */
  startAnswer(llm: RealtimeLlm): Promise<void>;
  /** The caller talks over the open answer. */
  bargeIn(llm: RealtimeLlm): Promise<void>;
  /** Resolves once the provider was told of the barge-in; absent where it detects it itself. */
  providerToldOfBargeIn?(): Promise<void>;
  /** The model calls `name` with `args` (the first tool offered, for a local model). */
  callTool(llm: RealtimeLlm, name: string, args: Record<string, unknown>): Promise<void>;
  /** Resolves with the output the provider got for call `id`. */
  toolOutput(id: string, events: RealtimeEvent[]): Promise<unknown>;
  /** Caller audio the provider received, in samples at its input rate; absent for a local model. */
  audioIn?(): number;
  /**
   * The provider reports a rate limit or a server error mid-session, as its wire does (an error
   * event, or a close the client recovers from); absent where a failure simply ends the call.
   */
  fail?(kind: "rate_limit" | "server_error"): Promise<void>;
  /** Cut the connection without a close frame; absent for a local model. */
  drop?(): Promise<void>;
  /** Stop the fake. */
  close(): Promise<void>;
}

/** A provider under the suite. */
export interface RealtimeTarget {
  /** The provider's name as the config spells it (errors must carry it). */
  provider: string;
  /** Makes the client, exactly as the registry does. */
  create: RealtimeFactory;
  /** Rate the provider takes caller audio at; absent: the caller's own (the wire names it). */
  inputRate?: number;
  /** Rate of the model's audio. */
  outputRate: number;
  /** The transcripts are the provider's words (false: a local model describes what it heard). */
  exactTranscripts: boolean;
  /** Whether answers carry usage. */
  usage: boolean;
  /** A rate limit or server error mid-session is survived (the rig scripts them with `fail`). */
  survivesErrors?: boolean;
  /** After a dropped socket: a new session answers on, or the session ends with `closed`. */
  afterDrop?: "resumes" | "ends";
  /** Starts the fake. */
  rig(): Promise<RealtimeRig>;
}

const TOOL: ToolDecl = {
  name: "get_weather",
  description: "Weather for a city",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const SETUP: RealtimeSetup = { systemPrompt: "You are a conformance test.", tools: [TOOL] };

/** Feed `secs` of a tone at `rate`, then `silenceSecs` of silence, in 20 ms frames. */
export function speak(llm: RealtimeLlm, rate: number, secs = 0.5, silenceSecs = 0): void {
  for (const f of toneFrames(secs, rate)) void llm.sendAudio(f);
  const silence: AudioFrame = { pcm: new Int16Array(rate / 50), sampleRate: rate, numChannels: 1 };
  for (let i = 0; i < Math.round(silenceSecs * 50); i++) void llm.sendAudio(silence);
}

/** Wait until `pred` holds, or fail naming `what`. */
export async function until(pred: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Register the suite's tests for one provider. */
export function realtimeConformance(t: RealtimeTarget): void {
  const name = (what: string) => `realtime conformance: ${t.provider}: ${what}`;

  interface Session {
    llm: RealtimeLlm;
    rig: RealtimeRig;
    events: RealtimeEvent[];
    /** Events from index `from` on, once `pred` matched one of them. */
    waitFor(pred: (e: RealtimeEvent) => boolean, what: string, from?: number): Promise<void>;
  }

  async function withSession(fn: (s: Session) => Promise<void>): Promise<void> {
    const rig = await t.rig();
    const llm = t.create(rig.options);
    const events: RealtimeEvent[] = [];
    const pump = (async () => {
      for (let ev = await llm.nextEvent(); ev; ev = await llm.nextEvent()) events.push(ev);
    })();
    const waitFor = (pred: (e: RealtimeEvent) => boolean, what: string, from = 0) =>
      until(() => events.slice(from).some(pred), what);
    try {
      await llm.connect(SETUP);
      // Let the reader take what connect queued (a greeting) before a check counts events.
      await new Promise((r) => setTimeout(r, 0));
      await fn({ llm, rig, events, waitFor });
    } finally {
      await llm.close();
      await pump;
      await rig.close();
    }
  }

  for (const rate of [8000, 16000]) {
    const at = t.inputRate ?? rate;
    Deno.test(
      name(`caller audio at ${rate} Hz reaches the provider at ${at} Hz`),
      () =>
        withSession(async ({ llm, rig }) => {
          const audioIn = rig.audioIn;
          if (audioIn === undefined) return; // a local model: its answers show it heard
          const before = audioIn();
          speak(llm, rate, 0.5);
          const want = at / 2;
          // Resamplers hold back a few samples of filter delay.
          await until(() => audioIn() - before >= want * 0.95, "the caller's audio");
          await new Promise((r) => setTimeout(r, 50));
          assert.ok(audioIn() - before <= want * 1.05, `${audioIn() - before} samples`);
        }),
    );
  }

  Deno.test(
    name("an answer: audio at the output rate, both transcripts, turn end"),
    () =>
      withSession(async ({ llm, rig, events, waitFor }) => {
        const from = events.length;
        await rig.answer(llm, { user: "what is the weather", bot: "sunny all day" });
        await waitFor((e) => e.type === "turn_complete", "turn_complete", from);
        const got = events.slice(from);
        const audio = got.flatMap((e) => e.type === "audio_out" ? [e.audio] : []);
        assert.ok(audio.length > 0, "no model audio");
        for (const a of audio) assert.deepEqual([a.sampleRate, a.numChannels], [t.outputRate, 1]);
        const finals = (type: string) =>
          got.flatMap((e) => (e.type === type && "final" in e && e.final ? [e.text] : []));
        assert.equal(finals("user_text").length, 1, "not one final user transcript");
        assert.equal(finals("bot_text").length, 1, "not one final bot transcript");
        if (t.exactTranscripts) {
          assert.deepEqual(finals("user_text"), ["what is the weather"]);
          assert.deepEqual(finals("bot_text"), ["sunny all day"]);
        }
        const done = got.findIndex((e) => e.type === "turn_complete");
        const lastAudio = got.findLastIndex((e) => e.type === "audio_out");
        assert.ok(lastAudio < done, "audio after the turn end");
        if (t.usage) {
          const usage = got.find((e) => e.type === "usage");
          assert.ok(usage?.type === "usage" && usage.usage.totalTokens > 0, "no usage reported");
        }
      }),
  );

  Deno.test(
    name("a barge-in interrupts the answer and the provider knows"),
    () =>
      withSession(async ({ llm, rig, events, waitFor }) => {
        const from = events.length;
        await rig.startAnswer(llm);
        await waitFor((e) => e.type === "audio_out", "the answer's audio", from);
        await rig.bargeIn(llm);
        await waitFor((e) => e.type === "interrupted", "interrupted", from);
        await rig.providerToldOfBargeIn?.();
        const got = events.slice(from);
        const cut = got.findIndex((e) => e.type === "interrupted");
        assert.ok(got.findIndex((e) => e.type === "audio_out") < cut, "interrupted before audio");
      }),
  );

  Deno.test(
    name("a tool call round trip"),
    () =>
      withSession(async ({ llm, rig, events, waitFor }) => {
        const from = events.length;
        await rig.callTool(llm, TOOL.name, { city: "Oslo" });
        await waitFor((e) => e.type === "tool_call", "tool_call", from);
        const call = events.slice(from).find((e) => e.type === "tool_call")!;
        assert.ok(call.type === "tool_call");
        assert.equal(call.name, TOOL.name);
        if (t.exactTranscripts) assert.deepEqual(call.args, { city: "Oslo" });
        await llm.sendToolResult(call.id, { tempC: 21 });
        assert.deepEqual(await rig.toolOutput(call.id, events), { tempC: 21 });
      }),
  );

  Deno.test(name("a missing key is a config error naming the provider"), async () => {
    const rig = await t.rig();
    try {
      if (rig.wrongKey === undefined) return; // no credentials: checked below
      assert.throws(
        () => t.create({ ...rig.options, ...(rig.missingOptions ?? { apiKey: undefined }) }),
        (e) => e instanceof FlowcatError && e.kind === "config" && e.message.includes(t.provider),
      );
    } finally {
      await rig.close();
    }
  });

  Deno.test(name("a wrong key is an auth error naming the provider, not the key"), async () => {
    const rig = await t.rig();
    try {
      if (rig.wrongKey === undefined) {
        // A provider without credentials must not ask for one.
        const llm = t.create({ ...rig.options, apiKey: undefined });
        await llm.connect(SETUP);
        await llm.close();
        return;
      }
      const llm = t.create({ ...rig.options, ...(rig.wrongOptions ?? { apiKey: rig.wrongKey }) });
      const err = await llm.connect(SETUP).then(() => undefined, (e) => e);
      await llm.close();
      assert.ok(err instanceof FlowcatError, `not a FlowcatError: ${String(err)}`);
      assert.equal(err.kind, "auth");
      assert.ok(err.message.includes(t.provider), `"${err.message}" does not name the provider`);
      assert.ok(!err.message.includes(rig.wrongKey), "the error holds the key");
    } finally {
      await rig.close();
    }
  });

  for (const kind of t.survivesErrors ? ["rate_limit", "server_error"] as const : []) {
    Deno.test(
      name(`a ${kind.replace("_", " ")} mid-session does not end it`),
      () =>
        withSession(async ({ llm, rig, events, waitFor }) => {
          assert.ok(rig.fail !== undefined, "the rig cannot script a failure");
          await rig.fail(kind);
          const from = events.length;
          await rig.answer(llm, { user: "again", bot: "here again" });
          await waitFor((e) => e.type === "turn_complete", `an answer after the ${kind}`, from);
          assert.ok(!events.some((e) => e.type === "closed"), "the session ended");
        }),
    );
  }

  if (t.afterDrop !== undefined) {
    const after = t.afterDrop;
    Deno.test(
      name(
        after === "resumes" ? "a dropped socket is resumed" : "a dropped socket ends the session",
      ),
      () =>
        withSession(async ({ llm, rig, events, waitFor }) => {
          await rig.drop!();
          if (after === "ends") {
            await waitFor((e) => e.type === "closed", "closed");
            const closed = events.find((e) => e.type === "closed");
            assert.ok(closed?.type === "closed" && closed.reason, "closed without a reason");
            return;
          }
          const from = events.length;
          await rig.answer(llm, { user: "are you there", bot: "still here" });
          await waitFor((e) => e.type === "turn_complete", "an answer after the drop", from);
          assert.ok(!events.some((e) => e.type === "closed"), "the session ended");
        }),
    );
  }

  Deno.test(name("close is idempotent and ends the events"), async () => {
    const rig = await t.rig();
    const llm = t.create(rig.options);
    try {
      await llm.connect(SETUP);
      await Promise.all([llm.close(), llm.close()]);
      await llm.close();
      speak(llm, 16000, 0.1); // ignored after close, never a throw
      let ev: RealtimeEvent | undefined;
      const seen: RealtimeEvent[] = [];
      while ((ev = await llm.nextEvent()) !== undefined) seen.push(ev);
      assert.equal(seen.filter((e) => e.type === "closed").length, 1);
    } finally {
      await rig.close();
    }
  });
}
