import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { PluginManifestSchema } from "./gen/chronolog/v1/plugin_pb.js";
import type { DeliveryContext } from "./executor.js";

/** An event type declaration (E4, E5). */
export interface EventDefinition {
  /** JSON Schema (draft 2020-12) for the data. */
  schema?: JsonObject;
  /** Who may emit it from outside: `*`, `role:<role>` or principal names. */
  allow?: string[];
  description?: string;
}

/** A processor in code (P1-P8). Times in ms. */
export interface ProcessorDefinition {
  /** Event types (default: every type). */
  on?: string | string[];
  /** MongoDB filter on the event's data. */
  where?: JsonObject;
  /** Lane key path, e.g. `data._id`. */
  key?: string;
  /** Lanes in flight at once (default 1). */
  concurrency?: number;
  /** Default 30,000. */
  ackTimeoutMs?: number;
  /** Waits between tries (default [1000, 5000]: 3 tries). */
  retryDelaysMs?: number[];
  /** Where a new processor starts (default "end"). */
  start?: "end" | "beginning" | { afterSeq: number };
  /** Handles one delivery; throw to fail it (TerminalError: no more tries). */
  run(ctx: DeliveryContext): Promise<void> | void;
}

/** A plugin defined in code (S2). Collections, actions, schedules and pulses take manifest form for now. */
export interface PluginDefinition {
  name: string;
  version?: string;
  events?: Record<string, EventDefinition>;
  processors?: Record<string, ProcessorDefinition>;
  /** Other manifest parts, as in the manifest's JSON form. */
  manifest?: Omit<MessageInitShape<typeof PluginManifestSchema>, "name" | "version" | "events" | "processors">;
}

/** Declares a plugin (identity; gives type checking). */
export function definePlugin(definition: PluginDefinition): PluginDefinition {
  return definition;
}

/** The manifest a plugin registers: everything but the code. */
export function manifestOf(p: PluginDefinition): MessageInitShape<typeof PluginManifestSchema> {
  const processors = Object.fromEntries(
    Object.entries(p.processors ?? {}).map(([name, d]) => [
      name,
      {
        on: d.on === undefined ? [] : Array.isArray(d.on) ? d.on : [d.on],
        where: d.where,
        key: d.key ?? "",
        concurrency: d.concurrency ?? 0,
        ackTimeoutMs: d.ackTimeoutMs ?? 0,
        retryDelaysMs: d.retryDelaysMs ?? [],
        start: startOf(d.start),
      },
    ]),
  );
  const rest = (p.manifest ?? {}) as Record<string, unknown>;
  return { ...rest, name: p.name, version: p.version ?? "", events: p.events ?? {}, processors } as MessageInitShape<typeof PluginManifestSchema>;
}

function startOf(start: ProcessorDefinition["start"]) {
  if (start === undefined || start === "end") return { position: { case: "end" as const, value: true } };
  if (start === "beginning") return { position: { case: "beginning" as const, value: true } };
  return { position: { case: "afterSeq" as const, value: BigInt(start.afterSeq) } };
}
