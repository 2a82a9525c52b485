/**
 * The docs site holds together: every relative link in README.md and docs/**\/*.md points at a
 * file that exists (and, for `#anchor` links into markdown, at a heading that exists), and every
 * top-level docs page is reachable from docs/index.md.
 */

import assert from "node:assert/strict";
import { dirname, join, normalize, relative } from "node:path";

/** Top-level docs pages that need not be listed in docs/index.md. */
const NOT_IN_INDEX: ReadonlySet<string> = new Set(["docs/index.md", "docs/decisions.md"]);

/** One link as written in a markdown file. */
interface MarkdownLink {
  /** The file it appears in, relative to the repository root. */
  file: string;
  /** 1-based line number. */
  line: number;
  /** The link target as written (`path`, `path#anchor` or `#anchor`). */
  target: string;
}

/** Markdown files under `dir`, recursively, as root-relative paths. */
async function markdownFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out.push(...await markdownFiles(path));
    else if (entry.isFile && entry.name.endsWith(".md")) out.push(path);
  }
  return out.sort();
}

/**
 * The lines of `text` with fenced code blocks blanked, so that examples inside code are neither
 * links nor headings, and (unless `keepInlineCode`) inline code spans removed. Line numbers are
 * kept.
 */
function proseLines(text: string, keepInlineCode = false): string[] {
  let fence: string | undefined;
  return text.split("\n").map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) {
        fence = undefined;
      }
      return "";
    }
    if (marker !== undefined) {
      fence = marker;
      return "";
    }
    return keepInlineCode ? line : line.replace(/(`+)[^`]*?\1/g, "");
  });
}

const INLINE_LINK = /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
const REFERENCE_DEFINITION = /^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/;

/** Every inline link and reference definition in `file`. */
async function linksIn(file: string): Promise<MarkdownLink[]> {
  const out: MarkdownLink[] = [];
  proseLines(await Deno.readTextFile(file)).forEach((line, i) => {
    for (const m of line.matchAll(INLINE_LINK)) out.push({ file, line: i + 1, target: m[1] });
    const def = REFERENCE_DEFINITION.exec(line);
    if (def !== null) out.push({ file, line: i + 1, target: def[1] });
  });
  return out;
}

/** True for a link that leaves the repository (`https:`, `mailto:`, ...). */
function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .trim()
    .replace(/\s/g, "-");
}

/** The anchors of a markdown file's headings, with GitHub's `-1`, `-2` suffixes on repeats. */
async function anchorsOf(file: string): Promise<Set<string>> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(await Deno.readTextFile(file), true)) {
    const m = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (m === null) continue;
    const base = headingSlug(m[1].replaceAll("`", ""));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** What is wrong with `link`, or `undefined` when it resolves. */
async function brokenReason(link: MarkdownLink): Promise<string | undefined> {
  const hash = link.target.indexOf("#");
  const pathPart = hash < 0 ? link.target : link.target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(link.target.slice(hash + 1));
  const target = pathPart === ""
    ? link.file
    : normalize(join(dirname(link.file), decodeURIComponent(pathPart)));
  if (relative(".", target).startsWith("..")) return "points outside the repository";
  if (!await exists(target)) return `no such file ${target}`;
  if (anchor === undefined || anchor === "" || !target.endsWith(".md")) return undefined;
  return (await anchorsOf(target)).has(anchor) ? undefined : `no heading #${anchor} in ${target}`;
}

async function docsAndReadme(): Promise<string[]> {
  return ["README.md", ...await markdownFiles("docs")];
}

Deno.test("headingSlug follows GitHub's anchor rules", () => {
  const cases: [string, string][] = [
    [
      "Answer documents, webhook signatures and outbound calls",
      "answer-documents-webhook-signatures-and-outbound-calls",
    ],
    ["Audio benchmarks (bench/audio.ts)", "audio-benchmarks-benchaudiots"],
    ["pipeline and providers", "pipeline-and-providers"],
    ["Ports, NAT & firewall", "ports-nat--firewall"],
    ["[Config](config.md) fields", "config-fields"],
  ];
  for (const [heading, slug] of cases) assert.equal(headingSlug(heading), slug, heading);
});

Deno.test("every relative link in README.md and docs/ resolves", async () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of await docsAndReadme()) {
    for (const link of await linksIn(file)) {
      if (isExternal(link.target)) continue;
      checked++;
      const why = await brokenReason(link);
      if (why !== undefined) broken.push(`${link.file}:${link.line}: (${link.target}) ${why}`);
    }
  }
  assert.ok(checked > 50, `only ${checked} relative links found: is the link parser broken?`);
  assert.deepEqual(broken, [], `broken links:\n${broken.join("\n")}`);
});

Deno.test("docs/index.md links every top-level docs page", async () => {
  const linked = new Set<string>();
  for (const link of await linksIn("docs/index.md")) {
    if (isExternal(link.target)) continue;
    const path = link.target.split("#")[0];
    if (path !== "") linked.add(normalize(join("docs", path)));
  }
  const pages = (await markdownFiles("docs")).filter((f) => dirname(f) === "docs");
  const missing = pages.filter((p) => !NOT_IN_INDEX.has(p) && !linked.has(p));
  assert.deepEqual(missing, [], `not linked from docs/index.md: ${missing.join(", ")}`);
});

Deno.test("README.md links the docs index", async () => {
  const targets = (await linksIn("README.md")).map((l) => l.target.split("#")[0]);
  assert.ok(targets.includes("docs/index.md"), "README.md has no link to docs/index.md");
});
