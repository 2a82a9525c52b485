/**
 * send_dtmf on a SIP call whose peer did not agree to RFC 4733 telephone-events (it answered PCMU
 * only): the keys go in-band as tones, as on carrier legs, instead of failing after the model was
 * told they were pressed. sipp echoes our RTP; our Goertzel detector decodes the keys in what came
 * back.
 */

import assert from "node:assert/strict";
import type { Frame } from "../mod.ts";
import { concatInt16 } from "../core/audio/pcm.ts";
import { until } from "./_core_helpers.ts";
import { callControlRig, callsFrame, decodeKeys } from "./_call_control_rig.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";
import { freeUdpPort, hasSipp, runSipp, sippUasEchoArgs } from "./_sipp.ts";

Deno.test({
  name: "send_dtmf on SIP without telephone-event: in-band tones, decoded from sipp's echo",
  ignore: !hasSipp(),
  fn: async () => {
    const sippPort = freeUdpPort();
    const { agent } = await startLoopbackAgent(loopbackSipConfig({
      server: `sip:127.0.0.1:${sippPort}`,
      login: "alice",
      password: "unused",
      callerId: "+15550001111",
    }));
    const sipp = runSipp(sippUasEchoArgs("uas_echo_pcmu.xml", sippPort));
    try {
      const call = await agent.call("+15557654321");
      assert.equal(call.media.telephoneEventPt, undefined, "no telephone-event agreed");
      assert.equal(call.transport.canSendDtmf(), false);
      const { task, results, model } = callControlRig(call.transport);
      const heard = () =>
        model.frames.flatMap((s) =>
          s.dir === "downstream" && s.frame.kind === "InputAudio" ? [s.frame.audio] : []
        );
      const echoedMs = () => heard().reduce((n, a) => n + (a.pcm.length * 1000) / a.sampleRate, 0);
      task.onStarted(async () => {
        await task.queueFrame(callsFrame("send_dtmf", { keys: "5*1" }));
        // 3 keys x (100 ms tone + 100 ms gap), echoed back, and a little more.
        await until(() => echoedMs() >= 1000, 5000, "echoed audio");
        await call.hangup();
      });
      await task.run();
      assert.deepEqual(results(), [{ ok: true, sent: "5*1" }]);
      const audio = heard();
      const rate = audio[0].sampleRate;
      assert.deepEqual(decodeKeys(concatInt16(audio.map((a) => a.pcm)), rate), ["5", "*", "1"]);
      const errors = model.frames.filter((s) => (s.frame as Frame).kind === "Error");
      assert.equal(errors.length, 0, "no send dtmf failure");
      const res = await sipp.done;
      assert.equal(res.code, 0, res.stdout.slice(-2000));
    } finally {
      sipp.kill();
      await sipp.done;
      await agent.close();
    }
  },
});
