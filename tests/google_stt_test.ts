/**
 * Google Cloud Speech streaming recognition over gRPC against a local grpc-js server speaking
 * google.cloud.speech.v1 StreamingRecognize, with tokens from the local OAuth fake.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { SttService } from "../core/seams.ts";
import { createGoogleStt, GOOGLE_STT_PATH } from "../providers/google/speech.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import type { GoogleOAuthFake } from "./fakes/google_oauth_fake.ts";
import { withOAuth } from "./_google_helpers.ts";
import { GOOGLE_SPEECH_PROTO, GrpcRecognizeFake } from "./fakes/grpc_recognize_fake.ts";
import {
  feedUntil,
  feedUntilError,
  frame20ms,
  STT_PARAMS,
  transcripts,
} from "./_grpc_stt_helpers.ts";
import { TcpProxy } from "./fakes/_tcp_proxy.ts";
import { until } from "./_core_helpers.ts";

async function withFakes(
  fn: (fake: GrpcRecognizeFake, oauth: GoogleOAuthFake, opts: ServiceOptions) => Promise<void>,
): Promise<void> {
  await withOAuth(async (oauth, keyJson) => {
    const fake = await new GrpcRecognizeFake({
      proto: GOOGLE_SPEECH_PROTO,
      pkg: "google.cloud.speech.v1",
      path: GOOGLE_STT_PATH,
      bearer: (t) => oauth.accepts(t),
    }).start();
    try {
      await fn(fake, oauth, {
        provider: "google",
        apiKey: keyJson,
        baseUrl: fake.url,
        options: { retry_interval_ms: 0 },
      });
    } finally {
      fake.close();
    }
  });
}

async function started(opts: ServiceOptions): Promise<SttService> {
  const stt = createGoogleStt(opts);
  await stt.start(STT_PARAMS);
  return stt;
}

Deno.test("google stt: config first, 16 kHz audio, interim then final on speech end", async () => {
  await withFakes(async (fake, _oauth, opts) => {
    const stt = await started({ ...opts, language: "de-DE", options: { phrases: ["Flowcat"] } });
    try {
      const interim = await feedUntil(stt, (f) => f.length > 0);
      assert.deepEqual(transcripts(interim), ["InterimTranscription:hello"]);
      await stt.speechStopped!();
      // The next stream opens at once, before any more audio.
      await until(() => fake.streams.length === 2, 2000, "a second stream");
      const final = await feedUntil(stt, (f) => f.some((x) => x.kind === "Transcription"));
      const t = final.find((x) => x.kind === "Transcription");
      assert.ok(t?.kind === "Transcription");
      assert.equal(t.text, "hello world");
      assert.equal(t.final, true);
      assert.equal(t.language, "de-DE");
      const s = fake.streams[0];
      assert.deepEqual(s.config, {
        config: {
          encoding: 1,
          sample_rate_hertz: 16000,
          language_code: "de-DE",
          speech_contexts: [{ phrases: ["Flowcat"] }],
          enable_automatic_punctuation: true,
          model: "latest_long",
        },
        interim_results: true,
      });
      assert.ok(s.halfClosed, "speechStopped half-closes the stream");
      // 8 kHz in, 16 kHz out: twice the bytes per frame of input.
      assert.equal(s.audioBytes % 640, 0);
      // The second stream carries the same token.
      assert.equal(fake.streams[1].metadata.authorization, s.metadata.authorization);
    } finally {
      await stt.stop!();
    }
  });
});

Deno.test("google stt: a revoked token is UNAUTHENTICATED; the next stream gets a new one", async () => {
  await withFakes(async (fake, oauth, opts) => {
    const stt = await started(opts);
    try {
      await feedUntil(stt, (f) => f.length > 0);
      oauth.revokeAll();
      await stt.speechStopped!(); // the next stream opens with the revoked token
      const err = await feedUntilError(stt);
      assert.equal(err.kind, "auth");
      assert.match(err.message, /^google: gRPC UNAUTHENTICATED: /);
      // The first stream's final may come first; then the third stream transcribes.
      await feedUntil(stt, (f) => transcripts(f).includes("InterimTranscription:hello"));
      assert.equal(oauth.grants.length, 2);
      assert.equal(fake.streams.length, 3);
    } finally {
      await stt.stop!();
    }
  });
});

Deno.test("google stt: interim pieces of one response are one interim; finals stand alone", async () => {
  await withFakes(async (fake, _oauth, opts) => {
    // Google's own example (cloud_speech.proto, StreamingRecognizeResponse).
    fake.plans.push({
      kind: "script",
      responses: [
        [{ transcript: "to be", isFinal: false }, { transcript: " or not to be", isFinal: false }],
        [
          { transcript: "to be or not to be", isFinal: true },
          { transcript: " that is", isFinal: false },
          { transcript: " the question", isFinal: false },
        ],
      ],
    });
    const stt = await started(opts);
    try {
      const frames = await feedUntil(stt, (f) => f.length >= 3);
      assert.deepEqual(transcripts(frames), [
        "InterimTranscription:to be or not to be",
        "Transcription:to be or not to be",
        "InterimTranscription:that is the question",
      ]);
    } finally {
      await stt.stop!();
    }
  });
});

Deno.test("google stt: quota (RESOURCE_EXHAUSTED) is said once, then a new stream works", async () => {
  await withFakes(async (fake, _oauth, opts) => {
    fake.plans.push({ kind: "fail", code: 8, details: "Quota exceeded" });
    const stt = await started(opts);
    try {
      const err = await feedUntilError(stt);
      assert.equal(err.kind, "protocol");
      assert.equal(err.message, "google: gRPC RESOURCE_EXHAUSTED: Quota exceeded");
      const frames = await feedUntil(stt, (f) => f.length > 0);
      assert.deepEqual(transcripts(frames), ["InterimTranscription:hello"]);
      assert.equal(fake.streams.length, 2);
    } finally {
      await stt.stop!();
    }
  });
});

Deno.test("google stt: an in-band error status is reported like a stream status", async () => {
  await withFakes(async (fake, _oauth, opts) => {
    fake.plans.push({ kind: "inband_error", code: 13, message: "internal failure" });
    const stt = await started(opts);
    try {
      const err = await feedUntilError(stt);
      assert.equal(err.message, "google: gRPC INTERNAL: internal failure");
    } finally {
      await stt.stop!();
    }
  });
});

Deno.test("google stt: a connection cut in the network is a closed error", async () => {
  await withFakes(async (fake, _oauth, opts) => {
    const proxy = new TcpProxy(fake.port);
    fake.plans.push({ kind: "drop" });
    let cut: Promise<void> | undefined;
    fake.onDrop = () => void (cut ??= proxy.close());
    const stt = await started({ ...opts, baseUrl: `http://127.0.0.1:${proxy.port}` });
    try {
      const err = await feedUntilError(stt);
      assert.equal(err.kind, "closed");
      assert.match(err.message, /^google: gRPC UNAVAILABLE/);
    } finally {
      await stt.stop!();
      await (cut ??= proxy.close());
    }
  });
});

Deno.test("google stt: stop cancels the open stream", async () => {
  await withFakes(async (fake, _oauth, opts) => {
    const stt = await started(opts);
    await stt.runStt(frame20ms());
    await until(() => fake.streams[0]?.audioBytes > 0, 2000, "audio at the fake");
    await stt.stop!();
    await until(() => fake.streams[0].cancelled, 2000, "the fake sees the cancel");
    assert.deepEqual(await stt.runStt(frame20ms()), [], "nothing after stop");
  });
});

Deno.test("google stt: a key the token endpoint refuses fails start with an auth error", async () => {
  await withFakes(async (fake, oauth, opts) => {
    await oauth.account(); // the endpoint now trusts another key
    const stt = createGoogleStt(opts);
    await assert.rejects(stt.start(STT_PARAMS), (e: unknown) => {
      assert.ok(e instanceof FlowcatError && e.kind === "auth");
      return true;
    });
    await stt.stop!();
    assert.equal(fake.streams.length, 0);
  });
});

Deno.test("google stt: missing key and bad options are one config line each", () => {
  assert.throws(
    () => createGoogleStt({ provider: "google" }),
    /^FlowcatError: google: no service-account key \(set GOOGLE_APPLICATION_CREDENTIALS\)$/,
  );
});
