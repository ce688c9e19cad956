// What a failed call says about the owner it went to, for clients given several owners (one
// leads, the others are standbys): a standby's refusal, an owner never reached, or one lost
// during the call. Any other error is the owner's answer.

import { Code, ConnectError } from "@connectrpc/connect";
import { isHttpUrl } from "./options.js";

/** The metadata key in which an owner names the leader's URL (a standby's refusals, health checks). */
export const leaderKey = "chronolog-leader";
/** The metadata key in which an owner's health check says its role: `leader` or `standby`. */
export const roleKey = "chronolog-role";

/**
 * Why a call failed, when it is about the owner rather than the request:
 * - `standby`: a standby refused it (nothing was done), naming the leader when it knows it;
 * - `unreached`: no owner got it (connection refused, host not found, stream refused): nothing was done;
 * - `lost`: the owner went away, stopped answering pings or is stopping during the call: it may have run.
 */
export type OwnerFailure = { kind: "standby"; leader: string | undefined } | { kind: "unreached" } | { kind: "lost" };

/** Node error codes of a connection that was never made (nothing was sent). */
const unreachedCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "ERR_HTTP2_GOAWAY_SESSION"]);

/** nghttp2's error for a peer that does not speak HTTP/2 (a web server on the port, say): no owner got the call. */
const notHttp2 = (c: { code: string; message: string }) => c.code === "ERR_HTTP2_ERROR" && c.message === "Protocol error";

/** The owner failure behind `error`, or undefined when it is an owner's answer (or not a call's error). */
export function ownerFailureOf(error: unknown): OwnerFailure | undefined {
  if (!(error instanceof ConnectError)) return undefined;
  if (error.code === Code.Unavailable && (error.metadata.has(leaderKey) || error.rawMessage.startsWith("this owner is a standby"))) {
    return { kind: "standby", leader: leaderOf(error) };
  }
  const causes = nodeCauses(error);
  // An HTTP/2 stream reset (connect-node's message, or Node's in a cause): REFUSED_STREAM says the owner did not process it.
  const resets = [error.rawMessage, ...causes.map((c) => c.message)].filter((m) => /^(http\/2 stream closed|Stream closed) with error code/.test(m));
  if (
    resets.some((m) => m.includes("REFUSED_STREAM")) ||
    causes.some((c) => unreachedCodes.has(c.code) || notHttp2(c) || c.syscall === "connect" || c.syscall === "getaddrinfo")
  )
    return { kind: "unreached" };
  // A ping the owner did not answer (a frozen owner: paused, hung, cut off) closed the connection: connect-node's "PING timed out".
  const frozen = error.code === Code.Unavailable && error.rawMessage === "PING timed out";
  if (causes.length > 0 || resets.length > 0 || frozen || (error.code === Code.Unavailable && error.rawMessage.includes("owner is stopping")))
    return { kind: "lost" };
  return undefined;
}

/** The leader's URL a standby's refusal names (metadata first, else its message), if it is an http(s) URL. */
function leaderOf(error: ConnectError): string | undefined {
  const named = error.metadata.get(leaderKey) ?? /the leader is at (\S+)$/.exec(error.rawMessage)?.[1];
  return named !== undefined && isHttpUrl(named) ? named : undefined;
}

/** The Node errors (with a string `code`, e.g. ECONNRESET) in `error`'s cause chain. */
function nodeCauses(error: Error): { code: string; syscall?: string; message: string }[] {
  const out: { code: string; syscall?: string; message: string }[] = [];
  for (let cause: unknown = error.cause, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth++) {
    const { code, syscall } = cause as NodeJS.ErrnoException;
    if (typeof code === "string") out.push({ code, syscall, message: cause.message });
  }
  return out;
}
