/**
 * The MCP stdio transport on `Deno.Command`: newline-delimited JSON-RPC over the program's stdin
 * and stdout. The SDK's own stdio client spawns through Node's child_process and copies
 * `HOME`, `PATH` and more from the environment into the child; this one starts the program with
 * only the variables the config names, so `--allow-env` stays exactly what the config derives.
 * @module
 */

import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport.js";
import type { JSONRPCMessage } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { errorMessage } from "../../core/errors.ts";

/** How long a stopped program gets to exit on SIGTERM before it is killed, ms. */
export const STOP_GRACE_MS = 2000;

/** What to start. */
export interface StdioProgram {
  /** Program (a PATH name or a path). */
  command: string;
  /** Its arguments. */
  args: readonly string[];
  /** Its whole environment. */
  env: Record<string, string>;
  /** Called with each line the program writes to stderr. */
  onStderr?: (line: string) => void;
}

/** An MCP client transport speaking to a program it starts. */
export class DenoStdioTransport implements Transport {
  readonly #program: StdioProgram;
  #child: Deno.ChildProcess | undefined;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #closed = false;
  /** Called once when the program's stdout ends (it exited or closed it) or on close(). */
  onclose?: () => void;
  /** Called with a transport error (a line that is not JSON-RPC, a write that failed). */
  onerror?: (error: Error) => void;
  /** Called with each message the program sends. */
  onmessage?: (message: JSONRPCMessage) => void;

  /** Prepare to start `program` (nothing runs before {@link start}). */
  constructor(program: StdioProgram) {
    this.#program = program;
  }

  /** Start the program; rejects when it cannot be started (not found, not allowed). */
  start(): Promise<void> {
    const p = this.#program;
    this.#child = new Deno.Command(p.command, {
      args: [...p.args],
      env: p.env,
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    void this.#readLines(this.#child.stdout, (line) => this.#receive(line)).finally(() =>
      this.#finish()
    );
    void this.#readLines(this.#child.stderr, (line) => p.onStderr?.(line));
    return Promise.resolve();
  }

  /** Write one message as a line. */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#writer === undefined || this.#closed) throw new Error("MCP server is not running");
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  }

  /** Stop the program (SIGTERM, then SIGKILL after {@link STOP_GRACE_MS}) and wait for it. */
  async close(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    try {
      await this.#writer?.close();
    } catch {
      // already closed by the program's exit
    }
    const signal = (s: Deno.Signal) => {
      try {
        child.kill(s);
      } catch {
        // already exited
      }
    };
    signal("SIGTERM");
    // A program that ignores SIGTERM must not hold the agent server's shutdown.
    const kill = setTimeout(() => signal("SIGKILL"), STOP_GRACE_MS);
    await child.status;
    clearTimeout(kill);
    this.#finish();
  }

  #receive(line: string): void {
    if (line.trim() === "") return;
    let msg: JSONRPCMessage;
    try {
      msg = JSON.parse(line) as JSONRPCMessage;
    } catch (err) {
      this.onerror?.(new Error(`MCP server wrote a line that is not JSON: ${errorMessage(err)}`));
      return;
    }
    this.onmessage?.(msg);
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }

  async #readLines(stream: ReadableStream<Uint8Array>, each: (line: string) => void) {
    let rest = "";
    try {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
        rest += chunk;
        let nl: number;
        while ((nl = rest.indexOf("\n")) >= 0) {
          each(rest.slice(0, nl).replace(/\r$/, ""));
          rest = rest.slice(nl + 1);
        }
      }
    } catch {
      // the stream broke with the program: its end is what matters
    }
    if (rest !== "") each(rest);
  }
}
