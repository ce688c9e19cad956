import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Codes with which the owner refuses the Subscribe stream for good: a missing
 * or unknown token, or a principal whose role may not subscribe. Retrying
 * cannot help. (INVALID_ARGUMENT and RESOURCE_EXHAUSTED count too, but only
 * before the welcome: see {@link isFatal}.)
 */
const FATAL_CODES: ReadonlySet<Code> = new Set([Code.Unauthenticated, Code.PermissionDenied]);

/**
 * True for a stream error the executor must not retry: one of
 * {@link FATAL_CODES}, or INVALID_ARGUMENT or RESOURCE_EXHAUSTED before the
 * session's welcome (the owner rejected the hello: a manifest that does not
 * register, an unknown processor, action or pulse, or a hello larger than the
 * owner reads), which the same hello would meet again.
 */
export function isFatal(error: unknown, welcomed: boolean): error is ConnectError {
  return (
    error instanceof ConnectError &&
    (FATAL_CODES.has(error.code) || (!welcomed && (error.code === Code.InvalidArgument || error.code === Code.ResourceExhausted)))
  );
}

/** The default error report: one line, no stack (reconnects repeat it); `CODE: message` for gRPC errors. */
export function printError(error: unknown, fatal = false): void {
  console.error(`chronolog executor: ${describe(error)}${fatal ? " (the executor stopped: not retrying)" : ""}`);
}

/** `CODE: message` for gRPC errors (as the Python SDK prints them), the message otherwise. */
function describe(error: unknown): string {
  if (error instanceof ConnectError) return `${Code[error.code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()}: ${error.rawMessage}`;
  return error instanceof Error ? error.message : String(error);
}
