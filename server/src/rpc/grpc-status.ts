// gRPC status on the wire: grpc-status, grpc-message (percent-encoded as the gRPC
// spec says) and grpc-status-details-bin, from a ConnectError, exactly as connect's
// gRPC handler writes them (it is connect's own setTrailerStatus that builds them).

import { Code, ConnectError } from "@connectrpc/connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { OutgoingHttpHeaders } from "node:http2";

/**
 * Encodes a grpc-message value the way the gRPC spec does (PROTOCOL-HTTP2.md: only `%` and bytes
 * outside 0x20-0x7E are percent-encoded). connect-node uses encodeURIComponent, and grpc-js decodes
 * with decodeURI, which leaves `%3A`, `%2F`, `%23`... as they are: grpc-js callers would read
 * "schema%3A data%2Famount".
 */
export function encodeGrpcMessage(text: string): string {
  // The common case, plain ASCII without '%', needs no copy.
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  return Array.from(Buffer.from(text, "utf8"), (b) =>
    b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`,
  ).join("");
}

/** Anything thrown while serving a call, as connect's gRPC handler reports it. */
export function asConnectError(e: unknown): ConnectError {
  return e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
}

/**
 * The trailers of a call that failed with `error`: the error's metadata, grpc-status,
 * grpc-message and, when it has details, grpc-status-details-bin (a google.rpc.Status).
 */
export function errorTrailers(error: ConnectError, into: OutgoingHttpHeaders = {}): OutgoingHttpHeaders {
  setTrailerStatus(new Headers(), error).forEach((value, key) => {
    into[key] = key === "grpc-message" ? encodeGrpcMessage(error.rawMessage) : value;
  });
  return into;
}
