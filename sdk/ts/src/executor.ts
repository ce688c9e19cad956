import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { createClient as createRpcClient, type Transport } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import { ActionHost } from "./action.js";
import { ChronologClient } from "./client.js";
import { createTransport, type ClientOptions } from "./transport.js";
import { deliveryAttributes, inHandlerSpan, isPromise, SpanKind } from "./tracing.js";
import { ExecutorService, Outcome, type Delivery, type Invocation, type SubscribeResponse } from "./gen/chronolog/v1/executor_pb.js";
import { PluginManifestSchema, type PluginManifest } from "./gen/chronolog/v1/plugin_pb.js";
import { manifestOf, type PluginDefinition } from "./plugin.js";
import { DeliveryRun } from "./delivery.js";
import { HoldQueue } from "./hold-queue.js";
import { requestQueue } from "./request-queue.js";
import { ownerFailureOf } from "./owner-failures.js";
import { ownersOf } from "./owners.js";
import { sleep } from "./sleep.js";
import { StreamClock } from "./stream-clock.js";
import { isFatal, printError } from "./stream-refusals.js";
import { streamSends, type StreamSends } from "./stream-sends.js";
import { sdkName, sdkVersion, versionsDiffer } from "./version.js";
import { CauseWork, cancelledBy } from "./work.js";
import { handlerError, loggedError } from "./handler-errors.js";

export type { ActionContext } from "./action.js";
export type { DeliveryContext } from "./delivery.js";

/**
 * Thrown by a handler to fail without further tries: the owner
 * records `processor.failed` at once. Any other error is retried (3 tries in
 * all by default, each wait longer than the last). From an action it is
 * reported as a terminal failure; the owner never retries actions by itself
 * either way (`action.failed`).
 */
export class TerminalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TerminalError";
  }
}

/** Options of {@link runExecutor} (its reads go to the leader: work under a cause reads what it just wrote). */
export interface ExecutorOptions extends Omit<ClientOptions, "protocol" | "httpVersion" | "reads"> {
  /** The plugins this executor carries; their manifests are registered on hello. */
  plugins: PluginDefinition[];
  /** Executor name shared by replicas (default: the first plugin's name). */
  executor?: string | undefined;
  /** Deliveries and invocations accepted at once (default 16). */
  credits?: number | undefined;
  /**
   * Take calls of time ahead of their moment and start them at it (default true): the owner
   * sends such a call when it makes it (up to its clock's lookahead, 250 ms by default, before
   * the moment) with `hold_ms`, and this executor starts it that long after the owner wrote it
   * (`written_at_ms` mapped onto this clock by the stream's fastest transit: see StreamClock),
   * so neither the owner's pauses nor time the message spent queued make it late. The
   * call holds a credit meanwhile. False: the owner sends it at the moment.
   */
  holds?: boolean | undefined;
  /**
   * Deliveries carry each event's data as JSON text, parsed here into `event.data` (default
   * true: cheaper for the owner and here than a protobuf Struct). False asks for the Struct.
   */
  dataJson?: boolean | undefined;
  /**
   * Called on connection trouble, owner notices and an owner whose version differs from this
   * SDK's in its major or minor number (default: one line on stderr). A refusal for good (see
   * {@link runExecutor}) is reported once, as the owner's `ConnectError`.
   */
  onError?: ((error: unknown) => void) | undefined;
  /**
   * Called with what the executor does (default: one line on stderr, `chronolog executor: ...`):
   * `connected to URL (session S)`, `reconnected to URL after N s (session S)`, and each handler
   * that failed (`plugin.processor failed on event ID (attempt N): message`, `plugin.action failed
   * (call C, attempt N): message`). `() => {}` keeps it quiet.
   */
  onLog?: ((line: string) => void) | undefined;
  /** Longest wait between reconnects in ms (default 5,000). */
  maxBackoffMs?: number | undefined;
}

/** A running executor. */
export interface Executor {
  /**
   * Resolves at the first welcome from the owner. Rejects with the owner's
   * `ConnectError` when the owner refuses the stream for good (see
   * {@link runExecutor}): the executor has then stopped.
   */
  ready: Promise<void>;
  /**
   * Settles when the executor has ended: resolves after {@link stop}, rejects
   * with the owner's `ConnectError` when the owner refused the stream for
   * good, even after an earlier welcome (e.g. a restarted owner that no
   * longer knows the token).
   */
  done: Promise<void>;
  /**
   * Finishes held and running work (up to `graceMs`, default 5,000), then half-closes the stream
   * after the results and acks so far: the owner reads them and ends it, so finished work is
   * never run again (what still runs then, the owner runs again elsewhere).
   */
  stop(graceMs?: number): Promise<void>;
}

