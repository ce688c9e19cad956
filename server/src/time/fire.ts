import { notStartedInTime, ownerCaller, type ActionCalls } from "../actions/index.js";
import type { Span } from "@opentelemetry/api";
import { tracing } from "../tracing/tracer.js";
import { endSpan } from "../tracing/messaging.js";
import { inSpan } from "../tracing/trace-context.js";
import { occurrenceSpan } from "../tracing/work.js";
import { systemPrincipal } from "../auth/principal.js";
import type { Clock } from "../clock.js";
import { ChronologError } from "../errors.js";
import { derivedId } from "../log/ids.js";
import type { Logger } from "../logger.js";
import { observeTimerCall, type TimerStages } from "../stages.js";
import type { Committer, Tx } from "../store/committer.js";
import type { OccurrenceRecord, OccurrenceStatements } from "../store/occurrences.js";
import type { ActiveOccurrences, TimerControlStatements } from "../store/timer-control.js";
import type { TimerStatements } from "../store/timers.js";
import type { TimerRecord } from "../store/timer-records.js";
import type { LatenessHistogram } from "./lateness.js";
import { claimDecision, withClaimed, latestStartMs, tooLate } from "./claim-rules.js";
import { occurrenceId } from "./occurrence-ids.js";
import { DueTimersAhead } from "./due-ahead.js";
import type { ClaimReads } from "../store/claim-reads.js";
import { owedWithin } from "./owed.js";

/** What an "allow" overlap policy needs to know of a timer's running occurrences: nothing. */
const noneActive = { running: 0, buffered: 0 };

/** Most timers one ring claims; more due means the clock rings again at once. */
const claimLimit = 1_000;
/**
 * Most timers (and, in the first unit, retries) one claim unit takes (~30-80 µs each): a ring
 * submits as many units as the due timers need, so the committer can commit between them and a
 * call held for its moment is not sent late behind one long unit.
 */
const claimChunk = 32;

/** An occurrence a claim made: called at `sendAtMs`; `mayBuffer`: its timer may have a buffered occurrence (not a delay). */
interface Claimed {
  occurrence: OccurrenceRecord;
  sendAtMs: number;
  mayBuffer: boolean;
}

/** How an occurrence's call ended, or that it was skipped, for listeners (tests wait on it). */
export interface OccurrenceOutcome {
  occurrence: OccurrenceRecord;
  /** `retry_wait`: this call failed and another try is armed for `nextAttemptMs`. */
  status: "completed" | "failed" | "retry_wait" | "skipped";
  /** Call time (skipped: claim time) minus due, ms. */
  latenessMs: number;
  error: string;
  /** The attempt that ended, from 1 (0 when skipped). */
  attempt: number;
  /** `retry_wait`: when the next try is due, ms since the epoch; null otherwise. */
  nextAttemptMs: number | null;
}

/** What firing needs. */
export interface FiringDeps {
  committer: Committer;
  timers: TimerStatements;
  occurrences: OccurrenceStatements;
  /** the occurrences of a timer that have not ended (overlap policy). */
  control: TimerControlStatements;
  actions: ActionCalls;
  clock: Clock;
  lateness: LatenessHistogram;
  /** Where a first call's stages are observed (due → claimed → written → started). */
  stages: TimerStages;
  logger: Logger;
  /** How far ahead of their moment occurrences are claimed and their calls started (ClockArm's lookahead), ms. */
  lookaheadMs: number;
  /** How many timers are due by `nowMs`, counting up to `limit` (read without blocking the event loop). */
  dueCount(nowMs: number, limit: number): Promise<number>;
  /** Told after a commit armed a retry at `dueMs` (re-arms the clock when earlier). */
  changed(dueMs: number): void;
  /** Where a claim's reads are round trips (PostgreSQL): they are read ahead of its batch. */
  claimReads?: ClaimReads;
}

