import { toJson } from "@bufbuild/protobuf";
import { ProcessorDeclarationSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { canonicalJson } from "../log/canonical.js";
import type { RegisteredPlugin } from "../plugins/manifest.js";
import { takeAnswer } from "../executors/answered.js";
import type { ExecutorSession } from "../executors/session.js";
import { compileProcessor } from "./declaration.js";
import { ProcessorEngine, type AckVerdict, type EngineDeps } from "./engine.js";

/** Grace given to running deliveries when the owner stops. */
export const shutdownGraceMs = 5_000;

/**
 * All processor engines: one per declared processor, created and replaced as
 * manifests change, fed after every commit, and told about executors'
 * answers and departures.
 */
export class Processors {
  private readonly engines = new Map<string, { engine: ProcessorEngine; canonical: string }>();

  constructor(private readonly deps: EngineDeps) {}

  /** Whether a processor `plugin.processor` is declared. */
  has(name: string): boolean {
    return this.engines.has(name);
  }

  /** The engine of a processor, if declared. */
  get(name: string): ProcessorEngine | undefined {
    return this.engines.get(name)?.engine;
  }

  /** All engines, by name. */
  list(): ProcessorEngine[] {
    return [...this.engines.values()].map((e) => e.engine).sort((a, b) => a.spec.name.localeCompare(b.spec.name));
  }

  /**
   * Brings the engines in line with the registered plugins: starts new
   * processors, replaces changed ones (from their saved cursor) and stops
   * removed ones.
   */
  sync(plugins: RegisteredPlugin[]): void {
    const declared = new Map<string, { plugin: string; name: string; canonical: string }>();
    for (const p of plugins) {
      for (const [name, decl] of Object.entries(p.compiled.manifest.processors)) {
        declared.set(`${p.compiled.manifest.name}.${name}`, {
          plugin: p.compiled.manifest.name,
          name,
          canonical: canonicalJson(toJson(ProcessorDeclarationSchema, decl)),
        });
      }
    }
    for (const [name, current] of this.engines) {
      if (declared.get(name)?.canonical === current.canonical) continue;
      this.engines.delete(name);
      void current.engine.stop(0);
    }
    for (const [name, d] of declared) {
      if (this.engines.has(name)) continue;
      const decl = plugins.find((p) => p.compiled.manifest.name === d.plugin)!.compiled.manifest.processors[d.name];
      const engine = new ProcessorEngine(compileProcessor(d.plugin, d.name, decl), this.deps);
      this.engines.set(name, { engine, canonical: d.canonical });
      engine.start();
    }
  }

  /** Feeds every engine the newly committed events. */
  onCommit(): void {
    for (const { engine } of this.engines.values()) engine.fill();
  }

  /** Sends work to a session that has (new) free credits. */
  pumpFor(session: ExecutorSession): void {
    for (const name of session.processors) this.get(name)?.pump();
  }

  /** Routes an ack read at `at` (performance.now() ms); the verdict says whether it changed anything. */
  ack(session: ExecutorSession, deliveryId: string, ok: boolean, error: string, terminal: boolean, at: number): AckVerdict {
    const engine = this.get(deliveryId.slice(0, deliveryId.indexOf("/")));
    return engine ? engine.ack(session, deliveryId, ok, error, terminal, at) : takeAnswer(session, deliveryId) === "unknown" ? "unknown" : "stale";
  }

  /** Routes a progress report. */
  progress(session: ExecutorSession, deliveryId: string, extendMs: number): boolean {
    return this.get(deliveryId.slice(0, deliveryId.indexOf("/")))?.progress(session, deliveryId, extendMs) ?? false;
  }

  /** A session ended: its deliveries fail and go elsewhere. */
  sessionGone(session: ExecutorSession): void {
    for (const name of session.processors) this.get(name)?.sessionGone(session);
  }

  /** Stops every engine, giving running deliveries `graceMs`. */
  async stop(graceMs = shutdownGraceMs): Promise<void> {
    await Promise.all([...this.engines.values()].map(({ engine }) => engine.stop(graceMs)));
  }
}
