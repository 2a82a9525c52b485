/**
 * A real daemon (HAProxy, Kamailio) run in the foreground by a test, with what it writes to
 * stderr collected for assertions and failure messages.
 * @module
 */

/** A running daemon. */
export interface Daemon {
  /** What it wrote to stderr so far. */
  log(): string;
  /** Everything it wrote, once it has exited. */
  exited: Promise<string>;
  /** SIGTERM, then everything it wrote. */
  stop(): Promise<string>;
}

/** Start `command` with `args`, stdout discarded, stderr collected. */
export function startDaemon(command: string, args: string[]): Daemon {
  const child = new Deno.Command(command, { args, stdout: "null", stderr: "piped" }).spawn();
  let said = "";
  const exited = (async () => {
    const dec = new TextDecoder();
    for await (const c of child.stderr) said += dec.decode(c, { stream: true });
    await child.status;
    return said;
  })();
  return {
    log: () => said,
    exited,
    async stop(): Promise<string> {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      return await exited;
    },
  };
}
