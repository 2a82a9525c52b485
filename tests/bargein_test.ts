/**
 * Barge-in on real legs (bench/bargein.ts, the bench's own harness): a Twilio-protocol WebSocket
 * and SIP media (RTP), the default energy VAD and the eSpeak voice. An espeak-ng caller who talks
 * over the bot's long greeting silences it within 150 ms of their first syllable (our last audio
 * frame sent); a click and a 100 ms burst only pause it. Loose on load: other tests share the cores.
 */

import assert from "node:assert/strict";
import { bargeInTrial, noiseActs, speechActs } from "../bench/bargein.ts";

for (const leg of ["twilio", "sip"] as const) {
  Deno.test(`barge-in (${leg}): the bot falls silent within 150 ms; a click does not cut it off`, async () => {
    const c = { name: leg, leg, holdMs: 300 };
    const [speech] = await speechActs(1);
    const noises = noiseActs().filter((a) => a.name === "click_20ms" || a.name === "burst_100ms");
    const said = await bargeInTrial(c, speech, 900);
    assert.ok(said.interrupted, JSON.stringify(said));
    assert.ok(
      said.lastFrameMs !== undefined && said.lastFrameMs < 150,
      `last agent frame ${said.lastFrameMs} ms after the caller's onset`,
    );
    for (const n of noises) {
      const r = await bargeInTrial(c, n, 900);
      assert.equal(r.interrupted, false, `${n.name}: ${JSON.stringify(r)}`);
    }
  });
}
