// Summarises a V8 CPU profile (`node --cpu-prof`): self time by function and
// by package/area, and inclusive time of selected frames.
//
//   node --import tsx bench/emit/profile.ts [--top N] [--skip-ms MS] <file.cpuprofile>...

import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a script URL belongs: a package, an owner folder, node internals, or native/VM work. */
export function area(url: string, functionName: string): string {
  if (url === "") {
    if (functionName === "(garbage collector)") return "(gc)";
    if (functionName === "(idle)") return "(idle)";
    if (functionName === "(program)") return "(program)";
    return "(native)";
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith("node:internal/")) {
    // node:internal/http2/core -> node:internal/http2; node:internal/abort_controller stays.
    const parts = url.slice("node:internal/".length).split("/");
    return `node:internal/${parts[0] === "per_context" || parts[0] === "deps" ? parts.slice(0, 2).join("/") : parts[0]}`;
  }
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/")[0]}`;
  const own = /\/(server\/src\/[^/]+|sdk\/ts\/src)/.exec(url);
  if (own) return own[1];
  return url.split("/").slice(-2).join("/");
}

/**
 * Self time (ms) per key, the total, and inclusive time per area (a frame
 * counted once per sample). Samples in the first `skipMs` of the profile
 * (start-up) are left out.
 */
export function summarise(profile: Profile, skipMs = 0) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfByFn = new Map<string, number>();
  const selfByArea = new Map<string, number>();
  const inclusiveByArea = new Map<string, number>();
  let total = 0;
  let elapsed = 0;
  profile.samples.forEach((id, i) => {
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    elapsed += dt;
    if (elapsed < skipMs) return;
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    total += dt;
    const a = area(url, functionName);
    const fn = `${functionName || "(anonymous)"} ${url ? `${url.replace(/^.*\/(node_modules|work\/main)\//, "")}:${lineNumber + 1}` : ""}`;
    selfByFn.set(fn, (selfByFn.get(fn) ?? 0) + dt);
    selfByArea.set(a, (selfByArea.get(a) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      const key = area(f.url, f.functionName);
      if (!seen.has(key)) {
        seen.add(key);
        inclusiveByArea.set(key, (inclusiveByArea.get(key) ?? 0) + dt);
      }
    }
  });
  return { total, selfByFn, selfByArea, inclusiveByArea };
}

function table(title: string, entries: Map<string, number>, total: number, top: number): string {
  const rows = [...entries].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [title, ...rows.map(([k, ms]) => `${((ms / total) * 100).toFixed(1).padStart(6)}%  ${ms.toFixed(0).padStart(7)} ms  ${k}`)].join("\n");
}

/** The printable report of a profile file. */
export function report(file: string, top = 25, skipMs = 0): string {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const { total, selfByFn, selfByArea, inclusiveByArea } = summarise(profile, skipMs);
  const busy = total - (selfByArea.get("(idle)") ?? 0);
  return [
    `profile ${file}: ${total.toFixed(0)} ms sampled after the first ${skipMs} ms, ${busy.toFixed(0)} ms busy (percentages of busy time)`,
    table("self time by area:", new Map([...selfByArea].filter(([k]) => k !== "(idle)")), busy, top),
    table("inclusive time by area (frame anywhere on the stack):", new Map([...inclusiveByArea].filter(([k]) => k !== "(idle)")), busy, top),
    table("self time by function:", new Map([...selfByFn].filter(([k]) => !k.startsWith("(idle)"))), busy, top),
  ].join("\n\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: number) => {
    const at = args.indexOf(name);
    return at >= 0 ? Number(args.splice(at, 2)[1]) : fallback;
  };
  const top = option("--top", 25);
  const skipMs = option("--skip-ms", 0);
  if (args.length === 0 || !(top > 0) || !(skipMs >= 0)) {
    console.error("usage: node --import tsx bench/emit/profile.ts [--top N] [--skip-ms MS] <file.cpuprofile>...");
    process.exit(2);
  }
  for (const file of args) console.log(`${report(file, top, skipMs)}\n`);
}
