import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { currentTraceHeaders, outsideTraces } from "./tracing.js";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { ErrorInfoSchema, BadRequestSchema } from "./gen/google/rpc/error_details_pb.js";
import {
  EmitRequestSchema,
  EmitResponseSchema,
  type EmitResponse,
  type LogService,
  type PublishAck,
  type PublishEmitSchema,
  type PublishRequestSchema,
} from "./gen/chronolog/v1/log_pb.js";
import type { Actor } from "./gen/chronolog/v1/event_pb.js";
import { messageJsonProblem } from "./json-check.js";

/** One emit of {@link Publisher.emit}. */
export interface PublishedEmit {
  type: string;
  data: JsonObject;
  /** The event id: given, or made here (so that sending it again after a break writes it once). */
  id?: string;
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
}

/** How a {@link Publisher} behaves. */
export interface PublisherOptions {
  /** Close the stream after this many ms without emits in flight (default 200); the next emit opens a new one. */
  idleMs?: number;
  /** Give up re-opening a broken stream after this many ms without a welcome: its emits fail with the last error (default 30,000). */
  reconnectForMs?: number;
}

interface Item {
  ref: bigint;
  emit: PublishedEmit & { id: string };
  json: Uint8Array;
  /** The trace context it was emitted in, sent with it (the stream's own carries none). */
  trace: { traceparent: string; tracestate: string } | undefined;
  resolve(response: EmitResponse): void;
  reject(error: unknown): void;
}

/** Data larger than this (JSON bytes) is emitted with a unary Emit: one such event would fill a stream message. */
const largeDataBytes = 256 * 1024;
/** A stream message holds emits of at most about this many bytes of data. */
const messageBytes = 512 * 1024;
/** Stream errors after which the stream is opened again and the emits in flight are sent again (with their ids). */
const retryable = new Set([Code.Unavailable, Code.Internal, Code.Unknown, Code.Aborted, Code.Canceled, Code.DeadlineExceeded]);

const encoder = new TextEncoder();

/**
 * The client side of LogService.Publish (the SDK's default emit path): one stream per client,
 * opened on first use, many emits in flight on it, each resolved by its ack once durable. Emits
 * go out in order, batched per event-loop turn into one message, never more unacknowledged than
 * the window the owner granted (before its welcome, one). Every emit carries an id (made here
 * when none was given), so after a break (the owner restarted, the connection dropped) the
 * stream is opened again and the emits not yet acknowledged are sent again under their ids: the
 * owner answers those it already has from the log (existing), and writes the others once.
 * An owner without Publish (UNIMPLEMENTED) makes it fall back to unary Emit for good.
 */
export class Publisher {
  private readonly queue: Item[] = [];
  /** Sent on the current stream, not yet acknowledged, in order. */
  private inFlight: Item[] = [];
  private nextRef = 1n;
  private stream: { push(message: MessageInitShape<typeof PublishRequestSchema>): void; close(): void; abort: AbortController } | undefined;
  private window = 1;
  private flushing = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private brokenSince: number | undefined;
  private unary = false;
  private retryDelayMs = 50;

  constructor(
    private readonly rawLog: Client<typeof LogService>,
    private readonly checkedLog: Client<typeof LogService>,
    private readonly options: PublisherOptions = {},
  ) {}

  /** Emits one event; resolves with the stored event (as Emit answers) once durable. */
  emit(emit: PublishedEmit): Promise<EmitResponse> {
    const request = { type: emit.type, data: emit.data, id: emit.id ?? "", actor: emit.actor };
    const problem = messageJsonProblem(EmitRequestSchema, request);
    if (problem) return Promise.reject(new ConnectError(problem, Code.InvalidArgument));
    const json = encoder.encode(JSON.stringify(emit.data ?? {}));
    if (this.unary || json.length > largeDataBytes) return this.checkedLog.emit(request);
    return new Promise((resolve, reject) => {
      this.queue.push({ ref: this.nextRef++, emit: { ...emit, id: emit.id || newEventId() }, json, trace: currentTraceHeaders(), resolve, reject });
      clearTimeout(this.idleTimer);
      this.schedule();
    });
  }

  /** Ends the stream now if nothing is in flight (the next emit opens another). */
  close(): void {
    clearTimeout(this.idleTimer);
    if (this.queue.length === 0 && this.inFlight.length === 0) this.retire();
  }

