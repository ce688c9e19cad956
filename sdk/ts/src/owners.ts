// Several owners behind one client: one leads, the others are standbys that serve reads and
// refuse every other call naming the leader. The client sends each call to the owner it believes
// leads (reads too, unless it reads from any owner), follows a standby's pointer to the leader,
// and moves on to the next owner when one cannot be reached.

import type { DescMessage, DescMethodStreaming, MessageInitShape } from "@bufbuild/protobuf";
import type { ContextValues, Transport } from "@connectrpc/connect";
import { invalid, isHttpUrl, shown } from "./options.js";
import { ownerFailureOf, type OwnerFailure } from "./owner-failures.js";
import { sleep } from "./sleep.js";

/** How long a call (or a broken stream) is tried across the owners before its error is the caller's, by default. */
export const defaultFailoverTimeoutMs = 15_000;

/** The longest pause between two tries of a call across the owners ({@link Owners.pauseMs}). */
const maxPauseMs = 250;

/**
 * How long after an owner was found unreachable or lost a standby's pointer to it is not followed
 * (ms): the standby still names the leader its lease has not yet outlived, and takes over within it.
 */
const lostLeaderMs = 5_000;

/**
 * The owner URLs in `url`: one URL, a comma-separated list of them or an array. Throws a
 * ConnectError INVALID_ARGUMENT naming the one that is not an http:// or https:// URL
 * (`url[1] must be ...` in a list).
 */
export function ownerUrlsOf(url: unknown): string[] {
  const list: unknown[] = Array.isArray(url) ? url : typeof url === "string" && url.includes(",") ? url.split(",").map((u) => u.trim()) : [url];
  if (list.length === 0) throw invalid("url must be an http:// or https:// URL, e.g. http://127.0.0.1:50051 (got an empty array)");
  list.forEach((u, i) => {
    if (typeof u !== "string" || !isHttpUrl(u))
      throw invalid(`url${list.length > 1 ? `[${i}]` : ""} must be an http:// or https:// URL, e.g. http://127.0.0.1:50051 (got ${shown(u)})`);
  });
  return list as string[];
}

/** `a` and `b` name the same owner (`http://h:1` and `http://h:1/` do). */
function sameOwner(a: string, b: string): boolean {
  return new URL(a).href.replace(/\/+$/, "") === new URL(b).href.replace(/\/+$/, "");
}

/** Where a client's reads go: with its other calls to the `leader` (the default), or to `any` owner, a standby included. */
export type ReadsFrom = "leader" | "any";

/**
 * The owners a client knows (those given, then leaders named by standbys), the one calls go to
 * now, the one reads go to now when they may go to any owner, and a transport for each (made on
 * first use).
 */
export class Owners {
  private readonly urls: string[];
  private current = 0;
  /** The owner reads go to ({@link reads} `any`): the first given that answers. */
  private reading = 0;
  private readonly transports = new Map<string, Transport>();
  /** When calls last found each owner unreachable or lost it (Date.now()), by URL as given or named. */
  private readonly failedAt = new Map<string, number>();

  constructor(
    urls: string[],
    private readonly make: (url: string) => Transport,
    readonly failoverTimeoutMs: number,
    /** `any`: reads go to the owners in the order given, a standby included (see {@link pickRead}). */
    readonly reads: ReadsFrom = "leader",
  ) {
    this.urls = [...urls];
  }

  /** The owner calls go to now, and its transport. */
  pick(): { url: string; transport: Transport } {
    return this.at(this.urls[this.current]);
  }

  /**
   * The owner a read goes to now: with {@link reads} `any`, the first owner given that answers
   * (a standby serves reads of what is committed), else the one other calls go to.
   */
  pickRead(): { url: string; transport: Transport } {
    return this.reads === "any" ? this.at(this.urls[this.reading]) : this.pick();
  }

  private at(url: string): { url: string; transport: Transport } {
    let transport = this.transports.get(url);
    if (!transport) this.transports.set(url, (transport = this.make(url)));
    return { url, transport };
  }

  /** More than one owner is known (given, or named as the leader). */
  get several(): boolean {
    return this.urls.length > 1;
  }