/** The most credits Hello can carry (a uint32; the owner clamps what it takes further). */
const maxCredits = 2 ** 32 - 1;

/** How long a new stream waits for the owner's welcome before it is ended and opened again, ms. */
const welcomeTimeoutMs = 10_000;

/**
 * Connects to an owner over the Subscribe stream, hosts the plugins'
 * processors, actions and pulses (every pulse the plugins declare is
 * listed in the hello; its calls arrive as invocations of its action, with
 * `ctx.pulse` set), and reconnects with backoff (250 ms doubling up to
 * `maxBackoffMs`) when the stream breaks. Deliveries that were running when
 * the stream broke are retried by the owner, elsewhere or here.
 *
 * Given several owners (`url`: a comma-separated list or an array), it subscribes to the
 * leader: a standby's refusal sends it to the leader the standby names at once (not reported),
 * and an owner that cannot be reached to the next one (after each owner had its turn, with
 * pauses of 100 ms doubling up to 250 ms), so a new leader is found within its handover; the new
 * leader gets the hello and sends the deliveries (those that ran on the lost stream again).
 *
 * A refusal that retrying cannot cure is not retried: UNAUTHENTICATED (a
 * missing or unknown token), PERMISSION_DENIED (a principal whose role may
 * not subscribe) or INVALID_ARGUMENT or RESOURCE_EXHAUSTED before the welcome
 * (a hello the owner rejects, e.g. a manifest that does not register, or one
 * larger than the owner reads). The executor then reports
 * the owner's error once (`onError`; by default `chronolog executor:
 * UNAUTHENTICATED: unknown bearer token (the executor stopped: not
 * retrying)`), stops, and `ready` and `done` reject with it.
 */
export function runExecutor(options: ExecutorOptions): Executor {
  return new ExecutorRunner(options).start();
}

class ExecutorRunner {
  private readonly transport: Transport;
  private readonly instanceId = randomUUID();
  private readonly manifests: PluginManifest[];
  private readonly handlers = new Map<string, PluginDefinition["processors"] extends infer P ? (P extends Record<string, infer D> ? D : never) : never>();
  private readonly running = new Set<Promise<void>>();
  /** The deliveries running, by delivery id (to cancel them). */
  private readonly deliveries = new Map<string, DeliveryRun>();
  private readonly client: ChronologClient;
  private readonly actions: ActionHost;
  private readonly stopping = new AbortController();
  /**
   * The current stream, null between streams: its held invocations; `closeSends`
   * half-closes it after what is queued; `over` resolves when it ended.
   */
  private current: {
    holds: HoldQueue<Invocation>;
    closeSends: () => void;
    over: Promise<void>;
    /** Tells the owner this executor stops; resolves when the owner answered (nothing more on its way) or the stream ended. */
    stopping: (graceMs: number) => Promise<void>;
  } | null = null;
  /** stop() half-closed the stream: do not reconnect when it ends. */
  private closing = false;
  /** When the last welcomed stream ended (Date.now()), for the reconnect line; undefined before the first. */
  private lostAt: number | undefined;
  /** Settles the current stream's wait for the owner's answer to `stopping`. */
  private stoppingAnswered: () => void = () => {};
  /** The owner version the last welcome gave (checked once each: {@link checkOwnerVersion}). */
  private ownerVersionSeen: string | undefined;
  private resolveReady!: () => void;
  private rejectReady!: (error: unknown) => void;
  /** The owner's refusal for good, once it came (see {@link isFatal}). */

  constructor(private readonly options: ExecutorOptions) {
    const { credits } = options;
    if (credits !== undefined && !(Number.isInteger(credits) && credits >= 0 && credits <= maxCredits))
      throw new RangeError(`credits must be a whole number from 0 to ${maxCredits} (0: the owner's default, 16), got ${credits}`);
    this.transport = createTransport({ ...options, protocol: "grpc", reads: "leader" });
    this.client = new ChronologClient(this.transport);
    this.actions = new ActionHost(options.plugins, this.client);
    this.manifests = options.plugins.map((p) => create(PluginManifestSchema, manifestOf(p)));
    for (const plugin of options.plugins) for (const [name, def] of Object.entries(plugin.processors ?? {})) this.handlers.set(`${plugin.name}.${name}`, def);
  }

