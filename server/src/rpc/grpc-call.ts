// The per-call state of a native gRPC unary call (grpc-unary.ts): the handler's signal
// (deadline, cancellation, shutdown), the request headers and the response header and
// trailer objects, each built only when an interceptor or handler asks for it.

import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http2";
import { constants as h2 } from "node:http2";
import { Code, ConnectError, type UnaryResponse } from "@connectrpc/connect";

const RESPONSE_HEADERS: OutgoingHttpHeaders = { ":status": 200, "content-type": "application/grpc+proto" };

/**
 * Per-call state that costs nothing until used: the handler's AbortSignal, the
 * request Headers and the response header and trailer Headers are only built when
 * an interceptor or handler asks for them.
 */
export class CallState {
  private controller: AbortController | undefined;
  private aborted = false;
  private reason: unknown;
  private deadlineAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private request: Headers | undefined;
  private header: Headers | undefined;
  private trailer: Headers | undefined;

  signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Called when the call aborts (its deadline, the owner stopping, the client going away), if set. */
  onAbort: ((reason: unknown) => void) | undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    this.onAbort?.(reason);
  }

  /** The call is over (answered, reset or aborted): the signal aborts, the deadline stops. */
  end(reason?: unknown): void {
    clearTimeout(this.timer);
    this.abort(reason);
  }

  deadline(ms: number): void {
    this.deadlineAt = Date.now() + ms;
    const expire = () => this.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    if (ms < 1)
      expire(); // below the clock's resolution: passed already
    else this.timer = setTimeout(expire, ms);
  }

  timeoutMs(): number | undefined {
    return this.deadlineAt === undefined ? undefined : this.deadlineAt - Date.now();
  }

  requestHeader(raw: IncomingHttpHeaders): Headers {
    return (this.request ??= new RequestHeaders(raw) as unknown as Headers);
  }

  responseHeader(): Headers {
    return (this.header ??= new Headers());
  }

  responseTrailer(): Headers {
    return (this.trailer ??= new Headers());
  }

  /** Takes the header and trailer objects of an interceptor's response that replaced them. */
  adopt(response: UnaryResponse): void {
    const own = Object.getOwnPropertyDescriptor(response, "header");
    if (own && !own.get) this.header = response.header;
    const ownTrailer = Object.getOwnPropertyDescriptor(response, "trailer");
    if (ownTrailer && !ownTrailer.get) this.trailer = response.trailer;
  }

  headersObject(): OutgoingHttpHeaders {
    if (!this.header) return RESPONSE_HEADERS;
    const out: OutgoingHttpHeaders = { ...RESPONSE_HEADERS };
    this.header.forEach((value, key) => (out[key] = value));
    return out;
  }

  trailersObject(base?: OutgoingHttpHeaders): OutgoingHttpHeaders {
    if (!this.trailer) return base ? base : {};
    const out: OutgoingHttpHeaders = {};
    this.trailer.forEach((value, key) => (out[key] = value));
    return base ? Object.assign(out, base) : out;
  }
}

/**
 * The request's headers as a Headers object. get() and has() read Node's header object
 * directly (the auth interceptor asks for `authorization` on every call); anything else
 * builds a real Headers once and delegates to it.
 */
class RequestHeaders {
  private full: Headers | undefined;

  constructor(private readonly raw: IncomingHttpHeaders) {}

  get(name: string): string | null {
    if (this.full) return this.full.get(name);
    const value = this.raw[name.toLowerCase()];
    return value === undefined || name.startsWith(":") ? null : Array.isArray(value) ? value.join(", ") : value;
  }

  has(name: string): boolean {
    return this.full ? this.full.has(name) : this.get(name) !== null;
  }

  private headers(): Headers {
    if (!this.full) {
      this.full = new Headers();
      for (const [key, value] of Object.entries(this.raw)) {
        if (key.startsWith(":") || value === undefined) continue;
        if (Array.isArray(value)) for (const v of value) this.full.append(key, v);
        else this.full.set(key, value);
      }
    }
    return this.full;
  }

  set(name: string, value: string): void {
    this.headers().set(name, value);
  }
  append(name: string, value: string): void {
    this.headers().append(name, value);
  }
  delete(name: string): void {
    this.headers().delete(name);
  }
  getSetCookie(): string[] {
    return this.headers().getSetCookie();
  }
  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.headers().forEach(callback, thisArg);
  }
  entries() {
    return this.headers().entries();
  }
  keys() {
    return this.headers().keys();
  }
  values() {
    return this.headers().values();
  }
  [Symbol.iterator]() {
    return this.headers()[Symbol.iterator]();
  }
}

/** What a reset stream means to the handler, as connect-node reports it. */
export function resetReason(rstCode: number): ConnectError | undefined {
  const code =
    rstCode === h2.NGHTTP2_CANCEL
      ? Code.Canceled
      : rstCode === h2.NGHTTP2_REFUSED_STREAM
        ? Code.Unavailable
        : rstCode === h2.NGHTTP2_ENHANCE_YOUR_CALM
          ? Code.ResourceExhausted
          : rstCode === h2.NGHTTP2_INADEQUATE_SECURITY || rstCode === h2.NGHTTP2_HTTP_1_1_REQUIRED
            ? Code.PermissionDenied
            : rstCode === h2.NGHTTP2_NO_ERROR || rstCode === h2.NGHTTP2_STREAM_CLOSED
              ? undefined
              : Code.Internal;
  return code === undefined ? undefined : new ConnectError(`http/2 stream closed with error code ${rstName(rstCode)} (0x${rstCode.toString(16)})`, code);
}

function rstName(code: number): string {
  const name = Object.entries(h2).find(
    ([k, v]) => v === code && k.startsWith("NGHTTP2_") && !k.startsWith("NGHTTP2_ERR") && !k.startsWith("NGHTTP2_FLAG") && !k.startsWith("NGHTTP2_SESSION"),
  );
  return name ? name[0].slice("NGHTTP2_".length) : String(code);
}
