import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Ack, ActionResult, Hello, SubscribeRequest } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { Outcome } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import type { ActionCalls } from "../actions/index.js";
import { mayUsePlugin, type Principal } from "../auth/principal.js";
import type { Clock } from "../clock.js";
import { fail } from "../errors.js";
import type { Logger } from "../logger.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { Processors } from "../processors/manager.js";
import { jsonProblem } from "../json-limits.js";
import { alwaysTrusted, type Trust } from "../trust.js";
import { ownerVersion, versionsDiffer } from "../version.js";
import { ExecutorSession, maxCredits } from "./session.js";

/** Options of the executor hub; times in ms. */
export interface HubOptions {
  /** How often both sides send heartbeats (default 10,000); silence for 3 intervals closes a session. */
  heartbeatIntervalMs: number;
  /** Credits when the hello gives none. */
  defaultCredits: number;
  /** The largest message the owner reads, bytes (told to executors in the welcome). */
  maxMessageBytes: number;
  /** Nothing is written to executors while it is not trusted (a leader whose lease is too old); default: always. */
  trust?: Trust;
}

/** Checks the pulses a hello lists: the owner's Pulses. */
export interface PulseHosting {
  /** Throws INVALID_ARGUMENT for a pulse nobody declares or whose action the executor does not host. */
  checkHosting(pulses: string[], actions: string[]): void;
}

/**
 * The executor sessions: opens them from a hello, routes their
 * answers (acks to the processors, action results to the action calls),
 * picks a session for each delivery (spreading work: the session
 * with the most free credits), and closes silent ones.
 */
export class ExecutorHub {
  private readonly sessions = new Set<ExecutorSession>();
  private readonly watchdog: NodeJS.Timeout;
  /** Set by {@link stop}: sessions end because the owner is stopping. */
  stopping = false;

  constructor(
    private readonly registry: PluginRegistry,
    private readonly processors: Processors,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: HubOptions,
    private readonly actions: ActionCalls,
    private readonly pulses?: PulseHosting,
  ) {
    this.watchdog = setInterval(() => this.checkLiveness(), options.heartbeatIntervalMs);
    this.watchdog.unref();
  }

  /** When messages may be written to executors (the sessions' streams wait for it). */
  get trust(): Trust {
    return this.options.trust ?? alwaysTrusted;
  }

  /** Connected sessions. */
  list(): ExecutorSession[] {
    return [...this.sessions];
  }

  /**
   * Opens a session from a hello: registers the plugins it carries, checks
   * that every processor, action and pulse it hosts is declared, and that it
   * hosts the action of every pulse it hosts (INVALID_ARGUMENT names the
   * unknown one). Needs the executor or admin role (PERMISSION_DENIED).
   */
  async open(hello: Hello, principal: Principal): Promise<ExecutorSession> {
    if (principal.role === "client")
      fail("permission_denied", `principal ${principal.name} (role client) may not subscribe as an executor; the executor role is needed`);
    if (hello.executor === "") fail("bad_request", "hello.executor is required", [{ field: "hello.executor", description: "required" }]);
    checkPluginScope(hello, principal);
    let changed = false;
    for (const manifest of hello.plugins) changed = (await this.registry.register(manifest)).changed || changed;
    if (changed) this.warnUndeclared(hello.executor);
    for (const name of hello.processors) {
      if (!this.processors.has(name))
        fail("bad_request", `unknown processor ${JSON.stringify(name)}: no plugin declares it (use plugin.processor)`, [
          { field: "hello.processors", description: `unknown processor ${name}` },
        ]);
    }
    for (const name of hello.actions) {
      if (!this.actions.has(name))
        fail("bad_request", `unknown action ${JSON.stringify(name)}: no plugin declares it (use plugin.action)`, [
          { field: "hello.actions", description: `unknown action ${name}` },
        ]);
    }
    if (hello.pulses.length > 0) {
      if (!this.pulses)
        fail("bad_request", `unknown pulse ${JSON.stringify(hello.pulses[0])}: this owner runs no pulses`, [
          { field: "hello.pulses", description: "pulses not served" },
        ]);
      this.pulses.checkHosting(hello.pulses, hello.actions);
    }
    const asked = hello.credits || this.options.defaultCredits;
    const session = new ExecutorSession(
      {
        executor: hello.executor,
        instanceId: hello.instanceId,
        processors: hello.processors,
        actions: hello.actions,
        pulses: hello.pulses,
        credits: Math.min(asked, maxCredits),
        batches: hello.batches,
        invocationBatches: hello.invocationBatches,
        holds: hello.holds,
        dataJson: hello.dataJson,
        sdk: hello.sdk,
        sdkVersion: hello.sdkVersion,
      },
      principal,
      this.clock.now(),
    );
    this.sessions.add(session);
    session.send({
      message: {
        case: "welcome",
        value: {
          sessionId: session.id,
          heartbeatIntervalMs: this.options.heartbeatIntervalMs,
          actionResultBatches: true,
          maxMessageBytes: this.options.maxMessageBytes,
          ownerVersion,
        },
      },
    });
    if (asked > maxCredits)
      this.notice(session, "CREDITS_CLAMPED", "", `hello.credits ${asked} is over the most a session holds (${maxCredits}): the session has ${maxCredits}`);
    this.logger.info(
      {
        session: session.id,
        executor: hello.executor,
        sdk: hello.sdk,
        sdkVersion: hello.sdkVersion,
        processors: hello.processors,
        actions: hello.actions,
        pulses: hello.pulses,
        credits: session.credits,
      },
      "executor connected",
    );
    this.warnVersion(session, hello);
    this.pump(session);
    return session;
  }

