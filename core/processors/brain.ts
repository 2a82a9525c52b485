/**
 * BrainProcessor: sits right after the model (realtime or language model) and turns its tool
 * calls into the brain's moves. Per call, pushed back upstream toward the model, in order:
 *
 * - Transition: UpdateSettings (target `llm`: `systemPrompt`, `tools`, `say`, `nodeId`), then
 *   FunctionCallResult `{ok: true, node}`; a `say` is also sent, just before the result, as
 *   TtsSpeak downstream (a
 *   realtime model reads it from the settings), or, with `sayUpstream`, up as a TtsSpeak marked
 *   `appendToContext` for the cascaded context aggregator, which speaks it after the reply that
 *   made the move and records it (see core/processors/context.ts).
 * - Stay with a result (the brain answered, or failed and said so): FunctionCallResult.
 * - Stay without one (a workflow tool): answered by `workflowTool` (the embedder's
 *   SessionSource.toolCall) as FunctionCallResult, or an error result when there is none.
 *   The call-control tools (core/call_control.ts) are answered here instead: `send_dtmf` sends
 *   OutputDtmf downstream; `transfer_call` sends TransferCall downstream and waits for the
 *   output transport's TransferResult: on success the call ends with disposition
 *   `transferred`, otherwise the model is told why and the call goes on. A warm transfer's
 *   first TransferResult (`consulting`: the target answered) makes the brain speak the
 *   briefing, which the target hears; the final one follows once the legs are bridged.
 * - End: a goodbye TtsSpeak when the brain gave one, FunctionCallResult, then End upstream
 *   (the task drains the pipeline; the disposition is kept for finalize).
 *
 * - An AnsweringMachine decision (core/processors/amd.ts) becomes a call of the brain's
 *   `answered_by_machine` or `answered_by_human` tool when the current node offers it, decided
 *   like the model's own calls but with no result sent to the model (it never made the call).
 *
 * The brain runs off the frame path: a remote brain's HTTP round trip never holds up audio.
 * Calls are decided one at a time, in arrival order.
 *
 * The transcript gets a `node` line per move and a `tool` line per result. A call can overtake
 * the text of the reply that made it (FunctionCallsStarted is a system frame), so while a reply
 * is passing those lines wait for its end: the transcript reads in the order things happened.
 * @module
 */

import {
  AMD_MOVES,
  dtmfToolKeys,
  SEND_DTMF,
  TRANSFER_CALL,
  TRANSFERRED,
  transferToolMode,
  transferToolTarget,
} from "../call_control.ts";
import { errorMessage } from "../errors.ts";
import {
  type Direction,
  type Frame,
  type FunctionCall,
  makeFrame,
  type TransferOutcome,
} from "../frames.ts";
import { FrameProcessor, type Link } from "../processor.ts";
import type { AgentBrain, BrainAction } from "../seams.ts";
import type { CallTranscript } from "./finalize.ts";

/** Answers a workflow tool the brain does not own (e.g. `SessionSource.toolCall`). */
export type WorkflowToolHandler = (
  nodeId: string,
  tool: string,
  args: Record<string, unknown>,
) => Promise<string>;

/** Options of a {@link BrainProcessor}. */
export interface BrainProcessorOptions {
  /** Answers tools the brain stays on without a result (workflow tools); error result when unset. */
  workflowTool?: WorkflowToolHandler;
  /** Processor name in logs and metrics (default `BrainProcessor`). */
  name?: string;
  /** Fed with every frame that passes and every node move made (the call's transcript). */
  transcript?: CallTranscript;
  /**
   * Send `say` lines upstream, as TtsSpeak marked `appendToContext`, for an
   * AssistantContextAggregator to speak and record (the cascaded shape); default false: down at
   * once.
   */
  sayUpstream?: boolean;
}

