/**
 * The Amazon Transcribe streaming client against a local fake speaking Transcribe's WebSocket
 * wire (presigned URL checked by the fake with its own copy of the secret, event-stream
 * AudioEvents in, TranscriptEvents and exceptions out): 8 and 16 kHz, partial and final
 * results, mute, end of stream, refused signatures, exceptions, a dropped socket and a failed
 * reconnect.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { audioFrame, type Frame, type StartParams } from "../core/frames.ts";
import { TranscribeStt } from "../providers/aws/transcribe.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { until } from "./_core_helpers.ts";
import { awsEnv, FAKE_AWS_CREDENTIALS } from "./fakes/aws_http_fake.ts";
import { TranscribeFake } from "./fakes/transcribe_fake.ts";

const PARAMS: StartParams = {
  audioInSampleRate: 8000,
  audioOutSampleRate: 8000,
  enableMetrics: false,
  enableUsageMetrics: false,
  enableTracing: false,
  reportOnlyInitialTtfb: false,
};

/** 20 ms of a ramp at `rate` (not silent, so muting shows). */
function frame20ms(rate: number) {
  const n = rate / 50;
  return audioFrame(Int16Array.from({ length: n }, (_, i) => (i * 97) % 4000 - 2000), rate);
}

async function withClient(
  opts: Partial<ServiceOptions>,
  fn: (stt: TranscribeStt, fake: TranscribeFake) => Promise<void>,
  fakeOpts: ConstructorParameters<typeof TranscribeFake>[0] = {},
): Promise<void> {
  const fake = new TranscribeFake({ region: "eu-west-1", ...fakeOpts }).start();
  const stt = new TranscribeStt({
    provider: "aws",
    baseUrl: fake.url,
    credentials: awsEnv(fake.credentials, "eu-west-1"),
    ...opts,
  });
  try {
    await stt.start(PARAMS);
    await until(() => fake.connections.length === 1, 3000, "the stream opened");
    await fn(stt, fake);
  } finally {
    await stt.stop();
    await fake.close();
  }
}

/** Feed silence-free audio until `want` frames come back. */
async function frames(stt: TranscribeStt, want: number, rate = 8000): Promise<Frame[]> {
  const got: Frame[] = [];
  const end = Date.now() + 3000;
  while (got.length < want) {
    if (Date.now() > end) throw new Error(`got ${got.length} of ${want} frames`);
    got.push(...await stt.runStt(frame20ms(rate)));
    if (got.length < want) await new Promise((r) => setTimeout(r, 5));
  }
  return got;
}

