import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { INVALID_SPAN_CONTEXT, trace, type Span } from "@opentelemetry/api";
import { inHandlerSpan, SpanKind } from "./tracing.js";
import type { ChronologClient } from "./client.js";
import type { Actor } from "./gen/chronolog/v1/event_pb.js";
import { Outcome, type ActionResultSchema, type Invocation } from "./gen/chronolog/v1/executor_pb.js";
import { jsonProblem } from "./json-check.js";
import type { ActionDefinition, PluginDefinition } from "./plugin.js";
import { CauseWork, cancelledBy, type WorkUnderCause } from "./work.js";
import { handlerError } from "./handler-errors.js";

/** What an action's `run` gets for one invocation. */
export interface ActionContext extends WorkUnderCause {
  /** `plugin.action`. */
  action: string;
  /** The call's whole input, private fields included. */
  input: JsonObject;
  /** The call id: the same for every attempt of the call. */
  callId: string;
  /** 1 for the first run of this call id; more when it runs again. */
  attempt: number;
  /** True when the call ran before (attempt > 1). */
  retry: boolean;
  /** Who the call runs as (undefined: the system); work under it carries this actor. */
  actor: Actor | undefined;
  /**
   * Aborted when the owner cancels the run (the caller cancelled, its
   * deadline or the action's timeout passed), the stream to the owner is
   * lost, or the executor stops. Pass it on to slow work.
   */
  signal: AbortSignal;
  /** Run before this moment (the earlier of the action's timeout and the caller's deadline). */
  deadline: Date | undefined;
  /** Extends the run's timeout by `extendMs` (default: the action's timeout). */
  progress(extendMs?: number): void;
  /**
   * Set when time made the call: the timer, schedule or delay id, the
   * moment the occurrence was due (late calls keep the original moment)
   * and the occurrence id (also `callId`).
   */
  scheduled: { timerId: string; due: Date; occurrenceId: string } | undefined;
  /**
   * Set when a pulse made the call: the pulse (`plugin.pulse`), the index of
   * the interval within its cycle (0-based) and the interval's start (`due`).
   */
  pulse: { pulse: string; interval: number; due: Date } | undefined;
  /** Chain depth of the call: 0 for a call that starts a chain (a pulse, a schedule, a client's call); a delay's call is one deeper than the work that armed it. */
  chainDepth: number;
  /**
   * The run's OpenTelemetry span (`run <action>`, under the owner's span of this attempt), current
   * while `run` runs: spans the application starts meanwhile nest under it. A no-op span when the
   * application registered no tracer provider.
   */
  span: Span;
}

type ActionResultInit = MessageInitShape<typeof ActionResultSchema>;

/**
 * The actions an executor hosts and the invocations running there.
 * `invoke` runs one invocation and sends its ActionResult on the stream it
 * came from; `cancel` aborts a running invocation's signal (CancelInvocation).
 */
export class ActionHost {
  private readonly definitions = new Map<string, ActionDefinition>();
  private readonly running = new Map<string, RunContext>();

  constructor(
    plugins: PluginDefinition[],
    private readonly client: ChronologClient,
  ) {
    for (const plugin of plugins) for (const [name, def] of Object.entries(plugin.actions ?? {})) this.definitions.set(`${plugin.name}.${name}`, def);
  }

  /** The hosted actions, as `plugin.action` (for the hello). */
  names(): string[] {
    return [...this.definitions.keys()];
  }

  /** Aborts the signal of invocation `invocationId` (if it runs here) with `reason`. */
  cancel(invocationId: string, reason: string): void {
    const run = this.running.get(invocationId);
    if (run) CauseWork.cancel(run, cancelledBy(reason));
  }

  /** The result of an invocation cancelled with `reason` while it was held (it never started). */
  cancelledHeld(invocationId: string, reason: string): ActionResultInit {
    return { invocationId, outcome: Outcome.ERROR, error: cancelledBy(reason).message };
  }

