// Prometheus metrics of one owner, served as `GET /metrics` on the owner's port.
//
// Each owner has its own prom-client Registry (never prom-client's global default), so owners
// started in one process (tests) do not collide. Most values are read at scrape time by
// `collect` callbacks from the state the owner already keeps (processor engines, executor
// sessions, the log head, the timers table); only these are pushed as they happen, each cheap:
// one observation per group commit (not per event), one per timer call, one increment/decrement
// per Watch stream, and the stages of each event and call (stages.ts: counted in plain arrays
// without allocating, read here at scrape time).
//
// Names use the field's words (ack floor, in flight, executors, watchers) with
// the unit in the name: `_seconds`, `_events`, `_total`, `_seq`.

import { ChronologError } from "./errors.js";
import type { Authenticator } from "./auth/tokens.js";
import type { Logger } from "./logger.js";
import type { HttpHandler, HttpResponse } from "./http-handler.js";
import { stageBucketsMs, type StageHistogram, type Stages } from "./stages.js";
import type { CommitInfo } from "./store/committer.js";
import { latenessBucketsMs } from "./time/index.js";
import { rateMetrics, type RateWaits } from "./flow/rate-metrics.js";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from "prom-client";

/** A processor as the metrics read it: a {@link ProcessorEngine}'s counters and cursor. */
export interface ProcessorState {
  spec: { name: string };
  /** The ack floor: every event at or below it is finished. */
  floor: number;
  /** Deliveries in flight or waiting for a retry. */
  inFlight: number;
  /** Retries so far (each recorded as `processor.retried`). */
  retries: number;
  /** Events given up on (each recorded as `processor.failed`). */
  failures: number;
  /** Events finished without a delivery (`if_active`: skip or coalesce). */
  passed: number;
}

/** Where the metrics read the owner's state. */
export interface MetricsSources {
  /** The committer: its head, and a listener after every commit. */
  committer: { readonly head: number; onCommit(listener: (info: CommitInfo) => void): void };
  /** The declared processors' engines. */
  processors(): Iterable<ProcessorState>;
  /** Executor sessions connected now. */
  executorsConnected(): number;
  /** Timers with a next due moment. */
  timersPending(): Promise<number>;
  /** Time's lateness recorder: every record is observed. */
  lateness: { onRecord(listener: (latenessMs: number) => void): void };
  /** Calls of time the owner had in time but sent to an executor that holds after their moment (ActionCalls.sentLate). */
  timeCallsSentLate(): number;
  /** The stages of events and calls of time. */
  stages: Stages;
  /** The waits of the processors' and actions' rates. */
  rateWaits(): Iterable<RateWaits>;
}

/** Group commit sizes (units of work per transaction). */
const commitBatchSizeBuckets = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000];
/** Group commit durations, seconds: 100 µs to 2.5 s. */
const commitDurationBuckets = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** The lateness recorder's own buckets, in seconds, so both histograms agree (0 ms to 1 h). */
const latenessBucketsSeconds = latenessBucketsMs.map((ms) => ms / 1000);

/**
 * The `process_*` and `nodejs_*` default metrics, in one registry per process: they describe
 * the process, not an owner, and prom-client's collectors (a GC observer, an event loop delay
 * monitor) cannot be stopped, so one set is made with the first owner's metrics and shared.
 * (prom-client counts `process_cpu_*_seconds_total` from then on, not from the process start.)
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    eventLoopDelay(processRegistry);
  }
  return processRegistry;
}

/** How often {@link eventLoopDelay} samples, ms. */
const eventLoopSampleMs = 20;
/** Event-loop delay buckets, seconds: 1 ms to 10 s. */
const eventLoopDelayBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * `chronolog_event_loop_delay_seconds`: how late a timer due every {@link eventLoopSampleMs} ran,
 * as a histogram. Unlike prom-client's `nodejs_eventloop_lag_*` gauges, which start again at every
 * scrape (two scrapers each see part, and a stall between scrapes is lost to the one that comes
 * second), it only grows: any scraper's rate over a window gives that window's percentiles, and a
 * stall during which /metrics could not answer is there, as one sample of its length, afterwards.
 */
function eventLoopDelay(registry: Registry): void {
  const delay = new Histogram({
    name: "chronolog_event_loop_delay_seconds",
    help: `How late the owner's event loop ran a timer due every ${eventLoopSampleMs} ms: what every request, stream and timer waited for at that moment.`,
    buckets: eventLoopDelayBuckets,
    registers: [registry],
  });
  let due = performance.now() + eventLoopSampleMs;
  setInterval(() => {
    const now = performance.now();
    delay.observe(Math.max(0, now - due) / 1000);
    due = now + eventLoopSampleMs;
  }, eventLoopSampleMs).unref();
}

