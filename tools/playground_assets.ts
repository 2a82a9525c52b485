/**
 * `deno task playground`: writes server/playground_assets.ts, the browser playground's files
 * (server/playground/) as string constants, so the server serves them without reading a file:
 * imported from a registry (`https:`) there is no file to read, and locally there is no read
 * grant to ask for. Edit the files under server/playground/, then run the task; `--check` only
 * compares and exits 1 when the committed module is stale (tests/playground_assets_test.ts).
 * @module
 */

/** The playground's source directory, relative to the repository root. */
export const PLAYGROUND_SOURCE_DIR = "server/playground";
/** The generated module. */
export const PLAYGROUND_MODULE = "server/playground_assets.ts";
/** The files bundled, in the order they are written. */
export const PLAYGROUND_SOURCES: readonly string[] = ["index.html", "app.js", "style.css"];

/** The generated module's text for these file contents (name -> text). */
export function playgroundModule(files: Readonly<Record<string, string>>): string {
  const entries = Object.entries(files).map(([name, text]) =>
    `  ${JSON.stringify(name)}:\n    ${JSON.stringify(text)},`
  );
  return [
    "/**",
    " * The browser playground's files as text, generated from server/playground/ by",
    " * `deno task playground` (tools/playground_assets.ts): edit those files, not this one.",
    " * @module",
    " */",
    "",
    "/** File name -> content of each playground file. */",
    "export const PLAYGROUND_ASSETS: Readonly<Record<string, string>> = Object.freeze({",
    ...entries,
    "});",
    "",
  ].join("\n");
}

/** Read the playground's files from `root` and build the module text. */
export async function buildPlaygroundModule(root = "."): Promise<string> {
  const files: Record<string, string> = {};
  for (const name of PLAYGROUND_SOURCES) {
    files[name] = await Deno.readTextFile(`${root}/${PLAYGROUND_SOURCE_DIR}/${name}`);
  }
  return playgroundModule(files);
}

if (import.meta.main) {
  const text = await buildPlaygroundModule();
  if (Deno.args.includes("--check")) {
    const current = await Deno.readTextFile(PLAYGROUND_MODULE).catch(() => "");
    if (current !== text) {
      console.error(`${PLAYGROUND_MODULE} is stale: run deno task playground`);
      Deno.exit(1);
    }
    console.log(`${PLAYGROUND_MODULE} is up to date`);
  } else {
    await Deno.writeTextFile(PLAYGROUND_MODULE, text);
    console.log(`wrote ${PLAYGROUND_MODULE}`);
  }
}
