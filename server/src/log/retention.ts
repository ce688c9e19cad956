import type { Clock, TimerHost } from "../clock.js";
import type { Logger } from "../logger.js";
import type { Committer } from "../store/committer.js";
import type { LogRemovalStatements, ScannedEvent } from "../store/log-removal.js";
import type { PagesReturned, WriteTurn } from "../store/sqlite/checkpointer.js";
import { ArchiveGate, type LogArchive } from "./archive-gate.js";
import { KeyIndex } from "./key-index.js";
import type { LogStats } from "./log-stats.js";
import { passLogWide, SizeLevel, sizeLevel, sizeWarning } from "./log-wide-limit.js";
import { PartitionPlan, PartitionSummaries, type ByType, type PartitionDrop, type PartitionHeld } from "./partition-plan.js";
import { RemovalPace } from "./removal-pace.js";
import { SpaceReturn } from "./space-return.js";
import { UnitSize } from "./unit-size.js";
import { HoldSnapshot, type HoldSources } from "./retention-holds.js";
import { eventKeyOf, ruleFor, type RetentionRule } from "./retention-rules.js";
import type { RetentionPass } from "./retention-pass.js";

/** Default time between two passes: one minute, in ms. */
export const defaultRetentionIntervalMs = 60_000;
/** Default most events one removal batch (one committer unit) takes. */
export const defaultRetentionBatchEvents = 100;
/** Default number of removed events' ids kept for GetEvent's answer (about 60 MB of them). */
export const defaultRemovedIdsKept = 1_000_000;
/** Ids of a dropped partition's events one unit keeps for GetEvent (PostgreSQL). */
const idsPerUnit = 500;

/** Why events were held back in a pass, by holder: the reason's words and the types held. */
type Reasons = Map<string, { reason: string; types: Set<string> }>;

/** What a {@link LogRetention} needs. */
export interface LogRetentionOptions {
  statements: LogRemovalStatements;
  stats: LogStats;
  committer: Committer;
  clock: Clock;
  /** Where the pass timer is armed (the owner's TimerHost: setTimeout, or a ManualClock in tests). */
  timers: TimerHost;
  logger: Logger;
  /** The config's rules, before every plugin's. */
  configRules: RetentionRule[];
  /** The rules of the plugin that declares `type` (its event types and its collections' change types). */
  ownRules: (type: string) => RetentionRule[];
  /** Whether any plugin declares retention rules. */
  pluginRules: () => boolean;
  holds: HoldSources;
  /** Told the highest seq of each batch removed (the log's in-memory tail forgets through it). */
  onRemoved?: (throughSeq: number) => void;
  /** SQLite's WAL as its checkpoints saw it (removal-pace.ts: removal waits while it is past its bound). */
  wal?: () => { pastBound: boolean };
  /** SQLite's: returns free pages to the disk off the owner's thread, inside the turn it is given (store/sqlite/checkpointer.ts); absent: in committer units. */
  returnPages?: (pages: number, turn: WriteTurn) => Promise<PagesReturned>;
  /** The log's stored bytes at most, whatever the rules (0: no log-wide limit). */
  maxBytes: number;
  /** Past this many stored bytes the owner warns (0: never). */
  warnBytes: number;
  intervalMs: number;
  batchEvents: number;
  /** Ids of removed events kept for GetEvent's answer, the newest (0: none). */
  removedIdsKept: number;
  /** Where events are archived before they are removed (`log.retention.archive`, archive-gate.ts); absent: none are. */
  archive?: LogArchive;
}