/**
 * Firing: what happens when the clock rings.
 *
 * One committer unit claims every timer due by the commit time plus the
 * lookahead, and every occurrence whose retry is due by then (`retry_wait` →
 * `pending`): per timer it
 * writes the occurrences it owes (by its catch-up policy when it missed moments: owed.ts) as
 * `pending`, or as `skipped` with a `timer.skipped` event when it is later
 * than the timer's `overdue` bound at the commit time (the bound is judged
 * again when the call is about to be made, so a claim recovered after a
 * restart is skipped too if it became too late, and so is a call that found no executor's
 * credit by its bound); an overlap skip of a moment still ahead is not decided at the claim:
 * the timer stays due for a later ring (the run before may end first); it moves recurring timers to their next
 * moment and spends one-shots. After the commit each pending occurrence's
 * action is called through ActionCalls with call id = occurrence id, the
 * timer's actor, and `scheduled` = (timer id, due, occurrence id); its end
 * (completed or failed, attempts, lateness) is written to the occurrence.
 *
 * Lookahead: the claim and the call's start (`action.started`, a host's
 * credit) commit up to `lookaheadMs` before the due moment, and ActionCalls
 * sends the Invocation at the moment itself, so neither commit's fsync makes
 * the call late. Within that window the occurrence is already made: a cancel,
 * unschedule or pause committed then comes too late for it (the same outcome
 * as a cancel that loses the race with the claim). Lateness is the send
 * time minus the due moment.
 *
 * Failure semantics: the claim and the timer's move commit together, so a
 * crash before the claim re-claims the same occurrence (same id) at restart,
 * and a crash after it leaves the occurrence `pending`: {@link recover} calls
 * it again at start with the same call id, which ActionCalls answers from the
 * log if it had completed, or runs again (`action.retried`) otherwise.
 * The action is thus recorded once per occurrence. An owner stopping
 * mid-call leaves it `pending` for the next start.
 *
 * Retries: a call that fails (the action's error, or no executor within
 * the action's timeout) is tried again as the same occurrence, so with the
 * same call id (ActionCalls records `action.retried`): after failed
 * attempt n the occurrence waits in `retry_wait` until commit time +
 * `retryDelaysMs[n-1]`, durably, on the same one armed clock (no second
 * loop); with no entry left, or when the executor marked the error final (a
 * TerminalError, Outcome.TERMINAL_ERROR), it is `failed` for good and
 * `timer.failed` is recorded in the same unit. The next occurrence of a
 * recurring timer comes on its own schedule meanwhile (calls may overlap).
 * The lateness bound decides only whether an occurrence is made at all
 * (its first call); once made, its retries follow `retryDelaysMs` whatever
 * their lateness. Lateness is measured on first calls only.
 */
export class TimerFiring {
  private readonly listeners: ((outcome: OccurrenceOutcome) => void)[] = [];
  private stopped = false;
  /**
   * The timers that may have a buffered occurrence ("buffer one"): those the store held when the
   * owner started (a standby that took over reads them then), and those a claim of this owner
   * buffered since (no other writer makes one). An occurrence's end releases a buffered one only
   * for these (any other has none: no statement); the release answers nothing, so a timer is
   * forgotten only when a claim of it finds none buffered, then or after its own writes.
   */
  private buffering: Set<string> | undefined;

  constructor(private readonly deps: FiringDeps) {}

  /** Calls `listener` whenever an occurrence is skipped or one of its calls ends. */
  onOccurrence(listener: (outcome: OccurrenceOutcome) => void): void {
    this.listeners.push(listener);
  }

