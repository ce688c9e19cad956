import type { PluginManifest } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { fail } from "../errors.js";
import type { EventRecord } from "../store/events.js";
import { allows, canRead, mayUsePlugin, type Principal } from "./principal.js";

/**
 * What a principal may make of one event: `read` it; not know it is there (`hidden`: another
 * space, as for documents and timers); or know it is there but not read it (`withheld`: its
 * type is one the principal may not read).
 */
export type ReadVerdict = "read" | "hidden" | "withheld";

/** What the read rule needs from the registered plugins (the owner's PluginRegistry). */
export interface ReadDeclarations {
  /** The plugin that declares event type `type`, if any. */
  eventType(type: string): { plugin: string } | undefined;
  /** The collection `name`, if declared (its change events are `<name>.created|updated|deleted`). */
  collection(name: string): object | undefined;
  /** Plugin `name`'s current manifest, if registered. */
  manifestOf(name: string): PluginManifest | undefined;
}

/**
 * Who may read events of one type, besides admins: everyone reaching the event's space (`any`),
 * admins only (`admins`), or the executors that may host plugin `plugin` and the principals its
 * `read` list names.
 */
type Readers = "any" | "admins" | { plugin: string; read: readonly string[] };

const changeSuffixes = [".created", ".updated", ".deleted"];

/**
 * The one rule of who may read which event, for every read of the log (ReadLog, GetEvent, Watch,
 * and so the console and the cause chains it follows): first the space ({@link canRead}), then
 * the type.
 *
 * - A plugin's event type without `read` is read by every principal reaching the event's space
 *   (as collection change events are); with `read`, by admins, the executors that may host the
 *   plugin (their `plugins` patterns) and the principals it names (`*`, `role:<role>`, a name).
 * - The owner's own events about a plugin's work, `processor.*` (of its processor) and
 *   `action.*` and `timer.*` (of its action), are read by admins, the executors that may host the
 *   plugin and the principals the processor's or action's `read` names. A `processor.failed`
 *   also needs its failed event's type to be readable: it carries that event.
 * - `maintenance.sql`, and events of types no plugin declares (any more), by admins only.
 */
export class ReadAccess {
  constructor(private readonly declarations: ReadDeclarations) {}

  /** What `principal` may make of `event`. */
  verdict(principal: Principal, event: EventRecord): ReadVerdict {
    if (!canRead(principal, event)) return "hidden";
    if (principal.role === "admin") return "read";
    if (!this.mayReadType(principal, event.type, event.data)) return "withheld";
    if (event.type === "processor.failed") {
      const failed = event.data.event as { type?: unknown; data?: unknown } | undefined;
      if (typeof failed?.type === "string" && !this.mayReadType(principal, failed.type, asData(failed.data))) return "withheld";
    }
    return "read";
  }

  /** True when `principal` may read `event` (ReadLog and Watch leave the others out, their seqs still scanned). */
  mayRead(principal: Principal, event: EventRecord): boolean {
    return this.verdict(principal, event) === "read";
  }

  /**
   * `event` (found by `id`) when `principal` may read it: NOT_FOUND when it is missing or in a
   * space the principal does not reach (as a missing one), PERMISSION_DENIED when its type is
   * withheld; that error names the type and the event's cause (metadata `type`, `cause`), so a
   * cause chain shows the link as withheld and goes on above it, without its content.
   */
  readable(principal: Principal, event: EventRecord | undefined, id: string): EventRecord {
    const verdict = event ? this.verdict(principal, event) : "hidden";
    if (!event || verdict === "hidden") fail("not_found", `no event with id ${JSON.stringify(id)}`);
    if (verdict === "withheld")
      fail("permission_denied", `principal ${principal.name} may not read event ${JSON.stringify(id)}: events of type ${event.type} are withheld from it`, [], {
        type: event.type,
        cause: event.cause,
      });
    return event;
  }

  /**
   * True when `principal` may read the work of action `action` (`plugin.name`) as its
   * `action.*` and `timer.*` events are read: admins, the executors that may host its plugin,
   * the principals its `read` names. A timer's input and its occurrences' work follow it
   * (GetTimer, ListTimers), so a timer shows no more than its events do. The space is the
   * caller's to check ({@link canRead}).
   */
  mayReadActionWork(principal: Principal, action: string): boolean {
    return principal.role === "admin" || admits(principal, this.workReaders(action, "actions"));
  }

  /**
   * True when `principal` sees action `action`'s `private_fields` in the inputs it may read
   * (a timer's): admins, and the executors that may host its plugin, which are given the
   * whole input when they run a call. Others read an input as `action.started` records it,
   * without them.
   */
  readsPrivateInput(principal: Principal, action: string): boolean {
    if (principal.role === "admin") return true;
    const readers = this.workReaders(action, "actions");
    return typeof readers === "object" && principal.role === "executor" && mayUsePlugin(principal, readers.plugin);
  }

  private mayReadType(principal: Principal, type: string, data: Record<string, unknown>): boolean {
    return admits(principal, this.readersOf(type, data));
  }

  private readersOf(type: string, data: Record<string, unknown>): Readers {
    const declared = this.declarations.eventType(type);
    if (declared) {
      const read = this.declarations.manifestOf(declared.plugin)?.events[type]?.read ?? [];
      return read.length === 0 ? "any" : { plugin: declared.plugin, read };
    }
    if (type.startsWith("processor.")) return this.workReaders(data.processor, "processors");
    if (type.startsWith("action.") || type.startsWith("timer.")) return this.workReaders(data.action, "actions");
    const suffix = changeSuffixes.find((s) => type.endsWith(s));
    if (suffix && this.declarations.collection(type.slice(0, -suffix.length))) return "any";
    return "admins";
  }

  /** The readers of the events about processor or action `name` (`plugin.name`): its plugin's, and its own `read`. */
  private workReaders(name: unknown, kind: "processors" | "actions"): Readers {
    if (typeof name !== "string") return "admins";
    const dot = name.indexOf(".");
    if (dot <= 0) return "admins";
    const plugin = name.slice(0, dot);
    const read = this.declarations.manifestOf(plugin)?.[kind][name.slice(dot + 1)]?.read ?? [];
    return { plugin, read };
  }
}

/** True when `readers` admit `principal` (not an admin: admins read everything before this is asked). */
function admits(principal: Principal, readers: Readers): boolean {
  if (readers === "any") return true;
  if (readers === "admins") return false;
  return (principal.role === "executor" && mayUsePlugin(principal, readers.plugin)) || allows(readers.read, principal);
}

function asData(data: unknown): Record<string, unknown> {
  return typeof data === "object" && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
}
