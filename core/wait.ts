/**
 * Bounded waits for shutdown paths: give work a deadline to finish, then go on without it.
 *
 * @example
 * ```ts
 * import { settlesWithin } from "./wait.ts";
 * import type { Logger } from "@flowcat/flowcat";
 * declare const reader: Promise<unknown>;
 * declare const log: Logger;
 * if (!(await settlesWithin(reader, 1000))) log.warn("reader still busy");
 * ```
 * @module
 */

/**
 * Wait for `work`, but no longer than `ms`: true when it settled in time, false when the
 * deadline came first. A rejection of `work` within the deadline is passed on.
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      work.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
