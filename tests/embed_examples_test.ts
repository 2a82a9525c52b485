/**
 * The embedding examples (examples/embed/) driven end to end on loopback:
 * - ws_host: the host's TwiML route opens a run, a Twilio-framed client dials the media route
 *   with the token as a start parameter, hears the greeting and its own tone echoed, presses
 *   `#`, and the host's brain ends the call; the host's own /health route answers throughout;
 * - sip_host: Flowcat's SIP agent as the caller dials the host's SIP port, the call is
 *   answered, RTP carries the greeting and the echo back, and `#` (RFC 4733) ends the call.
 */

import assert from "node:assert/strict";
import { startSipHost } from "../examples/embed/sip_host.ts";
import { startWsHost } from "../examples/embed/ws_host.ts";
import type { InMemorySessions } from "../mod.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";
import { freeEvenPortBase } from "./_sipp.ts";
import { sleep, until } from "./_core_helpers.ts";
import { twilioClient } from "./_twilio_client.ts";
import { tone8k, toneWindows } from "./_tone.ts";

/** The transcript lines the host stored for a finished run. */
async function transcriptOf(sessions: InMemorySessions, runId: number): Promise<string[]> {
  const report = await sessions.finished(runId);
  const bytes = sessions.artifact(report.transcriptUrl ?? "");
  assert.ok(bytes !== undefined, `run ${runId}: no transcript at ${report.transcriptUrl}`);
  const doc = JSON.parse(new TextDecoder().decode(bytes)) as { lines: { text: string }[] };
  return doc.lines.map((l) => l.text);
}

Deno.test("ws_host: Twilio call through the host's own routes, echo back, the host's brain hangs up", async () => {
  const host = startWsHost();
  try {
    const health = await fetch(`${host.url}/health`);
    assert.deepEqual(await health.json(), { ok: true, calls: 0 });

    const twiml = await (await fetch(`${host.url}/twilio/voice`, { method: "POST" })).text();
    const streamUrl = /<Stream url="([^"]+)"/.exec(twiml)?.[1].replaceAll("&amp;", "&");
    const token = /<Parameter name="token" value="([^"]+)"/.exec(twiml)?.[1];
    assert.ok(streamUrl !== undefined && token !== undefined, twiml);
    // Twilio drops the query of a stream URL: the token travels in the start message only.
    const bare = streamUrl.split("?")[0];
    assert.equal(bare, `${host.url.replace("http:", "ws:")}/telephony/ws/twilio/1`);

    const call = await twilioClient(bare, token);
    try {
      await until(() => call.media().length >= 15, 3000, "greeting chime");
      const greeting = call.media().length;
      assert.deepEqual(await (await fetch(`${host.url}/health`)).json(), { ok: true, calls: 1 });

      await call.speak(tone8k(8000 * 0.6), 20);
      await call.speak(new Int16Array(8000), 20); // 1 s of quiet ends the caller's turn
      await until(() => toneWindows(call.decode(call.media().slice(greeting))) >= 20, 5000, "echo");
      assert.ok(call.media().every((m) => m.streamSid === "MZ1"), "media keyed by streamSid");

      await call.dtmf("#");
      const report = await host.sessions.finished(1);
      assert.equal(report.disposition, "completed");
      assert.deepEqual(report.collectedVars, { disposition: "completed" });
      const lines = await transcriptOf(host.sessions, 1);
      assert.ok(lines.some((l) => l.startsWith("(echoing")), lines.join(" | "));
      assert.ok(lines.includes("(pressed #)"), lines.join(" | "));
    } finally {
      await call.close();
    }
    const after = await (await fetch(`${host.url}/health`)).json();
    assert.equal(after.ok, true, "the host's route still answers after the call");
  } finally {
    await host.close();
  }
});

Deno.test("ws_host: a media socket with a wrong token gets no call", async () => {
  const host = startWsHost();
  try {
    await (await fetch(`${host.url}/twilio/voice`, { method: "POST" })).body?.cancel();
    const call = await twilioClient(
      `${host.url.replace("http:", "ws:")}/telephony/ws/twilio/1`,
      "forged",
    );
    await sleep(300);
    assert.equal(call.media().length, 0, "no greeting for a forged token");
    await call.close();
    assert.deepEqual(await (await fetch(`${host.url}/health`)).json(), { ok: true, calls: 0 });
  } finally {
    await host.close();
  }
});

Deno.test("sip_host: a SIP call is answered, RTP carries greeting and echo back, # hangs up", async () => {
  const host = await startSipHost({ rtpPortBase: freeEvenPortBase(4), rtpPortTries: 4 });
  const { agent: caller } = await startLoopbackAgent(loopbackSipConfig({
    server: `sip:127.0.0.1:${host.port}`,
    login: "caller",
    password: "caller-secret",
    callerId: "+15551230000",
  }));
  try {
    const progress: number[] = [];
    const out = await caller.call("+15550001234", { onProgress: (s) => progress.push(s) });
    // call() resolves only on a 2xx final answer; the provisionals came first.
    assert.ok(progress.includes(180), `provisionals: ${progress.join(",")}`);
    assert.equal(out.media.codec, "PCMU");

    const heard: Int16Array[] = [];
    const reading = (async () => {
      for (let m = await out.transport.recv(); m !== undefined; m = await out.transport.recv()) {
        if (m.type === "audio") heard.push(m.audio.pcm);
      }
    })();
    const loud = () => heard.filter((p) => p.some((x) => Math.abs(x) > 2000)).length;
    await until(() => loud() >= 10, 3000, "greeting over RTP");
    const greeting = heard.length;

    const send = async (pcm: Int16Array) => {
      for (let i = 0; i + 160 <= pcm.length; i += 160) {
        await out.transport.sendAudio({
          pcm: pcm.subarray(i, i + 160),
          sampleRate: 8000,
          numChannels: 1,
        });
        await sleep(20);
      }
    };
    await send(tone8k(8000 * 0.6));
    await send(new Int16Array(8000));
    const echoed = () => {
      const tail = heard.slice(greeting);
      const pcm = new Int16Array(tail.reduce((n, p) => n + p.length, 0));
      tail.reduce((o, p) => (pcm.set(p, o), o + p.length), 0);
      return toneWindows(pcm);
    };
    await until(() => echoed() >= 20, 5000, "echo over RTP");

    await out.transport.sendDtmf(["#"]);
    assert.equal(await out.ended, "remote hangup", "the host's brain hung up");
    await reading;
    const report = await host.sessions.finished(1);
    assert.equal(report.disposition, "completed");
    assert.ok((await transcriptOf(host.sessions, 1)).includes("(pressed #)"));
  } finally {
    await caller.close();
    await host.close();
  }
});