  start(): Executor {
    const ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    const done = this.loop();
    // Handled here so that a caller who never awaits them gets no unhandled rejection; awaiting them still throws.
    ready.catch(() => {});
    done.catch(() => {});
    return { ready, done, stop: (graceMs = 5_000) => this.stop(graceMs) };
  }

  /**
   * Opens sessions until stopped, with backoff between them (or, to the leader a standby named or
   * the next owner, the owners' pause); rejects with the owner's refusal for good (see {@link isFatal}).
   */
  private async loop(): Promise<void> {
    const owners = ownersOf(this.transport)!;
    let backoffMs = 250;
    let moves = 0;
    while (!this.stopping.signal.aborted) {
      let welcomed = false;
      let pauseMs: number | undefined;
      try {
        await this.session(() => {
          welcomed = true;
          backoffMs = 250;
          moves = 0;
        });
      } catch (e) {
        if (!this.stopping.signal.aborted) {
          if (isFatal(e, welcomed)) {
            // A bad token, a role that may not subscribe or a hello the owner rejects: retrying cannot help.
            this.report(e, true);
            this.stopping.abort();
            this.rejectReady(e);
            throw e;
          }
          const failure = ownerFailureOf(e);
          if (failure && owners.retries(failure)) pauseMs = owners.pauseMs(++moves);
          if (failure?.kind !== "standby" || failure.leader === undefined) this.report(e);
        }
      }
      if (this.stopping.signal.aborted || this.closing) return;
      await sleep(pauseMs ?? backoffMs, this.stopping.signal);
      if (pauseMs === undefined) backoffMs = Math.min(backoffMs * 2, this.options.maxBackoffMs ?? 5_000);
    }
  }

  /** One stream, from hello to its end. */
  private async session(onWelcome: () => void): Promise<void> {
    const streamEnded = new AbortController();
    const outgoing = requestQueue(streamEnded.signal);
    const sends = streamSends(outgoing.push);
    const abort = AbortSignal.any([this.stopping.signal, streamEnded.signal]);
    setMaxListeners(0, abort); // every run in flight that read ctx.signal listens for the stream's end: no leak warning past 10
    const holds = new HoldQueue<Invocation>((invocation, lateMs) => this.invoke(invocation, lateMs, sends, abort));
    let over!: () => void;
    const overPromise = new Promise<void>((resolve) => (over = resolve));
    let answered!: () => void;
    const stoppingAnswered = new Promise<void>((resolve) => (answered = resolve));
    this.stoppingAnswered = answered;
    this.current = {
      holds,
      closeSends: outgoing.end,
      over: overPromise,
      stopping: (graceMs) => {
        outgoing.push({ message: { case: "stopping", value: { graceMs } } });
        return Promise.race([stoppingAnswered, overPromise]);
      },
    };
    outgoing.push({
      message: {
        case: "hello",
        value: {
          executor: this.options.executor ?? this.options.plugins[0]?.name ?? "executor",
          instanceId: this.instanceId,
          plugins: this.manifests,
          processors: [...this.handlers.keys()],
          actions: this.actions.names(),
          pulses: this.manifests.flatMap((m) => Object.keys(m.pulses).map((name) => `${m.name}.${name}`)),
          credits: this.options.credits ?? 16,
          batches: true,
          invocationBatches: true,
          holds: this.options.holds ?? true,
          dataJson: this.options.dataJson ?? true,
          sdk: sdkName,
          sdkVersion,
        },
      },
    });
    const client = createRpcClient(ExecutorService, this.transport);
    let heartbeat: NodeJS.Timeout | undefined;
    let lastHeardMs = Date.now();
    const clock = new StreamClock();
    let welcomed = false;
    // A connection that never answers (an owner frozen as the stream opened): end the stream and open it again, at the next owner when there are several.
    const owners = ownersOf(this.transport);
    const openedAt = owners?.pick().url;
    const welcomeDeadline = setTimeout(() => {
      if (welcomed) return;
      this.report(new Error(`no welcome from ${openedAt ?? "the owner"} within ${welcomeTimeoutMs / 1000} s: reconnecting`));
      if (owners && openedAt) owners.route(openedAt, { kind: "unreached" });
      streamEnded.abort();
    }, welcomeTimeoutMs);
    try {
      for await (const response of client.subscribe(outgoing.iterable, { signal: abort })) {
        lastHeardMs = Date.now();
        if (response.message.case === "welcome") {
          onWelcome();
          const url = ownersOf(this.transport)?.pick().url ?? "";
          const session = response.message.value.sessionId;
          this.log(
            this.lostAt === undefined
              ? `connected to ${url} (session ${session})`
              : `reconnected to ${url} after ${((Date.now() - this.lostAt) / 1000).toFixed(1)} s (session ${session})`,
          );
          this.lostAt = undefined;
          welcomed = true;
          sends.welcome(response.message.value);
          this.checkOwnerVersion(response.message.value.ownerVersion);
          this.resolveReady();
          clearInterval(heartbeat);
          const intervalMs = response.message.value.heartbeatIntervalMs;
          // Send ours, and treat an owner silent for 3 intervals as gone: end the stream and reconnect.
          heartbeat = setInterval(() => {
            if (Date.now() - lastHeardMs > 3 * intervalMs) streamEnded.abort();
            else outgoing.push({ message: { case: "heartbeat", value: { at: timestampNow() } } });
          }, intervalMs);
        }
        this.handle(response, sends, abort, clock, holds);
      }
    } finally {
      if (welcomed) this.lostAt = Date.now();
      clearTimeout(welcomeDeadline);
      clearInterval(heartbeat);
      streamEnded.abort();
      holds.clear(); // the owner runs them again (they were never started)
      this.current = null;
      over();
    }
  }