  /**
   * Moves on after `failure` of a call made at `url`: to the leader a standby named (added to the
   * owners when it was not given: it is the URL the leader advertises), else to the next owner,
   * unless another call already moved on from `url`; but a standby naming an owner lost or
   * unreachable in the last {@link lostLeaderMs} is kept (it is about to take over: a frozen leader's
   * calls would wait out another ping there). Reads that go to any owner leave an owner
   * that could not be reached or was lost for the next one; a standby's refusal does not move
   * them (it serves reads: the one it refused goes to the leader).
   */
  route(url: string, failure: OwnerFailure): void {
    if (failure.kind !== "standby") this.failedAt.set(new URL(url).href, Date.now());
    const leader = failure.kind === "standby" ? failure.leader : undefined;
    // A standby that still names the leader just lost is about to take over: try it again (after the pause) rather than the lost one.
    if (leader !== undefined && Date.now() - (this.failedAt.get(new URL(leader).href) ?? -Infinity) < lostLeaderMs) {
      const standby = this.urls.indexOf(url);
      if (standby >= 0) this.current = standby;
      return;
    }
    if (leader !== undefined && !sameOwner(leader, url)) {
      const known = this.urls.findIndex((u) => sameOwner(u, leader));
      this.current = known >= 0 ? known : this.urls.push(leader) - 1;
    } else if (this.urls[this.current] === url) {
      this.current = (this.current + 1) % this.urls.length;
    }
    if (failure.kind !== "standby" && this.urls[this.reading] === url) this.reading = (this.reading + 1) % this.urls.length;
  }

  /**
   * A call that failed so may be made again: nothing was done, and a leader (named, or to come) or
   * another owner may take it; or, when `repeatable` (making it twice does what making it once
   * does), the owner was lost during it.
   */
  retries(failure: OwnerFailure, repeatable = false): boolean {
    return failure.kind === "standby" || ((failure.kind === "unreached" || (failure.kind === "lost" && repeatable)) && this.several);
  }

  /**
   * The pause before try `n` (1: the first retry) of one call: none until each owner had its turn,
   * then 100 ms doubling up to {@link maxPauseMs}: until a standby takes over, tries alternate
   * between it and the lost leader it names, so a longer pause finds the new leader later.
   */
  pauseMs(n: number): number {
    return n < this.urls.length ? 0 : Math.min(100 * 2 ** (n - this.urls.length), maxPauseMs);
  }
}

const ownersOfTransport = new WeakMap<Transport, Owners>();

/** The owners behind a transport of {@link followingTransport} (undefined for any other). */
export function ownersOf(transport: Transport): Owners | undefined {
  return ownersOfTransport.get(transport);
}

/**
 * A transport that sends each call to the owner {@link Owners.pick} names. A unary call, or a
 * server stream (its one request kept) until its first response, that a standby refused or that
 * reached no owner is made again at the leader named or the next owner, with pauses (see
 * {@link Owners.pauseMs}), for up to `failoverTimeoutMs` (and within the call's own deadline);
 * then, or for any other failure, the caller gets the error. A failure that leaves the owner in
 * doubt (the connection dropped, a ping unanswered, the owner is stopping) is the caller's at
 * once, unless the call may be made twice (a read, an Emit naming its id), and the next call goes
 * to the next owner. Client and bidi streams are not made again here (their requests are
 * consumed): their users open them again, and the failure that ended them has moved the
 * transport on.
 */
export function followingTransport(owners: Owners): Transport {
  const transport: Transport = {
    unary(method, signal, timeoutMs, header, input, contextValues) {
      return attempts(
        owners,
        signal,
        timeoutMs,
        (t, ms) => t.unary(method, signal, ms, header, input, contextValues),
        repeatable(method.name, input),
        isRead(method),
      );
    },
    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ) {
      if (method.methodKind === "server_streaming") {
        const messages: MessageInitShape<I>[] = [];
        for await (const message of input) messages.push(message);
        return attempts(
          owners,
          signal,
          timeoutMs,
          async (t, ms, url) => {
            const response = await t.stream(method, signal, ms, header, iterate(messages), contextValues);
            return { ...response, message: routed(await withFirst(response.message), owners, url) };
          },
          false,
          isRead(method),
        );
      }
      const { url, transport: t } = owners.pick();
      try {
        const response = await t.stream(method, signal, timeoutMs, header, input, contextValues);
        return { ...response, message: routed(response.message, owners, url) };
      } catch (e) {
        routeAfter(e, owners, url);
        throw e;
      }
    },
  };
  ownersOfTransport.set(transport, owners);
  return transport;
}

/**
 * Makes `call` at the current owner until it succeeds or its failure is the caller's (see
 * {@link followingTransport}); a `read` at the owner reads go to ({@link Owners.pickRead}), and
 * at the leader once a standby refused it.
 */
async function attempts<T>(
  owners: Owners,
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  call: (transport: Transport, timeoutMs: number | undefined, url: string) => Promise<T>,
  repeatable = false,
  read = false,
): Promise<T> {
  const started = performance.now();
  const deadline = timeoutMs !== undefined && timeoutMs > 0 ? started + timeoutMs : undefined;
  let refused = false;
  for (let n = 1; ; n++) {
    const { url, transport } = read && !refused ? owners.pickRead() : owners.pick();
    try {
      return await call(transport, n === 1 || deadline === undefined ? timeoutMs : Math.ceil(deadline - performance.now()), url);
    } catch (e) {
      const failure = routeAfter(e, owners, url);
      if (!failure) throw e;
      refused ||= failure.kind === "standby";
      const pause = owners.pauseMs(n);
      const at = performance.now() + pause;
      if (!owners.retries(failure, repeatable) || signal?.aborted || at - started > owners.failoverTimeoutMs || (deadline !== undefined && at + 1 >= deadline))
        throw e;
      if (pause > 0) await sleep(pause, signal);
      if (signal?.aborted) throw e;
    }
  }
}