for (const rate of [8000, 16000]) {
  Deno.test(`transcribe: ${rate} Hz PCM goes out as AudioEvents on a presigned stream`, async () => {
    await withClient({ language: "en-GB", options: { sample_rate: rate } }, async (stt, fake) => {
      const up = fake.upgrades[0];
      assert.equal(up.status, 101);
      assert.equal(up.query["language-code"], "en-GB");
      assert.equal(up.query["media-encoding"], "pcm");
      assert.equal(up.query["sample-rate"], String(rate));
      assert.equal(up.query["X-Amz-Expires"], "300");
      assert.match(up.query["X-Amz-Credential"], /^AKIDEXAMPLE\/\d{8}\/eu-west-1\/transcribe\//);
      // 8 kHz call audio, resampled to the stream's rate, sent in 50 ms AudioEvents.
      for (let i = 0; i < 10; i++) await stt.runStt(frame20ms(8000));
      const chunk = (rate / 20) * 2;
      const sent = () => fake.current!.audio.reduce((n, a) => n + a.length, 0);
      // Every third 20 ms frame completes a 50 ms chunk: three AudioEvents, 20 ms still held.
      await until(() => sent() >= chunk * 3, 2000, "three chunks of audio");
      const sizes = fake.current!.audio.map((a) => a.length);
      assert.equal(sizes.length, 3, `${sizes}`);
      assert.ok(sizes.every((n) => n >= chunk && n < chunk + (rate / 50) * 2), `${sizes}`);
      if (rate === 8000) {
        const got = new Int16Array(fake.current!.audio[0].slice().buffer);
        assert.deepEqual(got.subarray(0, 160), frame20ms(8000).pcm, "8 kHz passes unchanged");
      }
    });
  });
}

Deno.test("transcribe: partial results are interim, a final result is a Transcription", async () => {
  await withClient({}, async (stt, fake) => {
    fake.sendResults([{ text: "hello", partial: true, resultId: "a" }]);
    fake.sendResults([{ text: "hello there", partial: true, resultId: "a" }]);
    fake.sendResults([{ text: "Hello there.", partial: false, resultId: "a" }]);
    const got = await frames(stt, 3);
    assert.deepEqual(got.map((f) => [f.kind, (f as { text: string }).text]), [
      ["InterimTranscription", "hello"],
      ["InterimTranscription", "hello there"],
      ["Transcription", "Hello there."],
    ]);
    const final = got[2];
    assert.ok(final.kind === "Transcription" && final.final && final.language === "en-US");
  });
});

Deno.test("transcribe: muted audio is sent as silence of the same length", async () => {
  await withClient({ options: { sample_rate: 8000 } }, async (stt, fake) => {
    stt.setMuted(true);
    for (let i = 0; i < 3; i++) await stt.runStt(frame20ms(8000));
    stt.setMuted(false);
    for (let i = 0; i < 3; i++) await stt.runStt(frame20ms(8000));
    await until(() => fake.current!.audio.length === 2, 2000, "two AudioEvents");
    const [muted, live] = fake.current!.audio;
    assert.equal(muted.length, 960);
    assert.ok(muted.every((b) => b === 0));
    assert.ok(live.some((b) => b !== 0));
  });
});

Deno.test("transcribe: stop sends the empty AudioEvent that ends the stream", async () => {
  const fake = new TranscribeFake().start();
  try {
    const stt = new TranscribeStt({
      provider: "aws",
      baseUrl: fake.url,
      credentials: awsEnv(FAKE_AWS_CREDENTIALS, "us-east-1"),
    });
    await stt.start(PARAMS);
    await stt.runStt(frame20ms(8000));
    await stt.stop();
    await until(() => fake.current?.ended === true, 2000, "end of stream");
    assert.equal(fake.current!.audio.length, 1, "the held 20 ms went out before the end");
    await stt.stop();
  } finally {
    await fake.close();
  }
});

Deno.test("transcribe: a wrong secret or region is refused at start as an auth error", async () => {
  const fake = new TranscribeFake().start();
  try {
    for (
      const env of [
        { ...awsEnv(FAKE_AWS_CREDENTIALS, "us-east-1"), AWS_SECRET_ACCESS_KEY: "nope" },
        awsEnv(FAKE_AWS_CREDENTIALS, "us-west-2"),
      ]
    ) {
      const stt = new TranscribeStt({ provider: "aws", baseUrl: fake.url, credentials: env });
      const err = await stt.start(PARAMS).catch((e) => e);
      assert.ok(err instanceof FlowcatError, String(err));
      assert.equal(err.kind, "auth");
      assert.ok(!err.message.includes("nope"));
      await stt.stop();
    }
    assert.deepEqual(fake.upgrades.map((u) => u.status), [403, 403]);
    assert.match(fake.upgrades[0].reason!, /signature we calculated does not match/);
    assert.match(fake.upgrades[1].reason!, /credential scope/);
  } finally {
    await fake.close();
  }
});

Deno.test("transcribe: temporary credentials presign their session token", async () => {
  const credentials = { ...FAKE_AWS_CREDENTIALS, sessionToken: "IQoJb3JpZ2luEXAMPLE/+=" };
  await withClient({}, (_stt, fake) => {
    assert.equal(fake.upgrades[0].query["X-Amz-Security-Token"], credentials.sessionToken);
    return Promise.resolve();
  }, { credentials });
});

Deno.test("transcribe: an exception from Transcribe is thrown by the next runStt", async () => {
  await withClient({}, async (stt, fake) => {
    fake.sendException("LimitExceededException", "You have reached your limit");
    const end = Date.now() + 3000;
    let err: unknown;
    while (err === undefined && Date.now() < end) {
      err = await stt.runStt(frame20ms(8000)).then(() => undefined, (e) => e);
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(err instanceof FlowcatError, String(err));
    assert.equal(err.message, "aws: LimitExceededException: You have reached your limit");
  });
});

Deno.test("transcribe: a dropped socket is reopened with a new presigned URL", async () => {
  await withClient({}, async (stt, fake) => {
    fake.drop();
    await until(() => fake.connections.length === 2, 3000, "a second stream");
    assert.equal(fake.upgrades.filter((u) => u.status === 101).length, 2);
    await until(() => fake.current!.socket.readyState === WebSocket.OPEN, 2000, "open");
    fake.sendResults([{ text: "after the drop", partial: false }]);
    const got = await frames(stt, 1);
    assert.equal((got[0] as { text: string }).text, "after the drop");
    for (let i = 0; i < 100 && fake.current!.audio.length === 0; i++) {
      await stt.runStt(frame20ms(8000));
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(fake.current!.audio.length > 0, "audio on the new stream");
  });
});

Deno.test("transcribe: a failed reconnect is reported once, then retried", async () => {
  await withClient({ options: { retry_interval_ms: 50 } }, async (stt, fake) => {
    fake.refuseWith = 503;
    fake.drop();
    const end = Date.now() + 3000;
    let err: unknown;
    while (err === undefined && Date.now() < end) {
      err = await stt.runStt(frame20ms(8000)).then(() => undefined, (e) => e);
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(err instanceof FlowcatError, String(err));
    assert.match(err.message, /^aws: connection lost \(aws: could not connect: HTTP 503\)/);
    fake.refuseWith = undefined;
    // Retries ride on runStt calls, at most one per retry interval.
    for (let i = 0; i < 300 && (fake.current?.audio.length ?? 0) === 0; i++) {
      await stt.runStt(frame20ms(8000)).catch(() => {});
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(fake.connections.length, 2, "one new stream, not one per call");
    assert.ok(fake.current!.audio.length > 0);
  });
});

Deno.test("transcribe: bad options are config errors", () => {
  const base = { provider: "aws", credentials: awsEnv(FAKE_AWS_CREDENTIALS, "us-east-1") };
  assert.throws(
    () => new TranscribeStt({ ...base, options: { sample_rate: 44100 } }),
    /8000 or 16000/,
  );
  assert.throws(
    () => new TranscribeStt({ ...base, options: { partial_results_stability: "max" } }),
    /partial_results_stability/,
  );
  assert.throws(() => new TranscribeStt({ provider: "aws" }), /missing AWS credentials/);
  assert.throws(
    () => new TranscribeStt({ ...base, language: "en" }),
    /language "en" is not a Transcribe language code/,
  );
});
