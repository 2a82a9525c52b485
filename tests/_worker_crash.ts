/**
 * A worker instrument (`startWorkers({ instrument })`) that makes one worker thread fail the way
 * a bug would: `probe("throw <dir>")` throws from a timer, `probe("reject <dir>")` leaves a
 * rejected promise unhandled, in the first worker to create `<dir>` (the others answer false).
 */

/** Fail this worker (if it is the first to claim `dir`); true when it will. */
export function probe(arg: string): boolean {
  const [how, dir] = arg.split(" ");
  try {
    Deno.mkdirSync(dir);
  } catch {
    return false;
  }
  if (how === "throw") {
    setTimeout(() => {
      throw new TypeError("cannot read properties of undefined (reading 'pcm')");
    }, 0);
  } else {
    setTimeout(() => void Promise.reject(new RangeError("offset is out of bounds")), 0);
  }
  return true;
}