/**
 * Retention of the log: removes the events its rules (docs/retention.md) make candidates, in
 * small batches off the hot path, and never one still needed (retention-holds.ts).
 *
 * States:
 * - **off**: no rule (the config's or a plugin's) and no log-wide limit; nothing armed. The
 *   first rule (a plugin registered with one) arms it ({@link sync}).
 * - **armed**: one timer on the owner's TimerHost, `intervalMs` after the last pass began (a
 *   pass runs at `start`, once the log's statistics are counted).
 * - **passing**: per rule, per type, oldest first: a batch of at most `batchEvents` events (fewer
 *   while units hold the owner's thread longer than a few ms: unit-size.ts) is scanned (outside the committer; on PostgreSQL without blocking the event loop), weighed
 *   against the holds, and what may go is removed in one committer unit of its own; after each,
 *   a pause that keeps removal to its share of the committer (removal-pace.ts). Then the
 *   log-wide limit (log-wide-limit.ts), then, on SQLite once much of the file is free, steps
 *   that return free pages to the disk (space-return.ts). A tick during a pass asks for one
 *   more after it. On PostgreSQL the full partitions of the
 *   events table are first weighed whole from their summaries (partition-plan.ts, stored and
 *   read at an owner's first pass): those every event of which may go are dropped, one committer
 *   unit each; the rules' scans by rows then step over those held or waiting whole, and weigh
 *   only the partitions a holder pins part of and the head's.
 * - **stopped**: disarmed; a running pass ends after its current batch.
 *
 * Failure semantics: a batch is one transaction (its events, their tombstones and the counts go
 * together; a partition's drop is one too), so a crash leaves the log as before or after a batch, and the next pass resumes from
 * the log as it is. A failed batch is logged and ends the pass.
 */
export class LogRetention {
  private readonly listeners: ((pass: RetentionPass) => void)[] = [];
  private readonly keyIndexes = new Map<string, KeyIndex>();
  private handle: unknown = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** How far past its size the log was at the last pass's end (log-wide-limit.ts): a warning is logged when it rises. */
  private warned: SizeLevel = SizeLevel.within;
  private lastHeld = "{}";
  private started = false;
  private armed = false;
  /** Archive before removal (archive-gate.ts). */
  private readonly archive: ArchiveGate;
  /** Seqs this pass counted as held: a rule's phase and the log-wide one may weigh the same event. */
  private readonly heldSeqs = new Set<number>();
  /** How long the last removal's commit took, ms: the pause before the next batch. */
  private lastCommitMs = 0;
  /** The summaries of the events table's full partitions (PostgreSQL), read once each and stored ({@link PartitionPlan}). */
  private readonly partitionSummaries = new PartitionSummaries();
  /** The running pass's plan of partitions (PostgreSQL): the rules by rows step over the partitions it decided whole. */
  private plan: PartitionPlan | undefined;
  /** What the last pass held back, by holder (the `chronolog_log_retention_held_events` gauge). */
  held: Record<string, number> = {};
  /** Partition summaries read from their events since the owner started (`chronolog_log_partition_summaries_read_total`; PostgreSQL). */
  summariesRead = 0;

  /** The pause after each removal unit, against the committer's other work. */
  private readonly pace: RemovalPace;
  /** Events the next removal by rows takes, from how long the last held the owner's thread. */
  private readonly unitSize: UnitSize;
  /** When the data file's free pages go back to the disk (SQLite). */
  private readonly space: SpaceReturn;

  constructor(private readonly options: LogRetentionOptions) {
    this.pace = new RemovalPace(options.committer, options.wal);
    this.unitSize = new UnitSize(options.batchEvents);
    this.space = new SpaceReturn(options.statements);
    this.archive = new ArchiveGate(options.archive, options.logger);
  }

  /** Calls `listener` after every pass. */
  onPass(listener: (pass: RetentionPass) => void): void {
    this.listeners.push(listener);
  }

  /** Arms the pass timer and starts a pass (not awaited). */
  start(): void {
    this.started = true;
    this.sync();
  }

  /** Arms the passes once a rule exists (the config's, a log-wide limit, or a plugin's: call it when plugins change). Nothing before {@link start}. */
  sync(): void {
    const { logger, intervalMs, batchEvents, configRules, maxBytes, pluginRules } = this.options;
    if (!this.started || this.armed || this.stopped || (configRules.length === 0 && maxBytes === 0 && !pluginRules())) return;
    this.armed = true;
    logger.info({ intervalMs, batchEvents, rules: configRules.length, maxBytes }, "log retention: events its rules let go are removed in the background");
    this.tick();
  }

