/**
 * A call-control pipeline for tests: the leg's input, a recorder playing the model, the
 * BrainProcessor over a brain that leaves the call-control tools to it, and the leg's output.
 */

import {
  type AgentBrain,
  type Frame,
  type FunctionCall,
  type KeypadEntry,
  makeFrame,
  type MediaTransport,
  Pipeline,
  PipelineTask,
} from "../mod.ts";
import { DtmfDetector } from "../core/audio/dtmf_detect.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { DefaultTurnStrategy } from "../core/processors/turn.ts";
import { VadProcessor } from "../core/processors/vad.ts";
import { silentLogger } from "../core/log.ts";
import { BrainProcessor } from "../core/processors/brain.ts";
import { TransportInput, TransportOutput } from "../core/processors/transport.ts";
import { Recorder } from "./_core_helpers.ts";

/** A brain that offers the call-control tools and leaves them to the processor. */
export const stayBrain: AgentBrain = {
  systemPrompt: () => "",
  tools: () => [],
  currentNodeId: () => "menu",
  onToolCall: () => ({ type: "stay" }),
  isFinished: () => false,
  collectedVars: () => ({}),
};

let n = 0;
/** A model's tool call. */
export const toolCall = (name: string, args: Record<string, unknown>): FunctionCall => ({
  toolCallId: `c${++n}`,
  functionName: name,
  arguments: args,
});

/** The model calls `name` with `args`. */
export function callsFrame(name: string, args: Record<string, unknown>): Frame {
  return makeFrame("FunctionCallsStarted", { calls: [toolCall(name, args)] });
}

/** The keys our in-band detector hears in `pcm`, fed 20 ms at a time. */
export function decodeKeys(pcm: Int16Array, rate = 8000): KeypadEntry[] {
  const det = new DtmfDetector({ sampleRate: rate });
  const keys: KeypadEntry[] = [];
  const step = rate / 50;
  for (let i = 0; i < pcm.length; i += step) keys.push(...det.process(pcm.subarray(i, i + step)));
  return keys;
}

/**
 * Input -> model -> BrainProcessor(brain) -> output over `leg`; the test plays the model. With
 * `bargeIn`, the energy VAD and the default turn strategy (with a 300 ms hold, as calls run) come
 * after the input, so the caller's voice over the bot holds it and then interrupts it.
 */
export function callControlRig(
  leg: MediaTransport,
  brain: AgentBrain = stayBrain,
  opts: { bargeIn?: boolean } = {},
) {
  const model = new Recorder("model");
  const bp = new BrainProcessor(brain);
  const vad = opts.bargeIn
    ? [
      new VadProcessor(new EnergyVad(), { turnStrategy: new DefaultTurnStrategy({ holdMs: 300 }) }),
    ]
    : [];
  const task = new PipelineTask(
    new Pipeline([new TransportInput(leg), ...vad, model, bp, new TransportOutput(leg)]),
    { idleTimeoutMs: null, logger: silentLogger },
  );
  const results = () =>
    model.frames
      .filter((s) => s.dir === "upstream" && s.frame.kind === "FunctionCallResult")
      .map((s) => (s.frame as Extract<Frame, { kind: "FunctionCallResult" }>).result.result);
  return { model, bp, task, results };
}
