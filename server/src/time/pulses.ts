import { ownerCaller, type ActionCalls } from "../actions/index.js";
import { systemPrincipal } from "../auth/principal.js";
import type { Clock, TimerHost } from "../clock.js";
import { ChronologError, fail } from "../errors.js";
import type { ExecutorSession } from "../executors/session.js";
import type { Logger } from "../logger.js";
import type { PluginRegistry } from "../plugins/registry.js";
import { maxTimerDelayMs } from "./clock-arm.js";
import type { LatenessHistogram } from "./lateness.js";
import { intervalIndex, intervalStart, nextBoundary, pulseCallId, pulseSpecs, type PulseSpec } from "./pulse-rules.js";

/** How one interval of a pulse went, for listeners (tests wait on it). */
export interface PulseOutcome {
  /** `plugin.pulse`. */
  pulse: string;
  /** Index of the interval within the cycle, 0-based. */
  interval: number;
  /** Start of the interval (its boundary), ms since the epoch. */
  dueMs: number;
  /** Scope replica: the executor instance called (its instance id, else its session id); "" otherwise. */
  instance: string;
  /**
   * - `completed` / `failed`: the call was made and its action ended so;
   * - `skipped`: the previous call (for this instance, scope replica) was still running;
   * - `missed`: no executor hosting the pulse had a free credit at the boundary.
   * Neither skipped nor missed intervals are made up later.
   */
  status: "completed" | "failed" | "skipped" | "missed";
  /** The call id (completed, failed); "" otherwise. */
  callId: string;
  /** Why it failed, was skipped or missed; "" when completed. */
  error: string;
}

/** What pulses need. */
export interface PulsesDeps {
  registry: PluginRegistry;
  /** The connected executor sessions (the hub's). */
  sessions(): Iterable<ExecutorSession>;
  actions: ActionCalls;
  clock: Clock;
  /** Where the one pulse timer is armed: setTimeout, or a ManualClock in tests. */
  timers: TimerHost;
  /** Lateness of every call made: call time minus the interval's start. */
  lateness?: LatenessHistogram;
  logger: Logger;
}

/**
 * Pulses: the declared pulses of every registered plugin, called at
 * their interval boundaries. Nothing is stored: boundaries are a function of
 * the clock (pulse-rules.ts), so there is nothing to restore at start.
 *
 * One timer on the TimerHost is armed for the earliest next boundary of any
 * pulse (clamped to 2^31−1 ms; a ring before it re-arms), never a polling
 * loop. When it rings, each pulse whose current interval started after the
 * last one it handled gets that interval (only the current one: intervals the
 * owner slept through, or that passed while it was down, are missed):
 *
 * - scope **component**: one call, on the session hosting the pulse with the
 *   most free credits; `missed` when none has a free credit (none hosts it,
 *   or all are busy); `skipped` when the pulse's previous call still runs.
 * - scope **replica**: one call per connected session hosting the pulse, on
 *   that session; `skipped` for a session whose previous call still runs;
 *   `missed` when no session hosts it.
 *
 * Each call goes through ActionCalls as the system, with call id
 * H(pulse, interval start[, instance]) and `pulse` = (name, interval index,
 * interval start) on its Invocation; it starts a chain (depth 0). It is
 * recorded like any call (`action.started` ... unless `record: false`).
 *
 * Failure semantics: a call that fails (the action's error, its timeout, the
 * executor gone) is not tried again: the next interval is the next chance,
 * and the action selects its work by state (seed: "the operation selects by
 * state"). A call id repeated (the same interval called again, e.g. by an
 * owner restarted on the same data within one interval) is answered from the
 * log. Owner stop: the timer is disarmed and calls still running end
 * with the action machinery's stop; nothing is published after stop.
 */
export class Pulses {
  private specs = new Map<string, PulseSpec>();
  /** Per pulse: start of the last interval handled (or seen running when the pulse became known). */
  private readonly lastStart = new Map<string, number>();
  /** Calls running: the pulse name (component) or `name\ninstance` (replica). */
  private readonly running = new Set<string>();
  private readonly listeners: ((outcome: PulseOutcome) => void)[] = [];
  private handle: unknown = null;
  private stopped = true;
  /** The boundary the timer is armed for (ms), or null when idle. */
  armedFor: number | null = null;

  constructor(private readonly deps: PulsesDeps) {}

  /** Reads the declared pulses and arms the clock (call once serving). */
  start(): void {
    this.stopped = false;
    this.sync();
  }

  /**
   * Re-reads the declared pulses from the registry (after a registration) and re-arms. A
   * pulse new or changed since the last sync counts from its next boundary: the interval
   * already running when it became known is not called.
   */
  sync(): void {
    const now = this.deps.clock.now();
    const specs = new Map<string, PulseSpec>();
    for (const plugin of this.deps.registry.list()) for (const spec of pulseSpecs(plugin.compiled.manifest)) specs.set(spec.name, spec);
    for (const [name, spec] of specs) {
      const before = this.specs.get(name);
      if (!before || before.intervalMs !== spec.intervalMs || !this.lastStart.has(name)) this.lastStart.set(name, intervalStart(spec, now));
    }
    for (const name of this.lastStart.keys()) if (!specs.has(name)) this.lastStart.delete(name);
    this.specs = specs;
    if (!this.stopped) this.arm();
  }