  /** Resolves once no pass runs (the one running and any it was asked to run again have ended). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Disarms; resolves once a running pass has ended (after its current batch). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.handle !== null) this.options.timers.clearTimer(this.handle);
    this.handle = null;
    await this.running;
  }

  private tick(): void {
    this.handle = null;
    if (this.stopped) return;
    this.handle = this.options.timers.setTimer(() => this.tick(), this.options.intervalMs);
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => (this.running = null));
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      await this.pass();
    } while (this.again && !this.stopped);
  }

  /** One pass: every rule's candidates, then the log-wide limit. Never rejects. */
  private async pass(): Promise<void> {
    const { stats, statements, clock, logger, holds, maxBytes } = this.options;
    await stats.ready;
    if (this.stopped) return;
    const result: RetentionPass = {
      ...{ removedEvents: 0, removedBytes: 0, held: {}, batches: 0 },
      ...{ longestBatchMs: 0, longestUnitMs: 0, longestUnits: {}, summariesRead: 0, complete: false },
    };
    const reasons: Reasons = new Map();
    this.archive.reset();
    this.heldSeqs.clear();
    try {
      const now = clock.now();
      const rules = this.rulesByType();
      if (rules.size === 0 && (maxBytes === 0 || stats.bytes <= maxBytes) && this.space.next() === 0) throw nothingToDo;
      const snapshot = new HoldSnapshot(holds, statements, (collection) =>
        this.keyIndex([`${collection}.created`, `${collection}.updated`, `${collection}.deleted`], ["data", "_id"]).update(),
      );
      if (statements.partitions) {
        const partitions = statements.partitions;
        this.plan = await PartitionPlan.start(partitions, this.options.committer.head, this.partitionSummaries, (partition, summary) =>
          this.unit(result, "summary", () => partitions.store(partition, summary)),
        );
        const ruleOf = new Map<string, RetentionRule>();
        for (const [rule, types] of rules) for (const type of types) ruleOf.set(type, rule);
        const { drops, held } = await this.plan.decide({
          ruleOf: (type) => ruleOf.get(type),
          totalOf: (type) => stats.of(type),
          now,
          processors: snapshot.processors(),
          failedSeqs: snapshot.failedSeqs(), // after the cursors (retention-holds.ts)
          sparselyHeld: (type) => snapshot.sparselyHeld(type),
          scan: (type, afterSeq, beforeSeq, limit) => statements.scanType(type, afterSeq, limit, beforeSeq),
          check: (events) => snapshot.check(events),
          batchEvents: this.options.batchEvents,
        });
        for (const h of held) this.holdBack(h, result, reasons);
        for (const drop of drops) await this.dropPartition(drop, result, reasons);
      }
      await this.passRules(rules, now, snapshot, result, reasons);
      if (maxBytes > 0 && stats.bytes > maxBytes)
        await passLogWide({
          ...{ statements, stats, maxBytes, batchEvents: this.options.batchEvents, plan: this.plan },
          removeBatch: (candidates) => this.removeBatch(candidates, snapshot, result, reasons),
          drop: (drop) => this.dropPartition(drop, result, reasons),
        });
      // SQLite: free pages go back to the disk only when much of the file is free (space-return.ts).
      for (let pages = this.space.next(); pages > 0; pages = this.space.next()) if (!(await this.returnSpace(pages, result))) break;
      result.complete = true;
    } catch (e) {
      if (e === nothingToDo) result.complete = true;
      else if (e !== stopping) logger.error({ err: e, ...result }, "log retention: a removal batch failed; the next pass tries again");
    }
    result.summariesRead = this.plan?.summariesRead ?? 0;
    this.summariesRead += result.summariesRead;
    this.plan = undefined;
    this.report(result, reasons);
    for (const listener of this.listeners) listener(result);
  }

  /** Every rule's candidates, type by type. */
  private async passRules(rules: Map<RetentionRule, string[]>, now: number, snapshot: HoldSnapshot, result: RetentionPass, reasons: Reasons): Promise<void> {
    for (const [rule, types] of rules) {
      const latest = rule.latestPerKey ? await this.keyIndex(types, rule.latestPerKey).update() : undefined;
      for (const type of types) await this.passType(type, rule, now, latest, snapshot, result, reasons);
    }
  }

