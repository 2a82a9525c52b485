import assert from "node:assert/strict";
import { aecCases, cancelInFrames, vadStarts } from "../bench/aec_set.ts";

/** Run `mic` and `ref` through a canceller in 20 ms frames; the output aligned to the input. */
const cancel = (mic: Int16Array, ref: Int16Array, rate: number) =>
  cancelInFrames(mic, ref, rate).out;

// Paths 6 dB down (a handset's ring and the telephone band-limit, on a clock 100 ppm fast): the
// caller, 4 dB below the agent, is only 2 dB above the echo.
const close = await aecCases(8000, [40, 120, 200, 300], {
  driftPpm: 100,
  paths: ["handset", "sox band"],
});

Deno.test({
  name: "echo canceller: a caller 2 dB above the echo is heard in double talk, the echo is not",
  ignore: close === undefined,
  fn() {
    for (const c of close!) {
      const alone = cancel(c.micEcho, c.ref, c.rate);
      assert.equal(vadStarts(alone, c.rate).length, 0, `${c.name}: false barge-in`);
      const onset = c.talkStart / c.rate;
      const starts = vadStarts(cancel(c.micTalk, c.ref, c.rate), c.rate);
      assert.ok(starts.every((t) => t >= onset), `${c.name}: VAD start before the caller spoke`);
      assert.ok(
        starts.length > 0 && starts[0] - onset <= 0.6,
        `${c.name}: barge-in heard at ${starts.map((t) => (t - onset).toFixed(2))} s after onset`,
      );
    }
  },
});
