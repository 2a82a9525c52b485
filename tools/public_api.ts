/**
 * The package's public surface as text: for every export path in `deno.json`, in order, its
 * published name and file, then one `kind name` line per exported symbol (types included),
 * sorted. `tests/public_api_test.ts` compares it with `tests/fixtures/public_api.txt`, so a change
 * to the API shows as a diff of that file.
 *
 * `deno task api` rewrites the fixture after a deliberate API change; `deno task api --print`
 * prints the surface instead.
 * @module
 */

import { runDeno } from "./deno_child.ts";
import { runToolMain } from "./tool_error.ts";

/** Where the committed snapshot lives, relative to the repository root. */
export const PUBLIC_API_FIXTURE = "tests/fixtures/public_api.txt";

interface DocSymbol {
  name: string;
  declarations: { kind: string }[];
}

interface DocJson {
  nodes: Record<string, { symbols: DocSymbol[] }>;
}

/** The surface of the package whose `deno.json` is in `root`, as the snapshot text. */
export async function publicApi(root: string): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(`${root}/deno.json`)) as {
    name: string;
    exports: Record<string, string>;
  };
  const entries = Object.entries(config.exports);
  const r = await runDeno(["doc", "--json", ...entries.map(([, file]) => file)], root);
  if (r.code !== 0) throw new Error(`deno doc failed: ${r.stderr.trim()}`);
  const nodes = (JSON.parse(r.stdout) as DocJson).nodes;
  const byFile = new Map<string, DocSymbol[]>();
  for (const [url, node] of Object.entries(nodes)) {
    byFile.set(new URL(url).pathname, node.symbols);
  }
  const out: string[] = [];
  for (const [path, file] of entries) {
    const name = path === "." ? config.name : `${config.name}${path.slice(1)}`;
    const symbols = byFile.get(new URL(file, `file://${root}/`).pathname) ?? [];
    const lines = symbols.map((s) => {
      const kinds = [...new Set(s.declarations.map((d) => d.kind))].sort().join("+");
      return `${kinds} ${s.name}`;
    });
    lines.sort((a, b) => a.split(" ")[1].localeCompare(b.split(" ")[1]) || a.localeCompare(b));
    out.push(`## ${name} (${file}): ${lines.length}`, ...lines, "");
  }
  return out.join("\n");
}

async function main(args: string[]): Promise<number> {
  const text = await publicApi(Deno.cwd());
  if (args.includes("--print")) {
    console.log(text);
    return 0;
  }
  await Deno.writeTextFile(PUBLIC_API_FIXTURE, text);
  console.log(`wrote ${PUBLIC_API_FIXTURE}`);
  return 0;
}

if (import.meta.main) {
  await runToolMain("api", main, "run it as `deno task api` from the repository root");
}