/** `registry`'s metrics and the process's (`process_*`, `nodejs_*`), as {@link metricsHttpHandler} serves them (a standby's). */
export function withProcessMetrics(registry: Registry): { text(): Promise<string>; contentType: string } {
  processMetrics();
  return { text: () => Registry.merge([registry, processMetrics()]).metrics(), contentType: registry.contentType };
}

/** One owner's metrics. */
export class OwnerMetrics {
  /** This owner's registry (the `chronolog_*` metrics). */
  readonly registry = new Registry();
  /** Open Watch streams: the log service increments it when a stream starts and decrements it when it ends. */
  readonly watchers: Gauge;
  /** Open server streams by method (Watch, Subscribe, health Watch, reflection): counted from their start until the owner released them. */
  readonly streams: Gauge<"method">;

  constructor(sources: MetricsSources) {
    processMetrics();
    const registers = [this.registry];
    const perProcessor = ["processor"] as const;
    new Gauge({
      name: "chronolog_processor_lag_events",
      help: "Events in the log past the processor's ack floor (log head seq minus ack floor), whether or not the processor takes them.",
      labelNames: perProcessor,
      registers,
      collect() {
        this.reset();
        const head = sources.committer.head;
        for (const p of sources.processors()) this.set({ processor: p.spec.name }, Math.max(0, head - p.floor));
      },
    });
    new Gauge({
      name: "chronolog_processor_in_flight",
      help: "Deliveries of the processor sent to an executor and not yet acknowledged, or waiting for a retry.",
      labelNames: perProcessor,
      registers,
      collect() {
        this.reset();
        for (const p of sources.processors()) this.set({ processor: p.spec.name }, p.inFlight);
      },
    });
    // Counters kept by the engines: read at scrape time. A processor whose declaration changes
    // gets a new engine and starts again from 0, which Prometheus reads as a counter reset.
    new Counter({
      name: "chronolog_processor_retries_total",
      help: "Failed tries of the processor's deliveries that were retried (each recorded as processor.retried) since the owner started.",
      labelNames: perProcessor,
      registers,
      collect() {
        this.reset();
        for (const p of sources.processors()) this.inc({ processor: p.spec.name }, p.retries);
      },
    });
    new Counter({
      name: "chronolog_processor_failures_total",
      help: "Events the processor gave up on (tries used up or terminal; each recorded as processor.failed) since the owner started.",
      labelNames: perProcessor,
      registers,
      collect() {
        this.reset();
        for (const p of sources.processors()) this.inc({ processor: p.spec.name }, p.failures);
      },
    });
    new Counter({
      name: "chronolog_processor_passed_total",
      help: "Events the processor finished without a delivery as its concurrency's if_active says (skip: a delivery of its key was in flight; coalesce: a later event of its key replaced it) since the owner started.",
      labelNames: perProcessor,
      registers,
      collect() {
        this.reset();
        for (const p of sources.processors()) this.inc({ processor: p.spec.name }, p.passed);
      },
    });
    new Gauge({
      name: "chronolog_executors_connected",
      help: "Executor sessions (Subscribe streams past their hello) connected now.",
      registers,
      collect() {
        this.set(sources.executorsConnected());
      },
    });
    new Gauge({
      name: "chronolog_timers_pending",
      help: "Timers (schedules, runtime timers and delays) with a next due moment.",
      registers,
      async collect() {
        this.set(await sources.timersPending());
      },
    });
    const lateness = new Histogram({
      name: "chronolog_timer_lateness_seconds",
      help: "How late time's calls were made: call time minus due time, one observation per first call of an occurrence or pulse.",
      buckets: latenessBucketsSeconds,
      registers,
    });
    sources.lateness.onRecord((ms) => lateness.observe(ms / 1000));
    new Counter({
      name: "chronolog_timer_calls_sent_late_total",
      help: "Calls of time the owner had in time (an executor's credit taken before their moment) but sent to an executor that holds (hold_ms) after it, since the owner started: its commits and send path ran more than the clock's lookahead behind, so their lateness is the owner's. A rising count under load asks for a longer timers.lookahead_ms or more CPU. Calls due when set or triggered, or that waited for a credit past their moment, are not counted.",
      registers,
      collect() {
        this.reset();
        this.inc(sources.timeCallsSentLate());
      },
    });
    const batchSize = new Histogram({
      name: "chronolog_commit_batch_size",
      help: "Units of work (emits, cursor saves, timer changes, ...) per group commit transaction.",
      buckets: commitBatchSizeBuckets,
      registers,
    });
    const duration = new Histogram({
      name: "chronolog_commit_duration_seconds",
      help: "Time of one group commit, from BEGIN until it is durable (COMMIT, then the WAL's fdatasync off the event loop): how long its callers waited on the store.",
      buckets: commitDurationBuckets,
      registers,
    });
    sources.committer.onCommit((info) => {
      batchSize.observe(info.batchSize);
      duration.observe(info.durationMs / 1000);
    });
    this.watchers = new Gauge({ name: "chronolog_watchers", help: "Watch streams open now.", registers });
    this.streams = new Gauge({
      name: "chronolog_streams_open",
      help: "Server streams open now, by method, until the owner released them.",
      labelNames: ["method"],
      registers,
    });
    new Gauge({
      name: "chronolog_log_head_seq",
      help: "The seq of the last committed event.",
      registers,
      collect() {
        this.set(sources.committer.head);
      },
    });
    stageMetrics(this.registry, sources.stages);
    rateMetrics(this.registry, () => sources.rateWaits());
  }