  /**
   * Warns when the SDK version a hello gives differs from this owner's in its major or minor
   * number (see {@link versionsDiffer}); a hello that gives none (an executor written without an
   * SDK, or an older SDK) is not warned about.
   */
  private warnVersion(session: ExecutorSession, hello: Hello): void {
    if (hello.sdkVersion === "" || !versionsDiffer(hello.sdkVersion)) return;
    const sdk = hello.sdk === "" ? "an SDK" : `the ${hello.sdk} SDK`;
    this.logger.warn(
      { session: session.id, executor: hello.executor, sdk: hello.sdk, sdkVersion: hello.sdkVersion, ownerVersion },
      `executor ${hello.executor} runs ${sdk} ${hello.sdkVersion}, this owner is ${ownerVersion}: their major or minor versions differ, so one may send what the other does not understand; upgrade the SDK and the owner together`,
    );
  }

  /**
   * After a hello registered its manifests: warns about each connected executor that hosts a
   * processor or action no longer declared (executors of one plugin carrying different
   * manifests: the last hello's wins, and the others' work is refused as undeclared).
   */
  private warnUndeclared(newcomer: string): void {
    for (const s of this.sessions) {
      const undeclared = [...[...s.processors].filter((p) => !this.processors.has(p)), ...[...s.actions].filter((a) => !this.actions.has(a))];
      if (undeclared.length === 0) continue;
      this.logger.warn(
        { executor: newcomer, hostedBy: s.hosting.executor, session: s.id, undeclared },
        `executor ${newcomer}'s hello changed a plugin's manifest: ${undeclared.join(", ")}, hosted by connected executor ${s.hosting.executor}, no longer declared (executors of one plugin must carry the same manifest; the last hello wins)`,
      );
    }
  }

  /** Handles one message from an executor after its hello. */
  handle(session: ExecutorSession, request: SubscribeRequest): void {
    session.lastSeenMs = this.clock.now();
    const m = request.message;
    switch (m.case) {
      case "ack":
        this.ack(session, m.value, performance.now());
        this.pump(session);
        return;
      case "acks": {
        const at = performance.now(); // one reading for the batch: its acks arrived together
        for (const ack of m.value.acks) this.ack(session, ack, at);
        this.pump(session);
        return;
      }
      case "actionResult":
        this.actionResult(session, m.value);
        this.pump(session);
        return;
      case "actionResults":
        for (const r of m.value.results) this.actionResult(session, r);
        this.pump(session);
        return;
      case "progress":
        if (!this.processors.progress(session, m.value.workId, m.value.extendMs) && !this.actions.progress(session, m.value.workId, m.value.extendMs)) {
          this.notice(session, "UNKNOWN_DELIVERY", m.value.workId, "progress for a delivery or invocation not in flight on this session: ignored");
        }
        return;
      case "credit": {
        const clamped = session.addCredits(m.value.credits);
        if (clamped > 0)
          this.notice(
            session,
            "CREDITS_CLAMPED",
            "",
            `credit of ${m.value.credits} would take the session over the most it holds (${maxCredits}): ${clamped} ignored, the session has ${session.credits}`,
          );
        this.pump(session);
        return;
      }
      case "heartbeat":
        return;
      case "stopping":
        if (session.stopping) return;
        session.stopping = true;
        this.logger.info(
          { session: session.id, executor: session.hosting.executor, inFlight: session.live, graceMs: m.value.graceMs },
          `executor ${session.hosting.executor} is stopping: it gets no more work, and finishes the ${session.live} deliveries and calls it holds`,
        );
        session.send({ message: { case: "stopping", value: { graceMs: 0 } } }); // after every delivery and invocation queued for it
        return;
      case "hello":
        this.notice(session, "DUPLICATE_HELLO", "", "hello may be sent once, first: ignored");
        return;
      default:
        this.notice(session, "UNSUPPORTED", "", `message ${m.case ?? "(empty)"} is not supported yet: ignored`);
    }
  }

  private ack(session: ExecutorSession, ack: Ack, at: number): void {
    const ok = ack.outcome === Outcome.OK || ack.outcome === Outcome.UNSPECIFIED;
    const verdict = this.processors.ack(session, ack.deliveryId, ok, ack.error, ack.outcome === Outcome.TERMINAL_ERROR, at);
    if (verdict === "stale")
      this.notice(
        session,
        "STALE_ACK",
        ack.deliveryId,
        "ack for a delivery whose event already ended (finished, or failed after its tries) or that was answered already: ignored",
      );
    if (verdict === "unknown") this.notice(session, "UNKNOWN_DELIVERY", ack.deliveryId, "ack for a delivery this session never received: ignored");
  }