  private handle(response: SubscribeResponse, sends: StreamSends, signal: AbortSignal, clock: StreamClock, holds: HoldQueue<Invocation>): void {
    const m = response.message;
    const deliveries = m.case === "delivery" ? [m.value] : m.case === "deliveries" ? m.value.deliveries : [];
    for (const delivery of deliveries) this.deliver(delivery, sends, signal);
    const invocations = m.case === "invocation" ? [m.value] : m.case === "invocations" ? m.value.invocations : [];
    for (const invocation of invocations) {
      // A held one starts hold_ms after the owner wrote it, on this clock; the queue holds it until then.
      if (invocation.holdMs > 0) holds.add(invocation, clock.writtenAt(invocation.writtenAtMs, performance.now()) + invocation.holdMs);
      else this.invoke(invocation, 0, sends, signal);
    }
    if (m.case === "cancelDelivery") {
      const run = this.deliveries.get(m.value.deliveryId);
      if (run) CauseWork.cancel(run, cancelledBy(m.value.reason));
    }
    if (m.case === "cancelInvocation") {
      const { invocationId, reason } = m.value;
      if (holds.remove((i) => i.invocationId === invocationId)) sends.result(this.actions.cancelledHeld(invocationId, reason));
      else this.actions.cancel(invocationId, reason);
    }
    if (m.case === "stopping") this.stoppingAnswered();
    if (m.case === "notice") {
      // An owner older than the stopping message refuses it: it keeps sending until the stream closes.
      if (m.value.reason === "UNSUPPORTED" && m.value.message.startsWith("message stopping ")) this.stoppingAnswered();
      else this.report(new Error(`owner notice ${m.value.reason}: ${m.value.message}`));
    }
  }

  /** Runs `invocation` now (`startedLateMs` after its hold ended) as one of the running jobs. */
  private invoke(invocation: Invocation, startedLateMs: number, sends: StreamSends, signal: AbortSignal): void {
    const progress = (extendMs: number) => sends.push({ message: { case: "progress", value: { workId: invocation.invocationId, extendMs } } });
    const send = (result: Parameters<StreamSends["result"]>[0]) => {
      if (result.outcome !== Outcome.OK) {
        const terminal = result.outcome === Outcome.TERMINAL_ERROR ? ", terminal" : "";
        this.log(`${invocation.action} failed (call ${invocation.callId}, attempt ${invocation.attempt}${terminal}): ${loggedError(result.error ?? "")}`);
      }
      sends.result(result);
    };
    const job = this.actions.invoke(invocation, startedLateMs, send, progress, signal).finally(() => this.running.delete(job));
    this.running.add(job);
  }

  /**
   * Reports (as a notice is) an owner whose version differs from this SDK's in its major or minor
   * number, or that does not say it: once per owner version, not at every reconnect.
   */
  private checkOwnerVersion(ownerVersion: string): void {
    if (ownerVersion === this.ownerVersionSeen) return;
    this.ownerVersionSeen = ownerVersion;
    if (!versionsDiffer(ownerVersion)) return;
    const owner = ownerVersion === "" ? "the owner does not say its version (an older owner)" : `the owner is ${ownerVersion}`;
    this.report(
      new Error(
        `${owner}, this SDK (${sdkName}) is ${sdkVersion}: their major or minor versions differ, so one may send what the other does not understand; upgrade them together`,
      ),
    );
  }