  /** The content type of {@link text}: Prometheus text format 0.0.4. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** This owner's metrics and the process's, in Prometheus text format. */
  text(): Promise<string> {
    return Registry.merge([this.registry, processMetrics()]).metrics();
  }
}

/**
 * The `GET /metrics` handler for `listen({ extraHttpHandler })`, on the owner's port (HTTP/1.1
 * or HTTP/2, TLS when configured). Access follows the RPCs': an owner without principals
 * (loopback only, every caller is the local admin) serves anyone; with principals the scraper
 * must send `Authorization: Bearer <token>` of an admin principal (401 without a known token,
 * 403 for a non-admin). Other paths are not handled (false).
 */
export function metricsHttpHandler(metrics: Pick<OwnerMetrics, "text" | "contentType">, authenticator: Authenticator, logger: Logger): HttpHandler {
  return (req, res) => {
    const url = req.url ?? "";
    if (url !== "/metrics" && !url.startsWith("/metrics?")) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      answer(res, 405, "only GET /metrics\n", { Allow: "GET, HEAD" });
      return true;
    }
    try {
      const principal = authenticator.authenticate(header(req.headers.authorization));
      if (principal.role !== "admin") {
        answer(res, 403, `principal ${principal.name} (role ${principal.role}) may not read metrics; the admin role is needed\n`);
        return true;
      }
    } catch (e) {
      if (!(e instanceof ChronologError)) throw e;
      answer(res, 401, `${e.message}\n`, { "WWW-Authenticate": 'Bearer realm="chronolog"' });
      return true;
    }
    metrics.text().then(
      (body) => answer(res, 200, req.method === "HEAD" ? "" : body, { "Content-Type": metrics.contentType }),
      (err: unknown) => {
        logger.error({ err }, "collecting metrics failed");
        answer(res, 500, "collecting metrics failed\n");
      },
    );
    return true;
  };
}

/** The stage histograms (stages.ts) as `chronolog_*_seconds` histograms. */
function stageMetrics(registry: Registry, stages: Stages): void {
  const whole = (h: StageHistogram) => () => [[{}, h] as const];
  const perProcessor = (stage: "send" | "ack" | "cursor" | "latency") =>
    function* () {
      for (const [processor, s] of stages.processors()) yield [{ processor }, s[stage]] as const;
    };
  stageMetric(
    registry,
    "chronolog_emit_commit_seconds",
    "Emit, EmitBatch or Publish received (the owner began its checks) to its commit durable, one observation per event answered.",
    whole(stages.emit),
  );
  stageMetric(
    registry,
    "chronolog_delivery_send_seconds",
    "An event committed (durable) to its first delivery written to an executor's stream, by processor: waiting for a credit, the processor's concurrency, its key's earlier events, and the owner's turn. An event the log's tail in memory no longer holds (a backlog) counts from its commit time, to the millisecond.",
    perProcessor("send"),
  );
  stageMetric(
    registry,
    "chronolog_delivery_ack_seconds",
    "A delivery written to an executor's stream to its ack (or error) read by the owner, by processor: the transport both ways and the executor's handling.",
    perProcessor("ack"),
  );
  stageMetric(
    registry,
    "chronolog_delivery_cursor_seconds",
    "An event finished (acked, or given up on) to the ack floor past it saved (durable), by processor: the cursor's save delay (20 ms), earlier events still in flight, and the commit.",
    perProcessor("cursor"),
  );
  stageMetric(
    registry,
    "chronolog_delivery_latency_seconds",
    "An event committed (durable) to its first delivery's ack (or error) read by the owner, by processor: the send and ack stages of one event together (retries and redeliveries are not counted). The console's processors view shows its p50 and p99 over the last minute.",
    perProcessor("latency"),
  );
  stageMetric(
    registry,
    "chronolog_timer_claim_seconds",
    "A first call of time (timers, schedules, delays): its due moment to its occurrence's claim durable; 0 when claimed ahead of its moment (the lookahead).",
    whole(stages.timer.claim),
  );
  stageMetric(
    registry,
    "chronolog_timer_send_seconds",
    "A first call of time: its claim, or its due moment if later, to its invocation written to the executor's stream; 0 when written ahead of its moment (to an executor that holds).",
    whole(stages.timer.send),
  );
  stageMetric(
    registry,
    "chronolog_timer_start_seconds",
    "A first call of time: its invocation written, or its due moment if later, to its action's start (a held one's hold end plus the executor's reported delay). The claim, send and start stages add up to chronolog_timer_lateness_seconds.",
    whole(stages.timer.start),
  );
}