  /** Half-closes the current stream (the owner then ends it); the next emit opens a new one. */
  private retire(): void {
    this.stream?.close();
    this.stream = undefined;
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      this.flushing = false;
      this.pump();
    });
  }

  /** Sends queued emits while the window has room, one message per call. */
  private pump(): void {
    if (this.queue.length === 0) return;
    if (!this.stream) return this.open();
    let room = this.window - this.inFlight.length;
    while (room > 0 && this.queue.length > 0) {
      const emits: MessageInitShape<typeof PublishEmitSchema>[] = [];
      let bytes = 0;
      while (room > 0 && this.queue.length > 0 && (bytes === 0 || bytes + this.queue[0].json.length <= messageBytes)) {
        const item = this.queue.shift()!;
        this.inFlight.push(item);
        emits.push({ ref: item.ref, event: { type: item.emit.type, dataJson: item.json, id: item.emit.id, actor: item.emit.actor, ...item.trace } });
        bytes += item.json.length;
        room--;
      }
      this.stream.push({ emits });
    }
  }

  private open(): void {
    const abort = new AbortController();
    const outbox: MessageInitShape<typeof PublishRequestSchema>[] = [];
    let wake: (() => void) | undefined;
    let closed = false;
    async function* requests() {
      for (;;) {
        while (outbox.length > 0) yield outbox.shift()!;
        if (closed) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    }
    const stream = {
      abort,
      push: (message: MessageInitShape<typeof PublishRequestSchema>) => {
        outbox.push(message);
        wake?.();
      },
      close: () => {
        closed = true;
        wake?.();
      },
    };
    this.stream = stream;
    this.window = 1; // until the welcome says
    // Opened outside the trace of the emit that opens it: each emit carries its own (EmitRequest.traceparent).
    void this.run(
      stream,
      outsideTraces(() => this.rawLog.publish(requests(), { signal: abort.signal })),
    );
    this.pump();
  }

  private async run(
    stream: NonNullable<Publisher["stream"]>,
    responses: AsyncIterable<{ message: { case: string | undefined; value?: unknown } }>,
  ): Promise<void> {
    try {
      for await (const response of responses) {
        if (response.message.case === "welcome") {
          this.window = Math.max(1, (response.message.value as { window: number }).window);
          this.brokenSince = undefined;
          this.retryDelayMs = 50;
          this.pump();
        } else if (response.message.case === "acks") {
          for (const ack of (response.message.value as { acks: PublishAck[] }).acks) this.answer(ack);
          this.pump();
          this.idleCheck(stream);
        }
      }
      this.ended(
        stream,
        this.inFlight.length > 0 ? new ConnectError("the owner ended the publish stream with emits unacknowledged", Code.Unavailable) : undefined,
      );
    } catch (e) {
      this.ended(stream, ConnectError.from(e));
    }
  }

  private answer(ack: PublishAck): void {
    const item = this.inFlight.shift();
    if (!item || item.ref !== ack.ref) {
      // Acks come in order: anything else is a broken stream; send everything again.
      if (item) this.inFlight.unshift(item);
      this.stream?.abort.abort();
      return;
    }
    if (ack.error) {
      const e = ack.error;
      const details = [
        { desc: ErrorInfoSchema, value: { reason: e.reason, domain: "chronolog.dev", metadata: e.metadata } },
        ...(e.fieldViolations.length > 0 ? [{ desc: BadRequestSchema, value: { fieldViolations: e.fieldViolations } }] : []),
      ];
      item.reject(new ConnectError(e.message, e.code as Code, undefined, details));
      return;
    }
    item.resolve(
      create(EmitResponseSchema, {
        event: { seq: ack.seq, id: ack.id, type: item.emit.type, data: item.emit.data, cause: "", actor: ack.actor, at: ack.at },
        existing: ack.existing,
      }),
    );
  }

  /** Closes an idle stream after `idleMs` (the process may then exit; the next emit opens one). */
  private idleCheck(stream: NonNullable<Publisher["stream"]>): void {
    if (this.queue.length > 0 || this.inFlight.length > 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.stream === stream && this.queue.length === 0 && this.inFlight.length === 0) this.retire();
    }, this.options.idleMs ?? 200);
  }

  /** The stream ended (`error` undefined: cleanly). Emits in flight go back to the queue's front and are sent again on a new stream. */
  private ended(stream: NonNullable<Publisher["stream"]>, error: ConnectError | undefined): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    stream.close();
    this.queue.unshift(...this.inFlight);
    this.inFlight = [];
    if (this.queue.length === 0) return;
    if (error?.code === Code.Unimplemented) {
      // An owner without Publish: emit one by one from now on.
      this.unary = true;
      for (const item of this.queue.splice(0))
        this.checkedLog.emit({ type: item.emit.type, data: item.emit.data, id: item.emit.id, actor: item.emit.actor }).then(item.resolve, item.reject);
      return;
    }
    const now = Date.now();
    this.brokenSince ??= now;
    if (error && (!retryable.has(error.code) || now - this.brokenSince > (this.options.reconnectForMs ?? 30_000))) {
      for (const item of this.queue.splice(0)) item.reject(error);
      this.brokenSince = undefined;
      return;
    }
    const delay = this.retryDelayMs;
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, 1_000);
    setTimeout(() => this.pump(), delay);
  }
}

/**
 * A fresh event id: a UUIDv7 (time-ordered, as the owner makes them, so the log's id index takes
 * inserts at its end), from the millisecond clock and random bytes.
 */
export function newEventId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  const ms = Date.now();
  bytes[0] = Math.floor(ms / 2 ** 40) & 0xff;
  bytes[1] = Math.floor(ms / 2 ** 32) & 0xff;
  bytes[2] = (ms >>> 24) & 0xff;
  bytes[3] = (ms >>> 16) & 0xff;
  bytes[4] = (ms >>> 8) & 0xff;
  bytes[5] = ms & 0xff;
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