  /** One ring of the clock: claims what is due (timers and retries) in units of {@link claimChunk} submitted together, then starts each call. Resolves after the claim. */
  async ring(): Promise<void> {
    if (this.stopped) return;
    const { committer, clock, lookaheadMs } = this.deps;
    const units = Math.max(1, Math.ceil((await this.deps.dueCount(clock.now() + lookaheadMs, claimLimit)) / claimChunk));
    if (this.stopped) return;
    const ahead = this.deps.claimReads && new DueTimersAhead(this.deps.claimReads, this.deps.occurrences, clock, lookaheadMs, claimChunk);
    // Inside a lookahead of 50 ms or more a claim has time to spare: it may wait for a larger commit (Committer.submit).
    const claims = await Promise.all(
      Array.from({ length: units }, (_, k) =>
        committer.submit((tx) => this.claim(tx, k === 0, ahead), {
          deferrable: lookaheadMs >= 50,
          first: true,
          readAhead: ahead && { from: ahead, keys: [String(k)] },
        }),
      ),
    );
    for (const { claimed, skipped } of claims) {
      for (const s of skipped) this.publish(s);
      for (const { occurrence, sendAtMs, mayBuffer } of claimed) void this.call(occurrence, sendAtMs, mayBuffer, occurrence.attempts === 0);
    }
  }

  /** Calls again every occurrence left `pending` by an owner that stopped or crashed (at start); those in `retry_wait` wait for the clock. */
  recover(): number {
    this.buffered();
    const pending = this.deps.occurrences.pending();
    for (const occurrence of pending) void this.call(occurrence, occurrence.attempts === 0 ? occurrence.dueMs : (occurrence.nextAttemptMs ?? undefined)); // a try claimed ahead keeps its moment
    return pending.length;
  }

  /** Claims nothing more; calls still running end as `pending` (owner shutdown). */
  stop(): void {
    this.stopped = true;
  }

