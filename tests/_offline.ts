/** Running a shell script with no network at all (`unshare -n`, loopback up), for offline tests. */

/** Whether `unshare -n` works here (root, or user namespaces). */
export async function hasUnshare(): Promise<boolean> {
  try {
    return (await new Deno.Command("unshare", { args: ["-n", "true"] }).output()).code === 0;
  } catch {
    return false;
  }
}

/** Run `lines` with `sh` in a fresh network namespace whose loopback is up; exit code and output. */
export async function runOffline(
  lines: readonly string[],
): Promise<{ code: number; text: string }> {
  const out = await new Deno.Command("unshare", {
    args: ["-n", "sh", "-c", ["ip link set lo up", ...lines].join("\n")],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}
