// The module layout docs/architecture.md states ("What the layout test checks"), read from the
// sources: every module's import declarations, `import type` and `export ... from` included.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "..");
/** The folders of server/src that hold the semantics, apart from the transport (rpc/) and the store (store/). */
const domain = ["log/", "processors/", "actions/", "collections/", "time/", "plugins/", "auth/"];
/** The modules that start the servers, which import the transport to do so. */
const startsServers = (module: string) =>
  module === "owner.ts" || module === "leadership.ts" || module === "standby.ts" || module === "main.ts" || module.startsWith("cli/");
/**
 * Entry points besides index.ts: the modules that compile and check what plugin manifests
 * declare, which plugins/ (and time/, for the actions its schedules call) imports. The folder's
 * index.ts opens a subsystem that reads the plugin registry, so going through it would close an
 * import loop.
 */
const declarationEntries = new Set(["actions/declaration.ts", "time/declared.ts", "time/pulse-rules.ts"]);

/** Files under `dir` (relative to the repository) whose names end with one of `extensions`, relative to the repository; node_modules and build output left out. */
function files(dir: string, extensions = [".ts"]): string[] {
  if (!existsSync(join(repo, dir))) return [];
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((d) => {
    const path = `${dir}/${d.name}`;
    if (d.isDirectory()) return d.name === "node_modules" || d.name === "dist" ? [] : files(path, extensions);
    return extensions.some((e) => d.name.endsWith(e)) ? [path] : [];
  });
}

/** What one module imports: the specifier as written and, for a relative one, the file it names (relative to the repository; a .js name read as its .ts source). */
interface Import {
  specifier: string;
  target: string | undefined;
}

/** The import declarations of `file` (relative to the repository): `import` (type-only ones too) and `export ... from`; with `calls`, also `import("...")`. */
function importsOf(file: string, calls = false): Import[] {
  const text = readFileSync(join(repo, file), "utf8");
  const declarations = /^(?:import|export)\s(?:[^;"'`]*?\sfrom\s*)?["']([^"']+)["']/gm;
  const found = [...text.matchAll(declarations), ...(calls ? text.matchAll(/\bimport\(\s*["']([^"']+)["']/g) : [])];
  return found.map((m) => {
    const specifier = m[1];
    if (!specifier.startsWith(".")) return { specifier, target: undefined };
    const path = relative(repo, resolve(dirname(join(repo, file)), specifier));
    return { specifier, target: path.endsWith(".js") && !existsSync(join(repo, path)) ? `${path.slice(0, -3)}.ts` : path };
  });
}

/** The owner's modules (relative to server/src), each with the modules of server/src it imports. */
function ownerGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files("server/src")) {
    const targets = importsOf(file).flatMap((i) => (i.target?.startsWith("server/src/") ? [relative("server/src", i.target)] : []));
    graph.set(relative("server/src", file), targets);
  }
  return graph;
}

/** The folder of server/src a module is in ("" for the top-level modules). */
const folderOf = (module: string) => (module.includes("/") ? `${module.split("/")[0]}/` : "");