/** Bucket bounds of the stage histograms, seconds. */
const stageBucketsSeconds = stageBucketsMs.map((ms) => ms / 1000);

/**
 * A histogram whose counts are kept in {@link StageHistogram}s and read at scrape time. It is
 * handed to prom-client as a metric of its own, answering `get()` as prom-client's Histogram does
 * (buckets, `_sum` and `_count` per label set), so observing costs neither a label lookup nor an
 * allocation on the delivery path.
 */
function stageMetric(registry: Registry, name: string, help: string, read: () => Iterable<readonly [Record<string, string>, StageHistogram]>): void {
  const metric = {
    name,
    help,
    type: "histogram",
    aggregator: "sum",
    async get() {
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      for (const [labels, h] of read()) {
        let cumulative = 0;
        stageBucketsSeconds.forEach((le, i) => values.push({ labels: { le, ...labels }, value: (cumulative += h.counts[i]), metricName: `${name}_bucket` }));
        values.push({ labels: { le: "+Inf", ...labels }, value: h.count, metricName: `${name}_bucket` });
        values.push({ labels, value: h.sumMs / 1000, metricName: `${name}_sum` });
        values.push({ labels, value: h.count, metricName: `${name}_count` });
      }
      return { name, help, type: "histogram", aggregator: "sum", values };
    },
    reset() {},
  };
  registry.registerMetric(metric as unknown as Metric);
}

function header(value: string | string[] | undefined): string | null {
  return typeof value === "string" ? value : null;
}

function answer(res: HttpResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Cache-Control", "no-store");
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  (res as { end(chunk?: string): void }).end(body);
}

/**
 * `chronolog_store_waits_total` and `chronolog_store_wait_seconds_total` by connection: the round
 * trips to the database the owner's thread waited for (PostgreSQL's synchronous calls), and the
 * time it spent waiting. While it waits it serves nothing else: a database far from the owner
 * shows here first.
 */
export function storeWaitMetrics(registry: Registry, waits: () => { connection: string; count: number; ms: number }[]): void {
  new Counter({
    name: "chronolog_store_waits_total",
    help: "Round trips to the database the owner's thread waited for, by connection (writer: the committer's; reader: reads of what is committed).",
    labelNames: ["connection"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const w of waits()) this.inc({ connection: w.connection }, w.count);
    },
  });
  new Counter({
    name: "chronolog_store_wait_seconds_total",
    help: "Time the owner's thread spent waiting for the database's answers, by connection.",
    labelNames: ["connection"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const w of waits()) this.inc({ connection: w.connection }, w.ms / 1000);
    },
  });
}

/**
 * `chronolog_store_async_reads_total` and `chronolog_store_async_round_trips_total`: PostgreSQL's
 * reads outside the committer (pages of the log, events by id) that the owner's thread did not
 * wait for, and the round trips they went in (reads asked for together share one).
 */
export function storeAsyncReadMetrics(registry: Registry, counts: () => { reads: number; roundTrips: number }): void {
  new Counter({
    name: "chronolog_store_async_reads_total",
    help: "Reads of the database outside the committer that the owner's thread did not wait for.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counts().reads);
    },
  });
  new Counter({
    name: "chronolog_store_async_round_trips_total",
    help: "Round trips the reads of chronolog_store_async_reads_total went in (reads asked for together share one).",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counts().roundTrips);
    },
  });
}