  /**
   * A claim unit (see the class comment): up to {@link claimChunk} due timers, and the due retries
   * when `retries`; returns the occurrences to call and the skipped ones. The occurrences of
   * timers whose overlap policy is "allow" (which need not know what else runs) are written
   * together (one statement on PostgreSQL); a timer with another policy judges each moment after
   * the ones before it were written. With `ahead` (PostgreSQL), the due timers and retries were
   * read ahead of the batch, and whether each moment a timer owes was claimed before (its next
   * due one with the timer; those of a catch-up by id, DueTimersAhead): an occurrence known to be
   * new is written without a round trip, whatever the timer's policy, one known to exist is not
   * written again. A moment not read ahead (one the claim came to owe after the read: a long batch
   * under a large catch-up) is written answering whether it was new, as without `ahead`: with the
   * other "allow" timers' (one statement), alone for a timer of another policy.
   */
  private claim(tx: Tx, retries: boolean, ahead?: DueTimersAhead): { claimed: Claimed[]; skipped: OccurrenceOutcome[] } {
    const { timers, occurrences } = this.deps;
    const claimed: Claimed[] = [];
    const skipped: OccurrenceOutcome[] = [];
    const horizon = tx.now + this.deps.lookaheadMs;
    /** Occurrences not written yet (of "allow" timers, and of others' moments read ahead), and their timers' moves. */
    let owedNow: { occurrence: OccurrenceRecord; latenessMs: number; why: string; mayBuffer: boolean; knownNew: boolean }[] = [];
    let moves: { timer: TimerRecord; nextDueMs: number | null }[] = [];
    /** The occurrences each timer's claim made to be called (each timer is claimed once in a unit). */
    const called = new Map<string, number>();
    const count = (timerId: string) => called.set(timerId, (called.get(timerId) ?? 0) + 1);
    /** Writes what was gathered; then each occurrence written is called or recorded as skipped, and each timer moves. */
    const write = () => {
      const written = occurrences.insertMany(
        owedNow.filter((o) => !o.knownNew).map((o) => o.occurrence),
        tx.now,
      );
      occurrences.insertKnownNew(
        owedNow.filter((o) => o.knownNew).map((o) => o.occurrence),
        tx.now,
      );
      for (const { occurrence, latenessMs, why, mayBuffer, knownNew } of owedNow) {
        if (!knownNew && !written.has(occurrence.id)) continue; // the same timer id and moment were claimed before (a replaced timer): called once
        this.claimed(tx, occurrence, latenessMs, why, mayBuffer, claimed, skipped);
        if (!why) count(occurrence.timerId);
      }
      timers.advanceMany(
        moves
          .map(({ timer, nextDueMs }) => ({ id: timer.id, nextDueMs, called: called.get(timer.id) ?? 0 }))
          .filter((m, i) => m.nextDueMs !== moves[i].timer.nextDueMs || m.called > 0),
        tx.now,
      );
      owedNow = [];
      moves = [];
    };
    // A timer with a cancel_on is claimed at its moment, not ahead (time/cancel-on.ts): an event cancelling it races the moment, not the lookahead.
    for (const { timer, claimedBefore, active } of ahead?.timers() ??
      timers.due(horizon, claimChunk, tx.now).map((timer) => ({ timer, claimedBefore: undefined, active: undefined }))) {
      const { dueMs: owed, nextDueMs } = owedWithin(timer, tx.now, timer.cancelOn?.length ? tx.now : horizon); // catch-up of what was missed, then what comes within the lookahead; ascending (maybe none)
      const ids = owed.map((dueMs) => occurrenceId(timer.id, dueMs));
      // Read ahead (PostgreSQL): whether a moment's occurrence was made before (undefined: not read ahead, or no read ahead).
      const single = owed.length === 1 && owed[0] === timer.nextDueMs;
      const existing = (id: string): boolean | undefined =>
        claimedBefore === undefined ? undefined : single ? claimedBefore : occurrences.knownExisting([id])?.has(id);
      const overlap = timer.policy?.overlap ?? "allow";
      // "allow" needs to know nothing of what runs; another policy judges each moment on its occurrences that have not ended,
      // read ahead (PostgreSQL) or here, once, then counted on as its moments are written.
      let ongoing = overlap === "allow" ? noneActive : (active ?? this.deps.control.activeOf(timer.id));
      let deferredDueMs: number | null = null;
      for (const [k, dueMs] of owed.entries()) {
        const made = existing(ids[k]);
        if (made) continue; // the same timer id and moment were claimed before (a replaced timer): called once
        const latenessMs = tx.now - dueMs; // < 0 when claimed ahead
        const { status, reason: why } = claimDecision(timer, latenessMs, ongoing); // lateness (and overlap)
        if (status === "skipped" && latenessMs < 0) {
          deferredDueMs = dueMs; // an overlap skip is judged at the moment (the run before may end first): a later ring claims it
          break;
        }
        const occurrence = this.occurrenceOf(timer, dueMs, status, why, latenessMs, ids[k]);
        if (overlap === "allow" || made === false) {
          // Known new, written with the others without an answer; or ("allow") written with them answering which were new.
          owedNow.push({ occurrence, latenessMs, why, mayBuffer: timer.kind !== "delay", knownNew: made === false });
        } else {
          // Not read ahead: what the moments after it find depends on whether it was new, so it is written alone, answering.
          write(); // what was gathered before it is written first: the log keeps the timers' and moments' order
          if (!occurrences.insert(occurrence, tx.now)) continue; // claimed before: called once
          this.claimed(tx, occurrence, latenessMs, why, timer.kind !== "delay", claimed, skipped);
          if (!why) count(timer.id);
        }
        if (overlap !== "allow") ongoing = withClaimed(ongoing, status);
      }
      if (overlap !== "allow") this.knowBuffering(timer.id, ongoing);
      moves.push({ timer, nextDueMs: deferredDueMs ?? nextDueMs });
    }
    write();
    const retriesAhead = retries ? ahead?.retries() : undefined;
    for (const retry of retriesAhead ?? (retries ? occurrences.dueRetries(horizon, claimChunk) : [])) {
      if (retriesAhead)
        occurrences.resumeKnownWaiting(retry.id, tx.now); // read ahead waiting, and nothing in the batch ran before the claim
      else if (!occurrences.resume(retry.id, tx.now)) continue;
      claimed.push({ occurrence: { ...retry, status: "pending" }, sendAtMs: retry.nextAttemptMs ?? tx.now, mayBuffer: true });
    }
    return { claimed, skipped };
  }