  /**
   * Runs one invocation to its end and sends the result with `send`, unless
   * `streamSignal` aborted meanwhile (the owner then runs the call elsewhere).
   * `startedLateMs`: for a held one (hold_ms), how many ms after its hold ended it
   * starts now, reported in the result. Never rejects.
   */
  async invoke(
    invocation: Invocation,
    startedLateMs: number,
    send: (result: ActionResultInit) => void,
    progress: (extendMs: number) => void,
    streamSignal: AbortSignal,
  ): Promise<void> {
    let result: ActionResultInit;
    const ctx = new RunContext(this.client, invocation, streamSignal, progress);
    this.running.set(invocation.invocationId, ctx);
    try {
      const def = this.definitions.get(invocation.action);
      if (!def) throw Object.assign(new Error(`this executor does not host ${invocation.action}`), { name: "TerminalError" });
      const init = {
        name: `run ${invocation.action}`,
        kind: SpanKind.SERVER,
        attributes: { "chronolog.action": invocation.action, "chronolog.call_id": invocation.callId, "chronolog.attempt": invocation.attempt },
      };
      const output: unknown =
        (await inHandlerSpan(invocation, init, (span) => {
          ctx.span = span;
          return def.run(ctx, ctx.input);
        })) ?? {};
      if (typeof output !== "object" || output === null || Array.isArray(output))
        throw new Error(`${invocation.action} returned ${Array.isArray(output) ? "an array" : typeof output}: an action's output must be a JSON object`);
      assertJson(invocation.action, output);
      result = { invocationId: invocation.invocationId, outcome: Outcome.OK, output: output as JsonObject, startedLateMs };
    } catch (e) {
      const terminal = e instanceof Error && e.name === "TerminalError";
      result = {
        invocationId: invocation.invocationId,
        outcome: terminal ? Outcome.TERMINAL_ERROR : Outcome.ERROR,
        error: handlerError(e),
        startedLateMs,
      };
    } finally {
      this.running.delete(invocation.invocationId);
      CauseWork.end(ctx);
    }
    if (!streamSignal.aborted) send(result);
  }
}

/**
 * Throws a terminal error when `output` is not plain JSON (a BigInt, NaN, undefined, a Date, a
 * cycle, ...: see {@link jsonProblem}): it could not be sent as it is (protobuf would alter it),
 * and the same run would return it again.
 */
function assertJson(action: string, output: object): void {
  const problem = jsonProblem(output, "output");
  if (problem) throw Object.assign(new Error(`${action} returned an output that is not JSON: ${problem}`), { name: "TerminalError" });
}

/** What `run` gets for one invocation; its `signal` is made when first read (see {@link CauseWork}). */
class RunContext extends CauseWork implements ActionContext {
  readonly action: string;
  readonly input: JsonObject;
  readonly callId: string;
  readonly attempt: number;
  readonly retry: boolean;
  readonly actor: Actor | undefined;
  readonly deadline: Date | undefined;
  readonly scheduled: ActionContext["scheduled"];
  readonly pulse: ActionContext["pulse"];
  readonly chainDepth: number;
  readonly #progress: (extendMs: number) => void;
  span: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

  constructor(client: ChronologClient, invocation: Invocation, streamSignal: AbortSignal, progress: (extendMs: number) => void) {
    super(client, invocation.causeEventId || invocation.callId, streamSignal);
    this.action = invocation.action;
    this.input = (invocation.input ?? {}) as JsonObject;
    this.callId = invocation.callId;
    this.attempt = invocation.attempt;
    this.retry = invocation.attempt > 1;
    this.actor = invocation.actor;
    this.deadline = invocation.deadline ? timestampDate(invocation.deadline) : undefined;
    const { scheduled, pulse } = invocation;
    this.scheduled = scheduled && {
      timerId: scheduled.timerId,
      due: scheduled.due ? timestampDate(scheduled.due) : new Date(0),
      occurrenceId: scheduled.occurrenceId,
    };
    this.pulse = pulse && { pulse: pulse.pulse, interval: pulse.interval, due: pulse.due ? timestampDate(pulse.due) : new Date(0) };
    this.chainDepth = invocation.chainDepth;
    this.#progress = progress;
  }

  get progress(): ActionContext["progress"] {
    return (extendMs = 0) => this.#progress(extendMs);
  }
}