/**
 * Whether `method` is a read of Chronolog's API (Get*, List*, Read*, Find*, Watch): what a
 * standby may serve. (One it does not, ListExecutors say, it refuses naming the leader.)
 */
function isRead(method: { name: string; parent: { typeName: string } }): boolean {
  return method.parent.typeName.startsWith("chronolog.") && (/^(Get|List|Read|Find)[A-Z]/.test(method.name) || method.name === "Watch");
}

/**
 * Whether unary call `method` with `input` may be made twice for once: a read, an Emit that names
 * its event's id, a Delay that names its delay id or is made under a cause, or a batch of such
 * (the owner answers a second one from the log). The others go once: a lost one's error is the
 * caller's, who knows whether to make it again.
 */
function repeatable(method: string, input: unknown): boolean {
  if (/^(Get|List|Read|Find)[A-Z]/.test(method)) return true;
  const named = (value: unknown, field: string) =>
    typeof (value as Record<string, unknown>)[field] === "string" && (value as Record<string, string>)[field] !== "";
  const delay = (value: unknown) => named(value, "delayId") || (value as { cause?: unknown }).cause !== undefined;
  const each = (field: string, ok: (item: unknown) => boolean) => {
    const items = (input as Record<string, unknown>)[field];
    return Array.isArray(items) && items.length > 0 && items.every(ok);
  };
  if (method === "Emit") return named(input, "id");
  if (method === "EmitBatch") return each("events", (e) => named(e, "id"));
  if (method === "Delay") return delay(input);
  if (method === "DelayBatch") return each("delays", delay);
  return false;
}

/** Moves `owners` on after `error` of a call made at `url`, when it is an owner failure (returned). */
function routeAfter(error: unknown, owners: Owners, url: string): OwnerFailure | undefined {
  const failure = ownerFailureOf(error);
  if (failure) owners.route(url, failure);
  return failure;
}

/** A stream's responses; the error that ends them moves `owners` on (see {@link routeAfter}). */
function routed<T>(messages: AsyncIterable<T>, owners: Owners, url: string): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const inner = messages[Symbol.asyncIterator]();
      const failed = (e: unknown): never => {
        routeAfter(e, owners, url);
        throw e;
      };
      return {
        next: () => inner.next().catch(failed),
        return: (value?: unknown) => inner.return?.(value) ?? Promise.resolve({ done: true, value: undefined }),
        throw: (e?: unknown) => inner.throw?.(e) ?? Promise.reject(e),
      };
    },
  };
}

/** `messages` once its first result came: rejects with the error that ended it before any (a standby's refusal comes so). */
async function withFirst<T>(messages: AsyncIterable<T>): Promise<AsyncIterable<T>> {
  const inner = messages[Symbol.asyncIterator]();
  let first: Promise<IteratorResult<T>> | undefined = Promise.resolve(await inner.next());
  const iterator: AsyncIterator<T> = {
    next: () => {
      const result = first ?? inner.next();
      first = undefined;
      return result;
    },
    return: (value?: unknown) => inner.return?.(value) ?? Promise.resolve({ done: true, value: undefined }),
    throw: (e?: unknown) => inner.throw?.(e) ?? Promise.reject(e),
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

async function* iterate<T>(items: T[]): AsyncIterable<T> {
  yield* items;
}

/**
 * The breaks of one stream that is opened again after them (a watch, from after the last event
 * it gave): whether the last break may be followed by another opening, and after what pause. A
 * stream that got something since its last break starts afresh ({@link progressed}).
 */
export class Reopening {
  private brokenSince: number | undefined;
  private breaks = 0;

  constructor(private readonly owners: Owners | undefined) {}

  /** The stream got something. */
  progressed(): void {
    this.brokenSince = undefined;
    this.breaks = 0;
  }

  /**
   * After `error` ended the stream: waits the pause (less if `signal` aborts) and resolves true
   * when it may be opened again (a standby refused it, or, with several owners, the owner could not
   * be reached or was lost, within `failoverTimeoutMs` of the first break); false when the error
   * is the caller's.
   */
  async again(error: unknown, signal: AbortSignal): Promise<boolean> {
    const failure = ownerFailureOf(error);
    if (!this.owners || !failure || !(failure.kind === "standby" || this.owners.several)) return false;
    const now = performance.now();
    this.brokenSince ??= now;
    const pause = this.owners.pauseMs(++this.breaks);
    if (now + pause - this.brokenSince > this.owners.failoverTimeoutMs) return false;
    if (pause > 0) await sleep(pause, signal);
    return true;
  }
}