  /** The rules that apply to the log's types now, each with its types. */
  private rulesByType(): Map<RetentionRule, string[]> {
    const byRule = new Map<RetentionRule, string[]>();
    for (const type of this.options.stats.types().sort()) {
      const rule = ruleFor(type, this.options.configRules, this.options.ownRules(type));
      if (rule) byRule.set(rule, [...(byRule.get(rule) ?? []), type]);
    }
    return byRule;
  }

  private keyIndex(types: string[], path: string[]): KeyIndex {
    const name = `${types.join(",")}|${path.join(".")}`;
    let index = this.keyIndexes.get(name);
    if (!index) this.keyIndexes.set(name, (index = new KeyIndex(this.options.statements, types, path)));
    return index;
  }

  /**
   * The candidates of one type, oldest first: older than the rule's age, past its count or size
   * (those limits are prefixes of the type's events: the scan ends at the first event none
   * reaches), or with a later event of the same key.
   */
  private async passType(
    type: string,
    rule: RetentionRule,
    now: number,
    latest: Map<string, number> | undefined,
    snapshot: HoldSnapshot,
    result: RetentionPass,
    reasons: Reasons,
  ): Promise<void> {
    const { statements, stats } = this.options;
    const { events: count, bytes: total } = stats.of(type);
    let scannedEvents = 0;
    let scannedBytes = 0;
    let after = 0;
    for (;;) {
      const limit = this.unitSize.events;
      const rows = await statements.scanType(type, after, limit);
      const candidates: ScannedEvent[] = [];
      let ended = rows.length < limit;
      let stepped = false;
      for (const row of rows) {
        // A partition decided whole (held, waiting, dropped): stepped over, its events counted as scanned.
        const skip = this.plan?.skips(row.seq, type);
        if (skip) {
          scannedEvents += skip.events;
          scannedBytes += skip.bytes;
          after = skip.to - 1;
          stepped = true;
          ended = false;
          break;
        }
        const byLimits =
          (rule.maxAgeMs > 0 && row.at < now - rule.maxAgeMs) ||
          (rule.maxCount > 0 && count - scannedEvents > rule.maxCount) ||
          (rule.maxBytes > 0 && total - scannedBytes > rule.maxBytes);
        const key = latest && rule.latestPerKey ? eventKeyOf(row, rule.latestPerKey) : undefined;
        const byKey = key !== undefined && (latest?.get(key) ?? 0) > row.seq;
        scannedEvents++;
        scannedBytes += row.bytes;
        after = row.seq;
        if (byLimits || byKey) candidates.push(row);
        else if (!latest) {
          ended = true;
          break;
        }
      }
      if (candidates.length > 0 || !stepped) await this.removeBatch(candidates, snapshot, result, reasons);
      if (ended) return;
    }
  }

  /** Weighs `candidates` against the holds and removes the rest in one committer unit; then gives everything else a turn (also after a batch without candidates: a scan never runs on without yielding). */
  private async removeBatch(candidates: ScannedEvent[], snapshot: HoldSnapshot, result: RetentionPass, reasons: Reasons): Promise<void> {
    if (this.stopped) throw stopping;
    const { committer } = this.options;
    // The log's last event always stays: the head seq is read from it at start.
    const weighed = candidates.filter((e) => e.seq < committer.head);
    if (weighed.length > 0) await this.remove(weighed, snapshot, result, reasons);
    // A turn for everything else; after a removal, a pause that keeps removal to its share of
    // the committer's time (removal-pace.ts).
    const took = this.lastCommitMs;
    this.lastCommitMs = 0;
    await this.pace.pause(took);
  }

