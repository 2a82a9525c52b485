/**
 * PipelineRunner: one per process. Runs tasks and, on SIGINT / SIGTERM, cancels every running
 * task so each drains its processors' stop hooks before the process exits. A second signal
 * while draining exits at once (status 130).
 *
 * @example
 * ```ts
 * import { PipelineRunner } from "@flowcat/flowcat";
 * const runner = new PipelineRunner();
 * // await runner.run(task);
 * ```
 * @module
 */

import type { StopReason } from "./frames.ts";
import { consoleLogger, type Logger } from "./log.ts";
import type { PipelineTask } from "./task.ts";

/** Options of a {@link PipelineRunner}. */
export interface PipelineRunnerOptions {
  /** Cancel all tasks on SIGINT (default true). */
  handleSigint?: boolean;
  /** Cancel all tasks on SIGTERM (default true). */
  handleSigterm?: boolean;
  /** Logger for signal handling and task failures (default: console at `info`). */
  logger?: Logger;
}

type Signal = "SIGINT" | "SIGTERM";

/** Runs pipeline tasks; drains them on signals. */
export class PipelineRunner {
  readonly #tasks = new Set<PipelineTask>();
  readonly #signals: Signal[];
  readonly #log: Logger;
  #listening = false;
  #draining = false;
  readonly #onSignal = (sig: Signal) => () => this.#signal(sig);
  readonly #handlers = new Map<Signal, () => void>();

  /** A runner; signal handling is installed while at least one task runs. */
  constructor(options: PipelineRunnerOptions = {}) {
    const { handleSigint = true, handleSigterm = true } = options;
    this.#signals = [
      ...(handleSigint ? ["SIGINT" as const] : []),
      ...(handleSigterm ? ["SIGTERM" as const] : []),
    ];
    this.#log = options.logger ?? consoleLogger("info", "runner");
  }

  /** Number of tasks running now. */
  get running(): number {
    return this.#tasks.size;
  }

  /** Run `task` to completion. */
  async run(task: PipelineTask): Promise<StopReason> {
    this.#tasks.add(task);
    this.#listen();
    try {
      return await task.run();
    } finally {
      this.#tasks.delete(task);
      if (this.#tasks.size === 0) this.#unlisten();
    }
  }

  /** Cancel every running task. */
  cancelAll(reason = "runner cancelled"): void {
    for (const t of this.#tasks) t.cancel(reason);
  }

  #signal(sig: Signal): void {
    if (this.#draining) {
      this.#log.warn(`${sig} again while draining; exiting now`);
      Deno.exit(130);
    }
    this.#draining = true;
    this.#log.info(`${sig} received; cancelling ${this.#tasks.size} task(s)`);
    this.cancelAll(`${sig} received`);
  }

  #listen(): void {
    if (this.#listening) return;
    this.#listening = true;
    for (const s of this.#signals) {
      const h = this.#onSignal(s);
      this.#handlers.set(s, h);
      Deno.addSignalListener(s, h);
    }
  }

  #unlisten(): void {
    if (!this.#listening) return;
    this.#listening = false;
    this.#draining = false;
    for (const [s, h] of this.#handlers) Deno.removeSignalListener(s, h);
    this.#handlers.clear();
  }
}
