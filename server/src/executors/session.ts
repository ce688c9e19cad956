import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { SubscribeResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import type { Principal } from "../auth/principal.js";
import { eventToProto } from "../proto-values.js";
import { deliveryWritten } from "../stages.js";
import { deliveriesMessage, type DeliveryOut } from "./delivery-wire.js";
import { traceCarrier } from "../tracing/trace-context.js";
import { Outbox } from "./outbox.js";

/** A message from the owner to an executor. */
export type OwnerMessage = MessageInitShape<typeof SubscribeResponseSchema>;

/** A queued message, or a function that builds it when the stream writes it (times in it are counted from then). */
export type QueuedMessage = OwnerMessage | (() => OwnerMessage);

/** What an executor said it hosts in its hello. */
export interface Hosting {
  executor: string;
  instanceId: string;
  processors: string[];
  actions: string[];
  pulses: string[];
  /** Deliveries and invocations it accepts at once. */
  credits: number;
  /** It understands DeliveryBatch messages. */
  batches: boolean;
  /** It understands InvocationBatch messages. */
  invocationBatches: boolean;
  /** It honours Invocation.hold_ms: time's calls may be sent ahead of their moment. */
  holds: boolean;
  /** Deliveries carry event data as JSON text (Event.data_json), not a Struct. */
  dataJson?: boolean;
  /** The SDK it is built with (`typescript`, `python`, ...), "" when its hello did not say. */
  sdk?: string;
  /** That SDK's version, "" when its hello did not say. */
  sdkVersion?: string;
}

/**
 * The most credits one session holds: deliveries and invocations in flight at once, from its
 * hello's `credits` and every `Credit` after it. More is clamped to it (the hub sends a
 * CREDITS_CLAMPED notice): far above what one stream can usefully run at once (executors run
 * 16 by default), and well within ListExecutors' uint32 `credits`, which a sum of uint32s
 * (hello 4,294,967,295 plus a Credit of 1) would overflow.
 */
export const maxCredits = 65_536;

/** Most deliveries, or invocations, put in one batch message. */
const maxBatch = 256;
/**
 * Most bytes of events (their stored JSON, as log pages count them) or of action inputs (canonical
 * JSON) one batch message holds, unless its one item is larger: a large item is still sent, alone.
 * 1 MiB keeps a batch under the 4 MiB receive limit of gRPC clients' defaults (grpc-go,
 * grpc-js, grpcio), protobuf's Struct encoding included, as ReadLog's pages do.
 */
const batchByteBudget = 1024 * 1024;

/** A delivery as queued, itself (no wrapper per delivery): `bytes` weighs its event in a batch ({@link batchByteBudget}). */
export type QueuedDelivery = DeliveryOut & { bytes: number };

/**
 * A message as queued, or a delivery (written as its Delivery when the stream writes it); `bytes`
 * weighs a delivery's event or an invocation's input (0 for others).
 */
export type Queued = { message: QueuedMessage; bytes: number } | QueuedDelivery;

/** What one batch message holds, of one kind: deliveries, or invocations. */
type Run = { kind: "delivery"; items: DeliveryOut[] } | { kind: "invocation"; items: unknown[] };

/**
 * The messages queued at one moment, as written: built ones built now; runs of deliveries in
 * DeliveryBatch messages and runs of invocations in InvocationBatch messages for an executor that
 * understands them (`hosting`), at most {@link maxBatch} items and {@link batchByteBudget} bytes
 * each (always at least one item). Other messages keep their place, and so does the order of all.
 * Deliveries go as wire bytes written from the stored event for an executor taking data as JSON
 * text (delivery-wire.ts), as messages with a Struct otherwise; each is stamped written now.
 */
export function ownerMessages(queued: Queued[], hosting: Pick<Hosting, "batches" | "invocationBatches" | "dataJson">): OwnerMessage[] {
  const out: OwnerMessage[] = [];
  let run: Run | undefined;
  let runBytes = 0;
  let now = 0;
  const flush = () => {
    if (run?.kind === "delivery") out.push(hosting.dataJson ? deliveriesMessage(run.items) : deliveriesInit(run.items));
    else if (run?.kind === "invocation")
      out.push(
        run.items.length === 1
          ? ({ message: { case: "invocation", value: run.items[0] } } as OwnerMessage)
          : { message: { case: "invocations", value: { invocations: run.items as never[] } } },
      );
    run = undefined;
    runBytes = 0;
  };
  /** Adds `item` to the run of its kind, after the run so far when it is of another kind or full (or batches are off: runs of one). */
  const add = (kind: Run["kind"], item: unknown, bytes: number, batches: boolean) => {
    if (!batches || run?.kind !== kind || run.items.length === maxBatch || runBytes + bytes > batchByteBudget) flush();
    run ??= { kind, items: [] } as Run;
    (run.items as unknown[]).push(item);
    runBytes += bytes;
  };
  for (const q of queued) {
    if (!("message" in q)) {
      add("delivery", q, q.bytes, hosting.batches);
      if (q.timed) deliveryWritten(q.timed, (now ||= performance.now()));
      continue;
    }
    const m = typeof q.message === "function" ? q.message() : q.message;
    if (m.message?.case === "invocation" && hosting.invocationBatches) add("invocation", m.message.value, q.bytes, true);
    else {
      flush();
      out.push(m);
    }
  }
  flush();
  return out;
}

/** One Delivery, or a DeliveryBatch, as a message built with the events' data as a Struct. */
function deliveriesInit(items: DeliveryOut[]): OwnerMessage {
  const init = (d: DeliveryOut) => ({
    deliveryId: d.deliveryId,
    processor: d.processor,
    event: eventToProto(d.event),
    attempt: d.attempt,
    deadline: timestampFromMs(d.deadlineMs),
    key: d.key,
    ...(d.trace && traceCarrier(d.trace)),
    debounced: d.debounced ?? 0,
  });
  return items.length === 1
    ? { message: { case: "delivery", value: init(items[0]) } }
    : { message: { case: "deliveries", value: { deliveries: items.map(init) } } };
}

/**
 * One connected executor stream. `inFlight` holds the ids of the
 * deliveries and invocations sent and not yet answered: the session takes
 * new work only while `free > 0`. Times in ms since the epoch.
 */
export class ExecutorSession {
  readonly id = randomUUID();
  readonly outbox = new Outbox<Queued>();
  readonly inFlight = new Set<string>();
  /**
   * The ids in `inFlight` the owner no longer waits for: past their timeout and grace (their
   * event or call went on without them). Their credits stay held until answered; they leave with
   * the answer.
   */
  readonly abandoned = new Set<string>();
  readonly processors: Set<string>;
  readonly actions: Set<string>;
  lastSeenMs: number;
  closed = false;
  /** Reserved for a delivery tried alone (a processor's isolated retry): it takes no new work meanwhile. */
  reserved = false;
  /** The executor said it is stopping (a Stopping message): it takes no new work, and finishes what it holds. */
  stopping = false;
  /** The stream clock's origin (`performance.now()` ms when the session opened). */
  private readonly openedAt = performance.now();
  private granted: number;

  constructor(
    readonly hosting: Hosting,
    readonly principal: Principal,
    readonly connectedAtMs: number,
  ) {
    this.processors = new Set(hosting.processors);
    this.actions = new Set(hosting.actions);
    this.granted = Math.min(hosting.credits, maxCredits);
    this.lastSeenMs = connectedAtMs;
  }

  /** Deliveries and invocations it accepts at once: at most {@link maxCredits}. */
  get credits(): number {
    return this.granted;
  }

  /** Adds `n` credits (a Credit message), up to {@link maxCredits}; returns how many were clamped away (0 when none). */
  addCredits(n: number): number {
    const total = this.granted + n;
    this.granted = Math.min(total, maxCredits);
    return total - this.granted;
  }

  /** Work in flight the owner still waits for (not {@link abandoned}). */
  get live(): number {
    return this.inFlight.size - this.abandoned.size;
  }

  /** Work this session can still take (none while reserved, or once stopping). */
  get free(): number {
    return this.closed || this.reserved || this.stopping ? 0 : this.credits - this.inFlight.size;
  }

  /** The stream's clock: ms (with a fraction) since the session opened, monotonic (Invocation.written_at_ms). */
  streamClockMs(): number {
    return performance.now() - this.openedAt;
  }

  /**
   * Queues a message to the executor (or a function building it when written); `bytes`: what a
   * delivery's event or an invocation's input weighs in a batch ({@link batchByteBudget}).
   */
  send(message: QueuedMessage, bytes = 0): void {
    this.outbox.push({ message, bytes });
  }

  /** Queues a delivery; its `bytes`: its event's stored bytes, as a batch weighs it ({@link batchByteBudget}). */
  deliver(delivery: QueuedDelivery): void {
    this.outbox.push(delivery);
  }
}
