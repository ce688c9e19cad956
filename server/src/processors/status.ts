import type { RegisteredPlugin } from "../plugins/manifest.js";
import type { RecentFigures } from "../recent-percentiles.js";
import type { StoredCursors } from "../store/cursors.js";
import { compileProcessor } from "./declaration.js";
import type { ProcessorEngine } from "./engine.js";

/** A processor's state as ListProcessors shows it (seqs and counts as numbers). */
export interface ProcessorStatus {
  name: string;
  /** Every event at or below it is finished. */
  ackFloor: number;
  /** The highest seq read from the log. */
  delivered: number;
  /** The log's head minus the ack floor. */
  lag: number;
  inFlight: number;
  /** Retries since the owner started. */
  retries: number;
  /** Failed deliveries on record. */
  failures: number;
  paused: boolean;
  /** Its flow limits in a few words ("" without any). */
  limits: string;
  /** Deliveries that waited for a rate token since the owner started, the ms they waited, and the events waiting now. */
  rateWaits: number;
  rateWaitMs: number;
  rateWaiting: number;
  /** Events in debounced bursts now; debounced deliveries made since the owner started, and the events they stood for. */
  debounceHeld: number;
  debounceDeliveries: number;
  debounceEvents: number;
  /** Its delivery latency over about the last minute; undefined where no engine runs it (a standby). */
  latency?: RecentFigures;
}

/** The state of a running processor: its engine's, the log at `head`, `failures` on record. */
export function engineStatus(engine: ProcessorEngine, head: number, failures: number): ProcessorStatus {
  return {
    name: engine.spec.name,
    ackFloor: engine.floor,
    delivered: engine.deliveredSeq,
    lag: Math.max(0, head - engine.floor),
    inFlight: engine.inFlight,
    retries: engine.retries,
    failures,
    paused: engine.paused,
    limits: engine.spec.limits,
    rateWaits: engine.rate?.rates.waits ?? 0,
    rateWaitMs: Math.round(engine.rate?.rates.waitedMs ?? 0),
    rateWaiting: engine.rate?.waiting ?? 0,
    debounceHeld: engine.debounce?.held ?? 0,
    debounceDeliveries: engine.debounce?.deliveries ?? 0,
    debounceEvents: engine.debounce?.events ?? 0,
    latency: engine.latency.read(),
  };
}

/**
 * The processors `plugins` declare as the store has them, for an owner that runs none (a
 * standby): the saved ack floor and pause (a processor whose cursor the leader did not save yet:
 * its start position), and the failed deliveries on record. What only the leader's running
 * engine knows is left at its floor: delivered is the ack floor, nothing in flight, no retries.
 */
export function storedStatuses(plugins: RegisteredPlugin[], stored: StoredCursors, head: number): ProcessorStatus[] {
  const statuses: ProcessorStatus[] = [];
  for (const plugin of plugins) {
    const manifest = plugin.compiled.manifest;
    for (const [name, declaration] of Object.entries(manifest.processors)) {
      const spec = compileProcessor(manifest.name, name, declaration);
      const saved = stored.cursors.get(spec.name);
      const ackFloor = saved?.ackFloor ?? (spec.start.kind === "beginning" ? 0 : spec.start.kind === "after" ? spec.start.seq : head);
      statuses.push({
        name: spec.name,
        ackFloor,
        delivered: ackFloor,
        lag: Math.max(0, head - ackFloor),
        inFlight: 0,
        retries: 0,
        failures: stored.failures.get(spec.name) ?? 0,
        paused: saved?.paused ?? false,
        limits: spec.limits,
        rateWaits: 0,
        rateWaitMs: 0,
        rateWaiting: 0,
        debounceHeld: 0,
        debounceDeliveries: 0,
        debounceEvents: 0,
      });
    }
  }
  return statuses.sort((a, b) => a.name.localeCompare(b.name));
}