  /** What a claim knows of timer `timerId`'s occurrences after its own (`ongoing`): whether it holds a buffered one ({@link buffering}). */
  private knowBuffering(timerId: string, ongoing: ActiveOccurrences): void {
    if (ongoing.buffered > 0) this.buffered().add(timerId);
    else this.buffering?.delete(timerId);
  }

  /** {@link buffering}, read from the store the first time (at the owner's start: {@link recover}). */
  private buffered(): Set<string> {
    this.buffering ??= new Set(this.deps.control.bufferingTimers());
    return this.buffering;
  }

  /**
   * In an end's unit: releases timer `timerId`'s buffered occurrence when it may have one (see
   * {@link buffering}), answering nothing (deferred on PostgreSQL); true when it may have
   * released one (the clock is told of the commit time, when a released one is due).
   */
  private release(tx: Tx, timerId: string): boolean {
    if (!this.buffered().has(timerId)) return false;
    this.deps.control.releaseBuffered(timerId, tx.now);
    return true;
  }

  /** The occurrence of `timer` due at `dueMs`, as a claim writes it. */
  private occurrenceOf(timer: TimerRecord, dueMs: number, status: OccurrenceRecord["status"], why: string, latenessMs: number, id: string): OccurrenceRecord {
    return {
      id,
      timerId: timer.id,
      dueMs,
      action: timer.action,
      input: timer.input,
      actor: timer.actor,
      overdue: timer.overdue,
      retryDelaysMs: timer.retryDelaysMs,
      status,
      attempts: 0,
      nextAttemptMs: null,
      callId: id,
      latenessMs: why ? latenessMs : null,
      error: why,
      chainDepth: timer.chainDepth,
      ...(timer.trace && { trace: timer.trace, once: timer.spec.kind === "at" }),
    };
  }

  /** An occurrence a claim wrote: skipped (`timer.skipped`, when `why`), or to be called (pending; "buffered": made when the previous one ends, released in the unit that records that end, see call()). */
  private claimed(
    tx: Tx,
    occurrence: OccurrenceRecord,
    latenessMs: number,
    why: string,
    mayBuffer: boolean,
    claimed: Claimed[],
    skipped: OccurrenceOutcome[],
  ): void {
    if (why) {
      tx.append(skippedEvent(occurrence, latenessMs, why));
      skipped.push({ occurrence, status: "skipped", latenessMs, error: why, attempt: 0, nextAttemptMs: null });
    } else if (occurrence.status === "pending") claimed.push({ occurrence, sendAtMs: occurrence.dueMs, mayBuffer });
  }

  /** The span of `occurrence`'s call (tracing/work.ts), linked to the span that set its timer. */
  private occurrenceSpan(occurrence: OccurrenceRecord): Span {
    const timer = occurrence.trace === undefined ? this.deps.timers.get(occurrence.timerId) : undefined; // claimed by an earlier owner
    const trace = occurrence.trace ?? timer?.trace;
    const once = timer ? timer.spec.kind === "at" : occurrence.once === true; // a delay or `at` timer: its occurrence continues the trace
    return occurrenceSpan({ id: occurrence.timerId, action: occurrence.action, trace, once }, occurrence.id, occurrence.dueMs);
  }

