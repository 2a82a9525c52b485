/**
 * The bridge fallback through the agent server as operators run it: sipp dials the server's SIP
 * trunk and presses "2", the echo model calls the graph's pinned transfer_call, sipp refuses
 * the REFER (405), and the server (bridge_fallback on by default) dials the target, a second
 * sipp that answers PCMA and echoes RTP, and bridges the two. The caller's tone reaches the
 * target and its echo comes back; the caller's BYE hangs up the target; the call ends
 * `transferred` in the finalize report, the transcript and the `call ended` line; a drain begun
 * during the bridge waits for it.
 */
import assert from "node:assert/strict";
import { decodeWav } from "../core/audio/wav.ts";
import { Resampler } from "../core/audio/resample.ts";
import { until } from "./_core_helpers.ts";
import { toneWindows } from "./_tone.ts";
import { artifact, echoTransferServer, transferredRun } from "./_server_transfer.ts";
import {
  freeUdpPort,
  hasSipp,
  pcmuPcap,
  runSipp,
  sine8k,
  sippArgs,
  sippUasEchoArgs,
} from "./_sipp.ts";

Deno.test({
  name: "server SIP trunk: REFER refused, the server bridges the caller to the target itself",
  ignore: !hasSipp(),
  fn: async () => {
    const sipPort = freeUdpPort();
    const targetPort = freeUdpPort();
    const target = `sip:desk@127.0.0.1:${targetPort}`;
    const dir = `${Deno.cwd()}/.tmp/sipp-server-bridge-${crypto.randomUUID()}`;
    Deno.mkdirSync(dir, { recursive: true });
    const { app, logs } = await echoTransferServer(target, sipPort, {
      recording: { enabled: true, dir },
    });
    Deno.writeFileSync(`${dir}/bridge_tone.pcap`, pcmuPcap(sine8k(8000 * 1.5, 600)));
    const callee = runSipp(sippUasEchoArgs("uas_bridge_target.xml", targetPort), dir, "20s");
    const caller = runSipp(sippArgs("uac_refer_refused_server.xml", sipPort), dir, "20s");
    try {
      await until(() => app.sessions.get(1) !== undefined, 5000, "inbound run");
      // A drain begun while the caller talks to the target waits for the bridge to end.
      await until(() => logs.some((l) => l.message === "sip calls bridged"), 10000, "bridge");
      let bridgeEndedAtDrain: boolean | undefined;
      const drained = app.calls.drain(20_000).then(() => {
        bridgeEndedAtDrain = logs.some((l) => l.message === "sip bridge ended");
      });
      for (const [who, sipp] of [["caller", caller], ["target", callee]] as const) {
        const res = await sipp.done; // the target's scenario requires our BYE after the caller's
        assert.equal(res.code, 0, `${who}: ${res.stdout.slice(-1500)}${res.stderr.slice(-500)}`);
      }
      const tool = await transferredRun(app, logs, dir);
      assert.deepEqual(tool, { ok: true, transferred: target, bridged: true });
      // The recording stopped at the transfer: none of the caller's tone, played into the
      // bridge after it, and well short of the call's 3 s.
      const wav = decodeWav(artifact(app, "run-1-recording.wav", dir));
      const pcm8k = wav.sampleRate === 8000
        ? wav.pcm
        : new Resampler(wav.sampleRate, 8000).process(wav.pcm);
      const seconds = wav.pcm.length / wav.sampleRate;
      assert.ok(seconds > 0.2 && seconds < 2, `${seconds} s recorded`);
      assert.equal(toneWindows(pcm8k, 600), 0);
      await until(() => logs.some((l) => l.message === "sip bridge ended"), 3000, "end");
      await drained;
      assert.equal(bridgeEndedAtDrain, true, "the drain ended before the bridge");
      const bridge = logs.find((l) => l.message === "sip bridge ended")!;
      assert.equal(bridge.fields?.first, "caller");
      assert.ok(Number(bridge.fields?.framesAToB) > 50, JSON.stringify(bridge.fields));
      assert.ok(Number(bridge.fields?.framesBToA) > 50, JSON.stringify(bridge.fields));
    } finally {
      caller.kill();
      callee.kill();
      await Promise.all([caller.done, callee.done]);
      Deno.removeSync(dir, { recursive: true });
      await app.calls.drain(1000);
      await app.close();
    }
  },
});
