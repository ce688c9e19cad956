import type * as http from "node:http";
import type * as http2 from "node:http2";

// Plain HTTP handlers on the owner's port, beside its RPCs: rpc/listen.ts hands every HTTP
// request to one first (`listen({ extraHttpHandler })`); /metrics (metrics.ts) and the console
// (console.ts) are such handlers.

/** Request object handed to handlers: HTTP/1.1 or HTTP/2 (compat API). */
export type HttpRequest = http.IncomingMessage | http2.Http2ServerRequest;
/** Response object handed to handlers: HTTP/1.1 or HTTP/2 (compat API). */
export type HttpResponse = http.ServerResponse | http2.Http2ServerResponse;
/** Called first for every HTTP request on the port; returns true when it handled (answered) it. */
export type HttpHandler = (req: HttpRequest, res: HttpResponse) => boolean;