  /**
   * Calls one occurrence's action, sent at `sendAtMs` (its due moment, or its retry's, when
   * claimed ahead), and records how it ended (completed, retry_wait or failed); a first
   * call is skipped instead when, at the moment of its start, it is later than its bound (a
   * claim recovered after a restart, or one whose claim commit took the time that tipped it).
   * `mayBuffer`: the timer may have a buffered occurrence to release at this one's end (false
   * for a delay, which never has: no query then). `fresh`: claimed just now by this owner (its call
   * has no row or event yet). Never rejects.
   */
  private async call(occurrence: OccurrenceRecord, sendAtMs: number | undefined, mayBuffer = true, fresh = false): Promise<void> {
    const { actions, clock, committer, lateness, logger, stages } = this.deps;
    const claimedAtMs = clock.now(); // just after the claim's commit (or at the owner's start, for an occurrence a previous owner claimed)
    let latenessMs = Math.max(0, claimedAtMs - occurrence.dueMs); // until started (a call that never starts ends with its claim's lateness)
    const first = occurrence.attempts === 0;
    // The bound decides whether the occurrence is made at all: it holds until its action has started once (a try that found no executor did not start it).
    const unmade = first || !(await actions.everStarted(occurrence.id));
    if (unmade) {
      const why = tooLate(occurrence.overdue, latenessMs);
      if (why) return this.skip(occurrence, latenessMs, why);
    }
    const onStarted = (startedAtMs: number, writtenAtMs: number) => {
      latenessMs = startedAtMs - occurrence.dueMs;
      if (!first || occurrence.origin === "backfill") return; // a backfilled moment is late by design (days): not the clock's lateness
      lateness.record(latenessMs);
      observeTimerCall(stages, occurrence.dueMs, claimedAtMs, writtenAtMs, startedAtMs);
    };
    let status: "completed" | "failed" = "completed";
    let error = "";
    const attempt = occurrence.attempts + 1;
    /**
     * The occurrence's end, in the unit that records the action's end when ActionCalls runs
     * `onEnd`, else in one of its own; an end for good releases the timer's buffered occurrence
     * (the "buffer one" overlap policy) in the same unit: due at once (or at its moment, if that is still to come:
     * buffered inside the lookahead), so the clock is told of the commit time.
     */
    const finish = (tx: Tx, ended: "completed" | "failed", why: string, terminal = false) => {
      const retryInMs = ended === "failed" && !terminal ? occurrence.retryDelaysMs[attempt - 1] : undefined; // a TerminalError skips the tries left
      const next = retryInMs === undefined ? { status: ended, nextAttemptMs: null } : { status: "retry_wait" as const, nextAttemptMs: tx.now + retryInMs };
      this.deps.occurrences.finish(occurrence.id, next.status, latenessMs, why, next.nextAttemptMs, tx.now);
      if (next.status === "failed") tx.append(failedEvent(occurrence, attempt, why));
      const released = next.status !== "retry_wait" && mayBuffer && this.release(tx, occurrence.timerId);
      return { ...next, armAtMs: released ? tx.now : next.nextAttemptMs };
    };
    let endedWithCall: ReturnType<typeof finish> | null = null;
    const span = tracing.on ? this.occurrenceSpan(occurrence) : undefined;
    try {
      await inSpan(span, () =>
        actions.call(
          {
            action: occurrence.action,
            input: occurrence.input,
            callId: occurrence.id,
            cause: null,
            actor: undefined,
            scheduled: {
              timerId: occurrence.timerId,
              dueMs: occurrence.dueMs,
              actor: occurrence.actor,
              chainDepth: occurrence.chainDepth ?? this.deps.timers.get(occurrence.timerId)?.chainDepth ?? 0, // a delay's depth
              sendAtMs,
              latestStartMs: unmade ? latestStartMs(occurrence.overdue, occurrence.dueMs) : undefined, // not made once its bound has passed waiting for a credit
              fresh,
              onStarted,
              onEnd: (tx, end) => void (endedWithCall = finish(tx, end.ok ? "completed" : "failed", end.error, end.terminal)),
              endAppends: (ok) => (ok ? [] : [failedEvent(occurrence, attempt, "")]), // a failure may be for good (a TerminalError, say)
            },
          },
          systemPrincipal,
          ownerCaller(),
        ),
      );
      span?.end();
    } catch (e) {
      if (span) endSpan(span, e);
      if (this.stopped) return; // stays pending: called again at the next start (answered from the log if it completed)
      if (notStartedInTime(e)) {
        const lateMs = clock.now() - occurrence.dueMs;
        return this.skip(occurrence, lateMs, tooLate(occurrence.overdue, lateMs) || ChronologError.from(e).message);
      }
      status = "failed";
      error = ChronologError.from(e).message;
    }
    if (this.stopped) return; // the store is closing: pending, answered from the log at the next start
    let end: ReturnType<typeof finish>;
    try {
      // A failure with no try left appends timer.failed: said, so what a cancel_on names is read ahead for it.
      const failsForGood = status === "failed" && occurrence.retryDelaysMs[attempt - 1] === undefined;
      end =
        endedWithCall ??
        (await committer.submit((tx) => finish(tx, status, error), failsForGood ? { appends: [failedEvent(occurrence, attempt, error)] } : {}));
    } catch (e) {
      logger.error({ err: e, occurrence: occurrence.id }, "recording an occurrence's end failed");
      return;
    }
    if (status === "failed") {
      const retry = end.nextAttemptMs === null ? "no tries left: failed" : `tried again at ${new Date(end.nextAttemptMs).toISOString()}`;
      logger.warn({ timer: occurrence.timerId, occurrence: occurrence.id, action: occurrence.action, attempt, error }, `a timer's call failed; ${retry}`);
    }
    if (end.armAtMs !== null) this.deps.changed(end.armAtMs);
    this.publish({ occurrence, status: end.status, latenessMs, error, attempt, nextAttemptMs: end.nextAttemptMs });
  }