  /** Says what the executor does through `onLog` (default: a line on stderr). */
  private log(line: string): void {
    if (this.options.onLog) this.options.onLog(line);
    else console.error(`chronolog executor: ${line}`);
  }

  /** Reports a connection error or notice through `onError` (default: {@link printError}; `fatal`: the executor stops). */
  private report(error: unknown, fatal = false): void {
    try {
      if (this.options.onError) this.options.onError(error);
      else printError(error, fatal);
    } catch {
      // a failing reporter must not kill the loop
    }
  }

  /**
   * Runs `delivery`'s handler. One that returns no promise (a synchronous handler) is answered in
   * the same turn, with no promise made for it; its ack goes out in the AckBatch of the turn.
   * One that returns a promise counts as running until it settles.
   */
  private deliver(delivery: Delivery, sends: StreamSends, signal: AbortSignal): void {
    const handler = this.handlers.get(delivery.processor);
    const ctx = new DeliveryRun(this.client, delivery, signal, (extendMs) =>
      sends.push({ message: { case: "progress", value: { workId: delivery.deliveryId, extendMs } } }),
    );
    this.deliveries.set(delivery.deliveryId, ctx);
    let result: void | Promise<void>;
    try {
      if (!handler) throw new TerminalError(`no handler for ${delivery.processor}`);
      const event = ctx.event;
      const init = {
        name: `process ${delivery.processor}`,
        kind: SpanKind.CONSUMER,
        attributes: deliveryAttributes(delivery.processor, event.id, event.type, delivery.attempt),
      };
      result = inHandlerSpan(delivery, init, (span) => {
        ctx.span = span;
        return handler.run(ctx);
      });
    } catch (e) {
      this.delivered(delivery, ctx, sends, e);
      return;
    }
    if (!isPromise(result)) {
      this.delivered(delivery, ctx, sends, undefined, true);
      return;
    }
    const job = result.then(
      () => this.delivered(delivery, ctx, sends, undefined, true),
      (e: unknown) => this.delivered(delivery, ctx, sends, e),
    );
    this.running.add(job);
    void job.finally(() => this.running.delete(job));
  }

  /** `delivery`'s handler ended (`ok`, or with `error`): its context ends and its ack is queued. */
  private delivered(delivery: Delivery, ctx: DeliveryRun, sends: StreamSends, error: unknown, ok = false): void {
    if (this.deliveries.get(delivery.deliveryId) === ctx) this.deliveries.delete(delivery.deliveryId);
    CauseWork.end(ctx);
    if (ok) {
      sends.ack({ deliveryId: delivery.deliveryId, outcome: Outcome.OK, error: "" });
      return;
    }
    const outcome = error instanceof TerminalError ? Outcome.TERMINAL_ERROR : Outcome.ERROR;
    const message = handlerError(error);
    this.log(
      `${delivery.processor} failed on event ${delivery.event?.id ?? ""} (attempt ${delivery.attempt}${outcome === Outcome.TERMINAL_ERROR ? ", terminal" : ""}): ${loggedError(message)}`,
    );
    sends.ack({ deliveryId: delivery.deliveryId, outcome, error: message });
  }

  /**
   * Tells the owner this executor stops (it sends no more work, and answers once nothing more is
   * on its way), waits up to `graceMs` for the work it holds and any still on its way to end,
   * then half-closes the stream after the results and acks queued so far: the owner reads them,
   * then ends the stream, so no finished work is run again and the stop is no disconnect. Work
   * still running or held then is run again by the owner (elsewhere). The owner gets
   * {@link closeWaitMs} to end the stream before it is cut.
   */
  private async stop(graceMs: number): Promise<void> {
    let graceOver = false;
    const grace = sleep(graceMs).then(() => (graceOver = true));
    const finished = (async () => {
      await this.current?.stopping(graceMs); // every delivery and invocation sent before the answer has arrived
      // Held invocations start at their moment, then count as running; a run may end while another
      // arrives: until nothing is held or running.
      while (!graceOver && ((this.current?.holds.size ?? 0) > 0 || this.running.size > 0)) {
        await this.current?.holds.drained();
        await Promise.allSettled([...this.running]);
      }
    })();
    await Promise.race([finished, grace]);
    const stream = this.current;
    if (stream) {
      this.closing = true;
      await new Promise((r) => setImmediate(r)); // acks and results are queued on the next turn (see streamSends)
      stream.closeSends();
      await Promise.race([stream.over, sleep(closeWaitMs)]);
    }
    this.stopping.abort();
  }
}

/** How long stop() lets the owner end a half-closed stream before cutting it, ms. */
const closeWaitMs = 2_000;
