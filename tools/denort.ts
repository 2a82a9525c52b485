/**
 * `denort`, the runtime `deno compile` embeds in every executable. Deno downloads it from
 * dl.deno.land on first use (then caches it); an offline machine needs `DENORT_BIN` pointing at
 * a copy fetched elsewhere. This module checks `DENORT_BIN` up front and turns a failed download
 * into one line saying what to do (docs/deploy.md).
 * @module
 */

import { statOutside } from "./deno_child.ts";

/** The release archive holding denort for this Deno and platform. */
export function denortArchive(
  version: string = Deno.version.deno,
  target: string = Deno.build.target,
): { name: string; url: string } {
  const name = `denort-${target}.zip`;
  return { name, url: `https://dl.deno.land/release/v${version}/${name}` };
}

/** The one-line error for a denort that cannot be had, with `reason`. */
export function denortMessage(reason: string): string {
  const { name, url } = denortArchive();
  return `compile: no denort for Deno ${Deno.version.deno} (${reason}). On a connected machine ` +
    `download ${url} (or ${name} from the v${Deno.version.deno} GitHub release), unzip it, copy ` +
    `denort here and set DENORT_BIN=/path/to/denort; see docs/deploy.md`;
}

/** Why `DENORT_BIN` (when set) cannot be used, or undefined when it can (or is unset). */
export async function denortBinProblem(path: string | undefined): Promise<string | undefined> {
  if (path === undefined || path === "") return undefined;
  const info = await statOutside(path);
  if (!info.exists) return `DENORT_BIN=${path} does not exist`;
  if (!info.file) return `DENORT_BIN=${path} is not a file`;
  if (!info.executable) return `DENORT_BIN=${path} is not executable (chmod +x it)`;
  return undefined;
}

/** Compile failures that mean "no denort": a failed download or a missing DENORT_BIN. */
const DENORT_FAILURE = /Setting up base binary|Could not find denort|denort-[\w-]+\.zip/;

/**
 * When `deno compile` failed for want of denort, the short reason (the innermost cause it
 * printed); otherwise undefined.
 */
export function denortFailure(stderr: string): string | undefined {
  if (!DENORT_FAILURE.test(stderr)) return undefined;
  const causes = [...stderr.matchAll(/^\s*\d+: (.+)$/gm)].map((m) => m[1].trim());
  const download = causes.find((c) => /error sending request|Could not find denort/.test(c));
  const reason = download ?? causes.at(-1) ?? "download failed";
  // "error sending request for url (https://...zip): client error (Connect): dns error: ..." is
  // long; the URL is in the message anyway.
  return reason.replace(/^error sending request for url \([^)]*\): /, "download failed: ");
}