  private async remove(weighed: ScannedEvent[], snapshot: HoldSnapshot, result: RetentionPass, reasons: Reasons): Promise<void> {
    const { committer, statements, stats } = this.options;
    const holds = await snapshot.check(weighed);
    for (const [seq, hold] of holds) {
      if (this.heldSeqs.has(seq)) continue;
      this.heldSeqs.add(seq);
      result.held[hold.holder] = (result.held[hold.holder] ?? 0) + 1;
      const entry = reasons.get(hold.holder) ?? { reason: hold.reason, types: new Set<string>() };
      entry.types.add(weighed.find((e) => e.seq === seq)?.type ?? "");
      reasons.set(hold.holder, entry);
    }
    let going = weighed.filter((e) => !holds.has(e.seq));
    if (this.options.archive && going.length > 0) going = await this.archived(going, result, reasons);
    if (going.length > 0) {
      const bytes = going.reduce((sum, e) => sum + e.bytes, 0);
      const tookMs = await this.pace.track(() =>
        committer.submit(() => {
          const unitStarted = performance.now();
          statements.remove(
            going.map((e) => e.seq),
            bytes,
            this.options.removedIdsKept,
          );
          // A full partition's stored summary no longer counts its events: it is read again.
          statements.partitions?.stale(going[0].seq, going[going.length - 1].seq);
          const heldMs = performance.now() - unitStarted;
          this.unitSize.took(going.length, heldMs);
          this.longest(result, "batch", heldMs);
        }),
      );
      this.plan?.removed(going.map((e) => e.seq));
      this.options.onRemoved?.(going[going.length - 1].seq);
      this.lastCommitMs = tookMs;
      result.longestBatchMs = Math.max(result.longestBatchMs, this.lastCommitMs);
      result.batches++;
      result.removedEvents += going.length;
      result.removedBytes += bytes;
      const byType: ByType = new Map();
      for (const e of going) {
        const entry = byType.get(e.type) ?? { events: 0, bytes: 0 };
        entry.events++;
        entry.bytes += e.bytes;
        byType.set(e.type, entry);
      }
      stats.removed(byType, await statements.firstSeq());
    }
  }

  /** Of `going`, those the archive holds once brought through the last of them; the others are held back as `archive`. */
  private async archived(going: ScannedEvent[], result: RetentionPass, reasons: Reasons): Promise<ScannedEvent[]> {
    await this.archive.through(going[going.length - 1].seq);
    const unarchived = going.filter((e) => e.seq > this.archive.archivedSeq);
    if (unarchived.length > 0) {
      result.held.archive = (result.held.archive ?? 0) + unarchived.length;
      const entry = reasons.get("archive") ?? { reason: this.archive.reason, types: new Set<string>() };
      for (const e of unarchived) entry.types.add(e.type);
      reasons.set("archive", entry);
    }
    return going.filter((e) => e.seq <= this.archive.archivedSeq);
  }

  /**
   * Drops a partition every event of which may go: first the ids of its newest events (as many
   * as `removedIdsKept`) are kept, {@link idsPerUnit} a unit, then one unit drops it; after each
   * unit a pause as after a batch.
   */
  private async dropPartition(drop: PartitionDrop, result: RetentionPass, reasons: Reasons): Promise<void> {
    const { statements, stats, removedIdsKept } = this.options;
    const { from, to } = drop.partition;
    if (!(await this.archive.through(to - 1))) {
      // Kept whole until its events are archived.
      return this.holdBack({ holder: "archive", reason: this.archive.reason, events: drop.events, types: [...drop.byType.keys()] }, result, reasons);
    }
    if (removedIdsKept > 0)
      for (let at = Math.max(from, to - removedIdsKept); at < to; at += idsPerUnit)
        await this.unit(result, "ids", () => statements.partitions?.keepIds(at, Math.min(at + idsPerUnit, to), removedIdsKept));
    // The drop waits briefly for the events table's lock (the owner's thread with it): while readers hold it, again after a pause.
    for (let attempt = 1; ; attempt++)
      try {
        await this.unit(result, "drop", () => statements.partitions?.drop(drop.partition, drop.events, drop.bytes));
        break;
      } catch (e) {
        if (attempt < dropAttempts && statements.partitions?.lockBusy(e)) await new Promise((r) => setTimeout(r, dropRetryMs));
        else {
          this.plan?.removed([from]); // its summary changed (or the drop waited too long): read again at the next pass
          throw e;
        }
      }
    this.options.onRemoved?.(to - 1);
    result.removedEvents += drop.events;
    result.removedBytes += drop.bytes;
    if (drop.events > 0) stats.removed(drop.byType, await statements.firstSeq());
  }