  /** Disarms for good (owner shutdown); nothing more is called or published. */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  /** The declared pulse `plugin.pulse`, or undefined. */
  get(name: string): PulseSpec | undefined {
    return this.specs.get(name);
  }

  /** Calls `listener` for every interval handled: a call's end, a skip or a miss. */
  onPulse(listener: (outcome: PulseOutcome) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Checks the pulses an executor's hello lists: each must be declared (INVALID_ARGUMENT
   * "unknown pulse", like unknown processors) and its action hosted by the same executor
   * (`hello.actions`), since the pulse's calls run there. Throws on the first problem.
   */
  checkHosting(pulses: string[], actions: string[]): void {
    for (const name of pulses) {
      const spec = this.specs.get(name);
      if (!spec)
        fail("bad_request", `unknown pulse ${JSON.stringify(name)}: no plugin declares it (use plugin.pulse)`, [
          { field: "hello.pulses", description: `unknown pulse ${name}` },
        ]);
      if (!actions.includes(spec.action)) {
        fail("bad_request", `pulse ${name} calls ${spec.action}, which this executor does not host: list it in hello.actions`, [
          { field: "hello.pulses", description: `${name} needs action ${spec.action}` },
        ]);
      }
    }
  }

  private arm(): void {
    this.disarm();
    if (this.stopped || this.specs.size === 0) return;
    const now = this.deps.clock.now();
    let next = Infinity;
    for (const spec of this.specs.values()) next = Math.min(next, nextBoundary(spec, now));
    this.armedFor = next;
    this.handle = this.deps.timers.setTimer(() => this.onRing(), Math.min(next - now, maxTimerDelayMs));
  }

  private disarm(): void {
    if (this.handle !== null) this.deps.timers.clearTimer(this.handle);
    this.handle = null;
    this.armedFor = null;
  }

  /** A ring: every pulse whose current interval is new gets it; then the clock re-arms (a ring before any boundary just re-arms). */
  private onRing(): void {
    this.handle = null;
    if (this.stopped) return;
    const now = this.deps.clock.now();
    for (const spec of this.specs.values()) {
      const start = intervalStart(spec, now);
      if (start <= (this.lastStart.get(spec.name) ?? -Infinity)) continue;
      this.lastStart.set(spec.name, start);
      try {
        this.fire(spec, start);
      } catch (e) {
        this.deps.logger.error({ err: e, pulse: spec.name }, "a pulse's interval could not be handled");
      }
    }
    this.arm();
  }

  /** Handles the interval of `spec` starting at `startMs` (see the class comment). */
  private fire(spec: PulseSpec, startMs: number): void {
    const interval = intervalIndex(spec, startMs);
    const hosts = [...this.deps.sessions()].filter((s) => !s.closed && s.hosting.pulses.includes(spec.name));
    const outcome = (instance: string, status: "skipped" | "missed", error: string) =>
      this.publish({ pulse: spec.name, interval, dueMs: startMs, instance, status, callId: "", error });
    if (spec.scope === "component") {
      if (this.running.has(spec.name)) return outcome("", "skipped", "the previous call is still running");
      if (!hosts.some((s) => s.free > 0 && s.actions.has(spec.action)))
        return outcome("", "missed", hosts.length === 0 ? "no executor hosts it" : "every executor hosting it is busy");
      const eligible = (s: ExecutorSession) => s.hosting.pulses.includes(spec.name);
      return this.call(spec, startMs, interval, spec.name, "", eligible);
    }
    if (hosts.length === 0) return outcome("", "missed", "no executor hosts it");
    for (const session of hosts) {
      const instance = session.hosting.instanceId || session.id;
      const key = `${spec.name}\n${instance}`;
      if (this.running.has(key)) outcome(instance, "skipped", "the previous call is still running");
      else if (session.free <= 0 || !session.actions.has(spec.action)) outcome(instance, "missed", "the executor is busy");
      else this.call(spec, startMs, interval, key, instance, (s) => s === session);
    }
  }

  /** Makes one call for an interval; `key` is held in `running` until it ends. */
  private call(spec: PulseSpec, startMs: number, interval: number, key: string, instance: string, eligible: (s: ExecutorSession) => boolean): void {
    const { actions, clock, lateness, logger } = this.deps;
    const callId = pulseCallId(spec.name, startMs, instance);
    this.running.add(key);
    lateness?.record(clock.now() - startMs);
    const ended = (status: "completed" | "failed", error: string) => {
      this.running.delete(key);
      if (status === "failed" && !this.stopped) logger.warn({ pulse: spec.name, interval, instance, call: callId, error }, "a pulse's call failed");
      if (!this.stopped) this.publish({ pulse: spec.name, interval, dueMs: startMs, instance, status, callId, error });
    };
    actions
      .call(
        { action: spec.action, input: {}, callId, cause: null, actor: undefined, pulse: { pulse: spec.name, interval, dueMs: startMs, eligible } },
        systemPrincipal,
        ownerCaller(),
      )
      .then(
        () => ended("completed", ""),
        (e) => ended("failed", ChronologError.from(e).message),
      );
  }

  private publish(outcome: PulseOutcome): void {
    if (outcome.status === "skipped" || outcome.status === "missed") this.deps.logger.debug(outcome, `pulse interval ${outcome.status}`);
    for (const listener of this.listeners) listener(outcome);
  }
}
