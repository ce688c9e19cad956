// The owner's module layout: protocol apart from semantics, and no import cycles (type imports counted).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const src = resolve(import.meta.dirname, "../server/src");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith(".ts") ? [join(dir, d.name)] : []));
}

/** Each module's relative imports within server/src: `import` and `export ... from` declarations, `import type` included. */
function imports(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files(src)) {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(/^(?:import|export)\b[^;"']*?["'](\.{1,2}\/[^"']+)["']/gm)]
      .map((m) => resolve(dirname(file), m[1]).replace(/\.js$/, ".ts"))
      .filter((t) => t.startsWith(src));
    graph.set(relative(src, file), targets.map((t) => relative(src, t)));
  }
  return graph;
}

describe("the owner's modules", () => {
  it("outside rpc/ never import from rpc/ (the transport), but for the modules that start servers", () => {
    const graph = imports();
    const startsServers = (f: string) => f === "owner.ts" || f === "leadership.ts" || f === "standby.ts" || f === "main.ts" || f.startsWith("cli/");
    expect([...graph.keys()].filter((f) => f.startsWith("rpc/")).length).toBeGreaterThan(10);
    const crossing = [...graph].flatMap(([from, to]) => (from.startsWith("rpc/") || startsServers(from) ? [] : to.filter((t) => t.startsWith("rpc/")).map((t) => `${from} -> ${t}`)));
    expect(crossing).toEqual([]);
  });

  it("import no module that imports them back, type imports counted (no cycles)", () => {
    const graph = imports();
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, "done");
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
