/**
 * NVIDIA Riva streaming ASR over gRPC against a local grpc-js server speaking
 * nvidia.riva.asr.RivaSpeechRecognition/StreamingRecognize, in plaintext h2c and in TLS.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { SttService } from "../core/seams.ts";
import { GrpcStreamingStt } from "../providers/grpc_stt.ts";
import { createRivaStt, RIVA_ASR_PATH, rivaWire } from "../providers/nvidia/riva.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { GrpcRecognizeFake, RIVA_ASR_PROTO } from "./fakes/grpc_recognize_fake.ts";
import { TcpProxy } from "./fakes/_tcp_proxy.ts";
import {
  feedUntil,
  feedUntilError,
  frame20ms,
  STT_PARAMS,
  transcripts,
} from "./_grpc_stt_helpers.ts";
import { makeTestCerts } from "./_tls_certs.ts";
import { until } from "./_core_helpers.ts";

function rivaFake(
  extra: { bearer?: (t: string) => boolean; tls?: { key: string; cert: string; ca: string } } = {},
) {
  return new GrpcRecognizeFake({
    proto: RIVA_ASR_PROTO,
    pkg: "nvidia.riva.asr",
    path: RIVA_ASR_PATH,
    ...extra,
  }).start();
}

async function withRiva(
  fn: (fake: GrpcRecognizeFake, opts: ServiceOptions) => Promise<void>,
  extra: { bearer?: (t: string) => boolean } = {},
): Promise<void> {
  const fake = await rivaFake(extra);
  try {
    await fn(fake, { provider: "riva", baseUrl: fake.url, options: { retry_interval_ms: 0 } });
  } finally {
    fake.close();
  }
}

async function started(stt: SttService): Promise<SttService> {
  await stt.start(STT_PARAMS);
  return stt;
}

Deno.test("riva: h2c stream, config first, interim then final when speech stops", async () => {
  await withRiva(async (fake, opts) => {
    const stt = await started(createRivaStt({
      ...opts,
      model: "parakeet-ctc-1.1b-asr",
      options: {
        ...opts.options,
        phrases: ["Flowcat"],
        boost: 20,
        custom_configuration: { left_padding: "100" },
      },
    }));
    try {
      const interim = await feedUntil(stt, (f) => f.length > 0);
      assert.deepEqual(transcripts(interim), ["InterimTranscription:hello"]);
      await stt.speechStopped!();
      const final = await feedUntil(stt, (f) => f.some((x) => x.kind === "Transcription"));
      assert.ok(transcripts(final).includes("Transcription:hello world"));
      assert.deepEqual(fake.streams[0].config, {
        config: {
          encoding: 1,
          sample_rate_hertz: 16000,
          language_code: "en-US",
          max_alternatives: 1,
          speech_contexts: [{ phrases: ["Flowcat"], boost: 20 }],
          audio_channel_count: 1,
          enable_automatic_punctuation: true,
          model: "parakeet-ctc-1.1b-asr",
          custom_configuration: { left_padding: "100" },
        },
        interim_results: true,
      });
      assert.equal(fake.streams[0].metadata.authorization, undefined, "no key, no header");
    } finally {
      await stt.stop!();
    }
  });
});

Deno.test("riva: TLS with the server's CA; key and function-id as metadata", async () => {
  const certs = makeTestCerts();
  const fake = await rivaFake({
    tls: {
      key: Deno.readTextFileSync(certs.keyFile),
      cert: Deno.readTextFileSync(certs.certFile),
      ca: Deno.readTextFileSync(certs.caFile),
    },
    bearer: (t) => t === "nvapi-test",
  });
  try {
    const opts: ServiceOptions = {
      provider: "riva",
      apiKey: "nvapi-test",
      baseUrl: fake.url,
      options: { function_id: "fn-123" },
    };
    assert.match(fake.url, /^https:/);
    const stt = await started(
      new GrpcStreamingStt(opts, rivaWire(opts, Deno.readTextFileSync(certs.caFile))),
    );
    try {
      await feedUntil(stt, (f) => f.length > 0);
      assert.equal(fake.streams[0].metadata.authorization, "Bearer nvapi-test");
      assert.equal(fake.streams[0].metadata["function-id"], "fn-123");
    } finally {
      await stt.stop!();
    }
    // Trusting another CA, the client refuses the server's certificate.
    const other = makeTestCerts();
    const otherCa = Deno.readTextFileSync(other.caFile);
    Deno.removeSync(other.dir, { recursive: true });
    const untrusted = await started(
      new GrpcStreamingStt(
        { ...opts, options: { retry_interval_ms: 0 } },
        rivaWire(opts, otherCa),
      ),
    );
    try {
      const err = await feedUntilError(untrusted);
      assert.equal(err.kind, "closed");
      assert.match(err.message, /^riva: gRPC UNAVAILABLE/);
    } finally {
      await untrusted.stop!();
    }
  } finally {
    fake.close();
    Deno.removeSync(certs.dir, { recursive: true });
  }
});

Deno.test("riva: a wrong key is UNAUTHENTICATED, an auth error", async () => {
  await withRiva(async (_fake, opts) => {
    const stt = await started(createRivaStt({ ...opts, apiKey: "wrong" }));
    try {
      const err = await feedUntilError(stt);
      assert.equal(err.kind, "auth");
      assert.match(err.message, /^riva: gRPC UNAUTHENTICATED/);
      assert.ok(!err.message.includes("wrong"));
    } finally {
      await stt.stop!();
    }
  }, { bearer: (t) => t === "right" });
});

Deno.test("riva: rate limit and server error are said once each; the stream recovers", async () => {
  await withRiva(async (fake, opts) => {
    fake.plans.push(
      { kind: "fail", code: 8, details: "too many streams" },
      { kind: "fail", code: 13, details: "model crashed" },
    );
    const stt = await started(createRivaStt(opts));
    try {
      const first = await feedUntilError(stt);
      assert.equal(first.message, "riva: gRPC RESOURCE_EXHAUSTED: too many streams");
      const second = await feedUntilError(stt);
      assert.equal(second.message, "riva: gRPC INTERNAL: model crashed");
      assert.equal(second.kind, "protocol");
      const frames = await feedUntil(stt, (f) => f.length > 0);
      assert.deepEqual(transcripts(frames), ["InterimTranscription:hello"]);
    } finally {
      await stt.stop!();
    }
  });
});

Deno.test("riva: a cut connection is a closed error; a server that is gone stays an error", async () => {
  await withRiva(async (fake, opts) => {
    const proxy = new TcpProxy(fake.port);
    let cut: Promise<void> | undefined;
    fake.plans.push({ kind: "drop" });
    fake.onDrop = () => void (cut ??= proxy.close());
    const stt = await started(
      createRivaStt({ ...opts, baseUrl: `http://127.0.0.1:${proxy.port}` }),
    );
    try {
      const err = await feedUntilError(stt);
      assert.equal(err.kind, "closed");
      const again = await feedUntilError(stt);
      assert.equal(again.kind, "closed", "the proxy is gone: reopening fails too");
    } finally {
      await stt.stop!();
      await (cut ??= proxy.close());
    }
  });
});

Deno.test("riva: muting half-closes; stop cancels the stream in flight", async () => {
  await withRiva(async (fake, opts) => {
    const stt = await started(createRivaStt(opts));
    await stt.runStt(frame20ms());
    await until(() => fake.streams[0]?.audioBytes > 0, 2000, "audio at the fake");
    stt.setMuted(true);
    await until(() => fake.streams[0].halfClosed, 2000, "mute half-closes");
    await stt.runStt(frame20ms());
    assert.equal(fake.streams.length, 1, "muted audio opens nothing");
    stt.setMuted(false);
    // The first frame after unmuting opens a stream and is held for it, not lost.
    await stt.runStt(frame20ms());
    await until(() => fake.streams[1]?.audioBytes === 640, 2000, "the held frame at the fake");
    await stt.stop!();
    await until(() => fake.streams[1].cancelled, 2000, "stop cancels");
    assert.equal(fake.streams.length, 2);
  });
});

Deno.test("riva: bad options are one config line each", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ interim_results: "yes" }, /^riva: options.interim_results must be true or false$/],
    [{ phrases: "x" }, /^riva: options.phrases must be a list of strings$/],
    [{ custom_configuration: { a: 1 } }, /^riva: options.custom_configuration must map strings$/],
  ];
  for (const [options, want] of cases) {
    assert.throws(() => createRivaStt({ provider: "riva", options }), (e: unknown) => {
      assert.ok(e instanceof FlowcatError && e.kind === "config");
      assert.match(e.message, want);
      return true;
    });
  }
});