  /** Records a pending occurrence as skipped (`timer.skipped`) instead of calling it. */
  private async skip(occurrence: OccurrenceRecord, latenessMs: number, why: string): Promise<void> {
    if (this.stopped) return;
    let releasedAt: number | null = null;
    try {
      const skipped = await this.deps.committer.submit((tx) => {
        if (!this.deps.occurrences.skip(occurrence.id, latenessMs, why, tx.now)) return false;
        tx.append(skippedEvent(occurrence, latenessMs, why));
        // Started by an owner that stopped before its result was recorded: its start gets an end that says what is known.
        this.deps.actions.failLeftRunning(
          tx,
          occurrence.id,
          `no result recorded before the owner stopped (the executor may or may not have run it); not run again: ${why}`,
        );
        if (this.release(tx, occurrence.timerId)) releasedAt = tx.now; // as an end in call()
        return true;
      });
      if (releasedAt !== null) this.deps.changed(releasedAt);
      if (skipped) this.publish({ occurrence, status: "skipped", latenessMs, error: why, attempt: 0, nextAttemptMs: null });
    } catch (e) {
      this.deps.logger.error({ err: e, occurrence: occurrence.id }, "recording a skipped occurrence failed");
    }
  }

  private publish(outcome: OccurrenceOutcome): void {
    for (const listener of this.listeners) listener(outcome);
  }
}

/**
 * `timer.failed`: an occurrence whose last try failed, with no try left. Data: timer_id,
 * occurrence_id, action, due_ms, attempts, error (the last try's); the timer's actor; no cause.
 * Its id is derived from the occurrence id (one per occurrence). A processor on it can alert
 * or make up for the occurrence.
 */
function failedEvent(occurrence: OccurrenceRecord, attempts: number, error: string) {
  return {
    id: derivedId(occurrence.id, 0, "timer.failed"),
    type: "timer.failed",
    data: { timer_id: occurrence.timerId, occurrence_id: occurrence.id, action: occurrence.action, due_ms: occurrence.dueMs, attempts, error },
    cause: "",
    actor: occurrence.actor,
  };
}

/**
 * `timer.skipped`: an occurrence claimed later than its timer's `overdue` bound and
 * not called. Data: timer_id, occurrence_id, action, due_ms, lateness_ms, reason; the
 * timer's actor; no cause. Its id is derived from the occurrence id (one per occurrence).
 */
function skippedEvent(occurrence: OccurrenceRecord, latenessMs: number, reason: string) {
  return {
    id: derivedId(occurrence.id, 0, "timer.skipped"),
    type: "timer.skipped",
    data: { timer_id: occurrence.timerId, occurrence_id: occurrence.id, action: occurrence.action, due_ms: occurrence.dueMs, lateness_ms: latenessMs, reason },
    cause: "",
    actor: occurrence.actor,
  };
}
