import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Authenticator } from "../auth/tokens.js";
import { ChronologError, isDiskFull, type FieldViolation } from "../errors.js";
import { BadRequestSchema, ErrorInfoSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import type { Logger } from "../logger.js";
import { principalKey } from "./context.js";

/** Services any caller may use without a token: health checks and reflection. */
const openServices = new Set(["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]);

/** Resolves the bearer token to a principal before any handler runs; UNAUTHENTICATED otherwise. */
export function authInterceptor(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    if (!openServices.has(req.service.typeName)) {
      try {
        req.contextValues.set(principalKey, authenticator.authenticate(req.header.get("authorization")));
      } catch (e) {
        throw toConnectError(e);
      }
    }
    return next(req);
  };
}

/**
 * The one place where errors become gRPC statuses: ChronologErrors keep
 * their code and message and carry google.rpc.ErrorInfo (stable reason) and
 * BadRequest (field violations) details; ConnectErrors pass through; anything
 * else raised by an aborted call is the abort's reason; anything else is a bug:
 * logged with its cause and answered as INTERNAL without details.
 */
export function errorInterceptor(logger: Logger): Interceptor {
  let diskFullLoggedAt = -Infinity;
  const convert = (e: unknown, procedure: string, signal: AbortSignal) => {
    const error = toConnectError(e);
    if (e instanceof ChronologError || e instanceof ConnectError) return error;
    if (isDiskFull(e)) {
      // Every caller of a batch gets it at once: one warning per 10 s, not one stack trace per caller.
      if (performance.now() - diskFullLoggedAt > 10_000) {
        logger.warn({ err: e }, "the disk is full: commits fail (UNAVAILABLE) until space is freed");
        diskFullLoggedAt = performance.now();
      }
      return error;
    }
    // Something that failed because the call was aborted (the caller went away, its deadline passed, the owner
    // is stopping) is not the owner's fault: the caller hears the abort's reason (UNAVAILABLE while the owner
    // stops, DEADLINE_EXCEEDED, CANCELLED), not INTERNAL.
    if (signal.aborted) {
      logger.debug({ err: e, procedure }, "call aborted");
      return signal.reason instanceof ConnectError ? signal.reason : new ConnectError("the call was cancelled", Code.Canceled);
    }
    logger.error({ err: e, procedure }, "internal error");
    return error;
  };
  return (next) => async (req) => {
    const procedure = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      if (!res.stream) return res;
      return { ...res, message: mapStreamErrors(res.message, (e) => convert(e, procedure, req.signal)) };
    } catch (e) {
      throw convert(e, procedure, req.signal);
    }
  };
}

async function* mapStreamErrors<T>(messages: AsyncIterable<T>, convert: (e: unknown) => ConnectError): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (e) {
    throw convert(e);
  }
}

/**
 * Most UTF-8 bytes of a status message. It travels in the trailers twice (grpc-message,
 * percent-encoded, and inside grpc-status-details-bin), which clients cap (grpc-js reads 8 KiB of
 * metadata by default; nghttp2 refuses a frame past its size): an executor's error of megabytes
 * quoted in a failed call's message would turn the answer into a transport error.
 */
export const maxStatusMessageBytes = 1024;

/** `message`, or its start within `maxBytes` (default {@link maxStatusMessageBytes}) saying how long it was. */
export function statusMessage(message: string, maxBytes = maxStatusMessageBytes): string {
  const bytes = Buffer.byteLength(message);
  if (bytes <= maxBytes) return message;
  const suffix = `… (cut from ${bytes} bytes)`;
  const kept = Buffer.from(message)
    .subarray(0, maxBytes - Buffer.byteLength(suffix))
    .toString();
  return `${kept.replace(/\uFFFD$/, "")}${suffix}`; // a character cut in two is dropped
}

/** Most UTF-8 bytes of a status's field violations, fields and descriptions in all (they travel in grpc-status-details-bin). */
export const maxViolationBytes = 1024;

/**
 * `violations`, or those that fit {@link maxViolationBytes} (each description cut to half of it,
 * as {@link statusMessage} cuts) and a last one saying how many more there were: a schema checked
 * with every error (a large input, wrong throughout) gives one violation per wrong value.
 */
export function statusViolations(violations: FieldViolation[]): FieldViolation[] {
  const kept: FieldViolation[] = [];
  let bytes = 0;
  for (const [i, v] of violations.entries()) {
    const description = statusMessage(v.description, maxViolationBytes / 2);
    const size = Buffer.byteLength(v.field) + Buffer.byteLength(description);
    if (kept.length > 0 && bytes + size > maxViolationBytes) {
      kept.push({ field: "", description: `… and ${violations.length - i} more` });
      break;
    }
    kept.push({ field: v.field, description });
    bytes += size;
  }
  return kept;
}

/** Converts anything thrown to a ConnectError (see errorInterceptor). */
export function toConnectError(e: unknown): ConnectError {
  if (e instanceof ConnectError) return e;
  const error = ChronologError.from(e);
  const details = [
    { desc: ErrorInfoSchema, value: { reason: error.kind.toUpperCase(), domain: "chronolog.dev", metadata: error.metadata } },
    ...(error.violations.length > 0 ? [{ desc: BadRequestSchema, value: { fieldViolations: statusViolations(error.violations) } }] : []),
  ];
  return new ConnectError(statusMessage(error.message), error.code, undefined, details);
}