describe("the owner's modules (server/src)", () => {
  it("in the domain folders never import from rpc/ (the transport)", () => {
    const graph = ownerGraph();
    expect(domain.filter((folder) => ![...graph.keys()].some((m) => m.startsWith(folder)))).toEqual([]);
    const crossing = [...graph].flatMap(([from, to]) =>
      domain.includes(folderOf(from)) ? to.filter((t) => t.startsWith("rpc/")).map((t) => `${from} -> ${t}`) : [],
    );
    expect(crossing).toEqual([]);
  });

  it("outside rpc/ never import from it either, but for the modules that start servers", () => {
    const graph = ownerGraph();
    expect([...graph.keys()].filter((m) => m.startsWith("rpc/")).length).toBeGreaterThan(10);
    const crossing = [...graph].flatMap(([from, to]) =>
      from.startsWith("rpc/") || startsServers(from) ? [] : to.filter((t) => t.startsWith("rpc/")).map((t) => `${from} -> ${t}`),
    );
    expect(crossing).toEqual([]);
  });

  it("import no module that imports them back, type imports counted (no cycles)", () => {
    const graph = ownerGraph();
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (module: string, path: string[]): void => {
      if (state.get(module) === "done") return;
      if (state.get(module) === "open") {
        cycles.push([...path.slice(path.indexOf(module)), module].join(" -> "));
        return;
      }
      state.set(module, "open");
      for (const next of graph.get(module) ?? []) visit(next, [...path, module]);
      state.set(module, "done");
    };
    for (const module of graph.keys()) visit(module, []);
    expect(cycles).toEqual([]);
  });

  it("in store/ load no module of another folder, directly or through the top-level modules they import", () => {
    const graph = ownerGraph();
    const store = [...graph.keys()].filter((m) => m.startsWith("store/"));
    expect(store.length).toBeGreaterThan(10);
    const reached = new Set<string>();
    const outside: string[] = [];
    const visit = (module: string): void => {
      if (reached.has(module)) return;
      reached.add(module);
      for (const next of graph.get(module) ?? []) {
        if (folderOf(next) !== "" && folderOf(next) !== "store/") outside.push(`${module} -> ${next}`);
        else visit(next);
      }
    };
    for (const module of store) visit(module);
    expect(outside).toEqual([]);
  });

  it("are entered through their folder's index.ts where it has one (or a module compiling what manifests declare)", () => {
    const graph = ownerGraph();
    const entered = [...graph.keys()].filter((m) => m.endsWith("/index.ts")).map(folderOf);
    expect(entered).toEqual(expect.arrayContaining(["actions/", "time/"]));
    const bypassing = [...graph].flatMap(([from, to]) =>
      to
        .filter((t) => entered.includes(folderOf(t)) && folderOf(t) !== folderOf(from) && !t.endsWith("/index.ts") && !declarationEntries.has(t))
        .map((t) => `${from} -> ${t}`),
    );
    expect(bypassing).toEqual([]);
    expect([...declarationEntries].filter((m) => !graph.has(m))).toEqual([]);
  });
});

describe("the generated code (sdk/ts/src/gen)", () => {
  const outside = ["server", "bench", "test", "examples", "console", "scripts"].flatMap((dir) => files(dir, [".ts", ".tsx", ".mts", ".mjs", ".js"]));

  it("is imported through the SDK package's exports, never by a path into the SDK's sources", () => {
    const intoGen = outside.flatMap((file) =>
      importsOf(file, true).flatMap((i) =>
        i.specifier.includes("sdk/ts/src/gen") || i.target?.startsWith("sdk/ts/src/gen/") ? [`${file}: ${i.specifier}`] : [],
      ),
    );
    expect(intoGen).toEqual([]);
  });

  it("is exported by the SDK package as @chronolog/sdk/gen/..., from its sources under the chronolog-source condition", () => {
    const sdk = JSON.parse(readFileSync(join(repo, "sdk/ts/package.json"), "utf8")) as { name: string; exports: Record<string, Record<string, unknown>> };
    expect(sdk.name).toBe("@chronolog/sdk");
    expect(Object.keys(sdk.exports["./gen/*"])[0]).toBe("chronolog-source");
    expect(sdk.exports["./gen/*"]["chronolog-source"]).toBe("./src/gen/*.ts");
    const throughPackage = outside.flatMap((file) => importsOf(file, true).filter((i) => i.specifier.startsWith("@chronolog/sdk/gen/")));
    expect(throughPackage.length).toBeGreaterThan(100);
    const missing = throughPackage.filter((i) => !existsSync(join(repo, "sdk/ts/src/gen", `${i.specifier.slice("@chronolog/sdk/gen/".length)}.ts`)));
    expect(missing).toEqual([]);
  });
});