  /**
   * An invocation's result. An OK output nested deeper than the owner takes (maxJsonDepth: no
   * binary client could read the call's `action.completed` back) ends the call failed instead,
   * with an INVALID_OUTPUT notice to the executor.
   */
  private actionResult(session: ExecutorSession, r: ActionResult): void {
    let ok = r.outcome === Outcome.OK || r.outcome === Outcome.UNSPECIFIED;
    const output = r.output ?? {};
    const problem = ok ? jsonProblem(output, "output") : undefined;
    if (problem) ok = false;
    const verdict = this.actions.result(session, r.invocationId, {
      ok,
      output: problem ? {} : output,
      error: problem ?? r.error,
      terminal: r.outcome === Outcome.TERMINAL_ERROR,
      startedLateMs: r.startedLateMs,
    });
    if (problem && verdict === "accepted") this.notice(session, "INVALID_OUTPUT", r.invocationId, `${problem}: the call failed`);
    if (verdict === "stale")
      this.notice(
        session,
        "STALE_RESULT",
        r.invocationId,
        "result for an invocation whose call already ended (failed after its timeout and grace) or that was answered already: ignored",
      );
    if (verdict === "unknown") this.notice(session, "UNKNOWN_INVOCATION", r.invocationId, "result for an invocation this session never received: ignored");
  }

  /** Ends a session: its deliveries and invocations go to other executors as retries. Idempotent. */
  close(session: ExecutorSession, reason: string): void {
    if (session.closed) return;
    session.closed = true;
    this.sessions.delete(session);
    session.outbox.end();
    this.processors.sessionGone(session);
    this.actions.sessionGone(session);
    this.logger.info({ session: session.id, executor: session.hosting.executor, reason }, session.stopping ? "executor stopped" : "executor disconnected");
  }

  /** The session hosting `processor` with the most free credits, or undefined. */
  pickFor(processor: string): ExecutorSession | undefined {
    let best: ExecutorSession | undefined;
    for (const s of this.sessions) if (s.processors.has(processor) && s.free > 0 && (!best || s.free > best.free)) best = s;
    return best;
  }

  /**
   * Reserves a session hosting `processor` for a delivery tried alone: the open, unreserved one
   * with the least work in flight the owner waits for. It takes no new work until {@link release}d.
   */
  reserveFor(processor: string): ExecutorSession | undefined {
    let best: ExecutorSession | undefined;
    for (const s of this.sessions) if (s.processors.has(processor) && !s.reserved && !s.closed && !s.stopping && (!best || s.live < best.live)) best = s;
    if (best) best.reserved = true;
    return best;
  }

  /** Ends a session's reservation; its free credits are offered (on the next microtask: the caller is mid-change). */
  release(session: ExecutorSession): void {
    session.reserved = false;
    if (!session.closed) queueMicrotask(() => this.pump(session));
  }

  /** Closes every session (owner shutdown). */
  stop(): void {
    this.stopping = true;
    clearInterval(this.watchdog);
    for (const s of [...this.sessions]) this.close(s, "owner stopping");
  }

  /** Offers a session's free credits to deliveries, then to calls waiting for a host. */
  private pump(session: ExecutorSession): void {
    this.processors.pumpFor(session);
    this.actions.pumpFor(session);
  }

  private notice(session: ExecutorSession, reason: string, workId: string, message: string): void {
    session.send({ message: { case: "notice", value: { reason, workId, message } } });
  }

  private checkLiveness(): void {
    const now = this.clock.now();
    for (const s of [...this.sessions]) {
      if (now - s.lastSeenMs > 3 * this.options.heartbeatIntervalMs) this.close(s, "no heartbeat for 3 intervals");
      else s.send({ message: { case: "heartbeat", value: { at: timestampFromMs(now) } } });
    }
  }
}

/**
 * PERMISSION_DENIED unless `principal` may use every plugin `hello` carries a manifest of or hosts
 * a processor, action or pulse of (its `plugins` patterns): an executor's token cannot
 * register over, or take the work of, a plugin it was not given.
 */
function checkPluginScope(hello: Hello, principal: Principal): void {
  const hosted = [...hello.processors, ...hello.actions, ...hello.pulses].map((name) => name.split(".")[0]);
  for (const plugin of [...hello.plugins.map((m) => m.name), ...hosted]) {
    if (!mayUsePlugin(principal, plugin)) {
      fail(
        "permission_denied",
        `principal ${principal.name} (role ${principal.role}) may not register or host plugin ${JSON.stringify(plugin)} (its plugins: ${(principal.plugins ?? []).join(", ")})`,
        [],
        { plugin },
      );
    }
  }
}