/** Turns model tool calls into brain moves. */
export class BrainProcessor extends FrameProcessor {
  readonly #brain: AgentBrain;
  readonly #workflow: WorkflowToolHandler | undefined;
  readonly #transcript: CallTranscript | undefined;
  readonly #sayUpstream: boolean;
  #chain: Promise<void> = Promise.resolve();
  /** A model's reply is passing (its start went by, its end not yet). */
  #replyOpen = false;
  /** Transcript lines of decisions made while a reply was passing. */
  #held: (() => void)[] = [];
  #ended = false;
  /** Takes the output transport's TransferResult of the transfer in flight; true once final. */
  #transferDone: ((outcome: TransferOutcome) => boolean) | undefined;
  /** Disposition recorded by the brain's End, for finalize. */
  disposition: string | undefined;
  /** Every decided move, in order (for transcripts and tests). */
  readonly moves: { tool: string; action: BrainAction["type"] }[] = [];

  /** Wrap `brain`. */
  constructor(brain: AgentBrain, options: BrainProcessorOptions = {}) {
    super(options.name ?? "BrainProcessor");
    this.#brain = brain;
    this.#workflow = options.workflowTool;
    this.#transcript = options.transcript;
    this.#sayUpstream = options.sayUpstream ?? false;
  }

  /** Starts the transcript's clock. */
  override start(): void {
    this.#transcript?.start();
  }

  /** Resolves once every call received so far has been decided. */
  idle(): Promise<void> {
    return this.#chain;
  }

  /** Queues function calls for the brain; forwards every frame. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    this.#transcript?.observe(frame);
    if (dir === "downstream") {
      switch (frame.kind) {
        case "FunctionCallsStarted":
          for (const c of frame.calls) this.#queue(c, link);
          break;
        case "FunctionCallInProgress":
          this.#queue(frame.call, link);
          break;
        case "LlmResponseStart":
          this.#replyOpen = true;
          break;
        case "LlmResponseEnd":
          this.#releaseLines();
          break;
        case "AnsweringMachine":
          if (frame.event.type === "decision") this.#answeredBy(frame.event.verdict, link);
          break;
      }
    } else if (frame.kind === "TransferResult" && this.#transferDone !== undefined) {
      if (this.#transferDone(frame.outcome)) this.#transferDone = undefined;
    }
    link.push(frame, dir);
  }

  /** A reply cut short ends without its end frame: its lines wait no longer. */
  override onInterruption(): void {
    this.#releaseLines();
  }

  /** Add a transcript line now, or after the reply passing (see the module doc). */
  #line(add: (t: CallTranscript) => void): void {
    const t = this.#transcript;
    if (t === undefined) return;
    if (this.#replyOpen) this.#held.push(() => add(t));
    else add(t);
  }

