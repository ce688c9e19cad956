// `npm run build` (and `prepack`, so `npm pack` ships it): the package in both module systems.
// - dist/: ES modules and their .d.ts, compiled by tsc (`import` from "@chronolog/sdk");
// - dist/cjs/: the same modules as CommonJS, transpiled file by file by esbuild (no bundling: the
//   gen/ files stay separate for "@chronolog/sdk/gen/..."), with a package.json saying
//   "type": "commonjs" and a copy of the .d.ts files, which TypeScript then reads as CommonJS
//   declarations (`require("@chronolog/sdk")`).
// package.json's "exports" sends `import` to dist/ and `require` to dist/cjs/. An application that
// loads both copies (an ES module and a CommonJS dependency each importing the SDK) gets two
// copies of its classes: `instanceof TerminalError` holds only within one.
import { execFileSync } from "node:child_process";
import { cpSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { build } from "esbuild";

const sdk = new URL("../", import.meta.url).pathname;
const dist = join(sdk, "dist");
const cjs = join(dist, "cjs");

/** Every file under `dir` (recursively) whose name ends with `suffix`. */
function filesUnder(dir, suffix) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path, suffix);
    return name.endsWith(suffix) ? [path] : [];
  });
}

rmSync(dist, { recursive: true, force: true });
const tsc = join(createRequire(import.meta.url).resolve("typescript/package.json"), "../bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(sdk, "tsconfig.json")], { stdio: "inherit" });

await build({
  entryPoints: filesUnder(join(sdk, "src"), ".ts"),
  outdir: cjs,
  outbase: join(sdk, "src"),
  bundle: false,
  format: "cjs",
  platform: "node",
  target: "node20",
  logLevel: "warning",
});
writeFileSync(join(cjs, "package.json"), `${JSON.stringify({ type: "commonjs" })}\n`);
for (const declaration of filesUnder(dist, ".d.ts")) {
  if (!declaration.startsWith(cjs)) cpSync(declaration, join(cjs, relative(dist, declaration)));
}