  /** Counts a whole partition's events as held back. */
  private holdBack(held: PartitionHeld, result: RetentionPass, reasons: Reasons): void {
    result.held[held.holder] = (result.held[held.holder] ?? 0) + held.events;
    const entry = reasons.get(held.holder) ?? { reason: held.reason, types: new Set<string>() };
    for (const type of held.types) entry.types.add(type);
    reasons.set(held.holder, entry);
  }

  /** Runs `work` (a unit of `kind`) in a committer unit of its own, timed as a removal batch, then pauses as after a batch. */
  private async unit(result: RetentionPass, kind: string, work: () => void): Promise<void> {
    if (this.stopped) throw stopping;
    const took = await this.pace.track(() =>
      this.options.committer.submit(() => {
        const unitStarted = performance.now();
        work();
        this.longest(result, kind, performance.now() - unitStarted);
      }),
    );
    result.longestBatchMs = Math.max(result.longestBatchMs, took);
    result.batches++;
    await this.pace.pause(took);
  }

  /** One step returning up to `pages` free pages to the disk (SQLite: space-return.ts), then a pause as after a batch; false when it returned none. */
  private async returnSpace(pages: number, result: RetentionPass): Promise<boolean> {
    if (this.stopped) throw stopping;
    const { committer, returnPages } = this.options;
    if (!returnPages) return this.space.stepInUnit(pages, (work) => this.unit(result, "vacuum", work));
    const { returned, heldMs } = await this.space.stepOutside(pages, returnPages, committer);
    this.longest(result, "vacuum", heldMs);
    result.longestBatchMs = Math.max(result.longestBatchMs, heldMs);
    result.batches++;
    await this.pace.pause(heldMs);
    return returned > 0;
  }

  /** Notes a unit of `kind` that held the committer `ms`. */
  private longest(result: RetentionPass, kind: string, ms: number): void {
    result.longestUnitMs = Math.max(result.longestUnitMs, ms);
    result.longestUnits[kind] = Math.max(result.longestUnits[kind] ?? 0, ms);
  }

  /** Logs what the pass removed, what it held back (when that changed) and the log-wide warning. */
  private report(result: RetentionPass, reasons: Reasons): void {
    const { logger, stats, warnBytes, maxBytes } = this.options;
    this.held = result.held;
    const details = {
      removedEvents: result.removedEvents,
      removedBytes: result.removedBytes,
      batches: result.batches,
      longestBatchMs: Math.round(result.longestBatchMs),
      longestUnitMs: Math.round(result.longestUnitMs * 10) / 10,
      longestUnits: Object.fromEntries(Object.entries(result.longestUnits).map(([kind, ms]) => [kind, Math.round(ms * 10) / 10])),
      summariesRead: result.summariesRead,
      firstSeq: stats.firstSeq,
    };
    if (result.removedEvents > 0) logger.info(details, `log retention removed ${result.removedEvents} events; the log starts at seq ${stats.firstSeq}`);
    const held = JSON.stringify(result.held);
    if (held !== this.lastHeld) {
      this.lastHeld = held;
      for (const [holder, { reason, types }] of reasons)
        logger.info(
          { holder, events: result.held[holder], types: [...types] },
          `log retention holds back ${result.held[holder]} events a rule lets go: ${result.held[holder] > 1 ? `the first of them: ${reason}` : reason}`,
        );
    }
    const level = sizeLevel(stats.bytes, warnBytes, maxBytes);
    if (level > this.warned)
      logger.warn(
        { bytes: stats.bytes, warnBytes, maxBytes, held: result.held },
        sizeWarning({ bytes: stats.bytes, level, warnBytes, maxBytes }, result.held, reasons),
      );
    this.warned = level;
  }
}

/** Tries of a partition's drop that found the events table's lock taken, and the pause between two, ms. */
const dropAttempts = 10;
const dropRetryMs = 50;
/** Thrown inside a pass when the owner stops: ends it quietly. */
const stopping = Symbol("stopping");
/** Thrown at a pass's start when no rule covers a type in the log and the log is within its size: nothing is read. */
const nothingToDo = Symbol("nothing to do");