  #releaseLines(): void {
    this.#replyOpen = false;
    const held = this.#held;
    this.#held = [];
    for (const add of held) add();
  }

  #queue(call: FunctionCall, link: Link, fromModel = true): void {
    this.#chain = this.#chain.then(() => this.#decide(call, link, fromModel));
  }

  /** The brain's move for an answering-machine verdict, when its current node offers one. */
  #answeredBy(verdict: "human" | "machine", link: Link): void {
    const name = AMD_MOVES[verdict];
    if (!this.#brain.tools().some((t) => t.name === name)) return;
    const call = { toolCallId: `amd-${verdict}`, functionName: name, arguments: {} };
    this.#queue(call, link, false);
  }

  async #decide(call: FunctionCall, link: Link, fromModel: boolean): Promise<void> {
    if (this.#ended) return;
    const result = (value: unknown, runLlm?: false) => {
      this.#line((t) => t.addTool(call.functionName, value));
      if (!fromModel) return;
      link.push(
        makeFrame("FunctionCallResult", {
          result: {
            toolCallId: call.toolCallId,
            functionName: call.functionName,
            result: value,
            ...(runLlm === false ? { runLlm } : {}),
          },
        }),
        "upstream",
      );
    };
    const say = (text: string) => {
      if (!this.#sayUpstream) return link.pushDown(makeFrame("TtsSpeak", { text }));
      link.push(makeFrame("TtsSpeak", { text, appendToContext: true }), "upstream");
    };
    let action: BrainAction;
    try {
      action = await this.#brain.onToolCall(call.functionName, call.arguments);
    } catch (err) {
      // A brain that throws must not drop the call: stay, and tell the model.
      link.pushError(`brain failed on ${call.functionName}: ${errorMessage(err)}`, false);
      action = { type: "stay", result: { error: "the tool failed; stay on this step" } };
    }
    this.moves.push({ tool: call.functionName, action: action.type });
    switch (action.type) {
      case "transition": {
        const settings: Record<string, unknown> = {
          systemPrompt: action.systemPrompt,
          tools: action.tools,
          nodeId: action.nodeId ?? this.#brain.currentNodeId(),
        };
        if (action.say !== undefined) settings.say = action.say;
        const update = makeFrame("UpdateSettings", { target: "llm", settings });
        this.#line((t) => t.observe(update));
        link.push(update, "upstream");
        // The line before the result: the model's next run must find it in the context.
        if (action.say) say(action.say);
        result({ ok: true, node: settings.nodeId });
        return;
      }
      case "stay": {
        if (action.result !== undefined) return result(action.result);
        if (call.functionName === SEND_DTMF) {
          const parsed = dtmfToolKeys(call.arguments);
          if ("error" in parsed) return result(parsed);
          link.pushDown(makeFrame("OutputDtmf", { keys: parsed.keys }));
          return result({ ok: true, sent: parsed.keys.join("") });
        }
        if (call.functionName === TRANSFER_CALL) return await this.#transfer(call, link, result);
        if (this.#workflow === undefined) {
          return result({ error: `unknown tool ${call.functionName}` });
        }
        try {
          return result(
            await this.#workflow(this.#brain.currentNodeId(), call.functionName, call.arguments),
          );
        } catch (err) {
          link.pushError(`workflow tool ${call.functionName} failed: ${errorMessage(err)}`, false);
          return result({ error: "the tool failed" });
        }
      }
      case "end": {
        this.#ended = true;
        this.disposition = action.disposition;
        // The call is over: a language model must not start another reply.
        if (action.say) say(action.say);
        result({ ok: true, ended: true }, false);
        link.push(
          makeFrame("End", {
            reason: action.disposition ? `brain: ${action.disposition}` : "brain: end",
          }),
          "upstream",
        );
      }
    }
  }

  /** Ask the output transport to transfer; end the call on success, else tell the model. */
  async #transfer(
    call: FunctionCall,
    link: Link,
    result: (value: unknown, runLlm?: false) => void,
  ): Promise<void> {
    const decl = this.#brain.tools().find((t) => t.name === TRANSFER_CALL);
    const parsed = transferToolTarget(call.arguments, decl);
    if ("error" in parsed) return result(parsed);
    const how = transferToolMode(call.arguments, decl);
    if ("error" in how) return result(how);
    const outcome = await new Promise<TransferOutcome>((resolve) => {
      this.#transferDone = (o) => {
        // A warm transfer's target answered: brief it; the final outcome comes later.
        if (o.ok && o.consulting === true) {
          if (how.briefing !== undefined) this.#brief(how.briefing, link);
          return false;
        }
        resolve(o);
        return true;
      };
      link.pushDown(makeFrame("TransferCall", { target: parsed.target, ...how }));
    });
    if (!outcome.ok) {
      return result({
        error: `transfer to ${parsed.target} failed: ${outcome.reason}`,
        ...(outcome.refused ? { refused: true } : {}),
        ...(outcome.status !== undefined ? { status: outcome.status } : {}),
      });
    }
    this.#ended = true;
    this.disposition = TRANSFERRED;
    result(
      { ok: true, transferred: parsed.target, ...(outcome.bridged ? { bridged: true } : {}) },
      false,
    );
    link.push(makeFrame("End", { reason: `brain: ${TRANSFERRED}` }), "upstream");
  }

  /**
   * Speak a warm transfer's briefing, now heard by the target: through the context aggregator
   * (cascaded), or as the realtime model's next line (the node's prompt and tools kept).
   */
  #brief(text: string, link: Link): void {
    this.#line((t) => t.addTool(TRANSFER_CALL, { briefing: text }));
    if (this.#sayUpstream) {
      link.push(makeFrame("TtsSpeak", { text, appendToContext: true }), "upstream");
      return;
    }
    const settings = {
      systemPrompt: this.#brain.systemPrompt(),
      tools: this.#brain.tools(),
      say: text,
      nodeId: this.#brain.currentNodeId(),
    };
    link.push(makeFrame("UpdateSettings", { target: "llm", settings }), "upstream");
  }
}
