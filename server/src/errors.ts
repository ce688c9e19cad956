import { Code } from "@connectrpc/connect";

/**
 * The closed registry of Chronolog's error kinds. Each kind has one
 * gRPC code, a stable machine reason (sent as google.rpc.ErrorInfo.reason) and
 * whether a client may retry the same request unchanged. `rpc/interceptors.ts` is
 * the one place that turns these into gRPC statuses.
 */
export const errorKinds = {
  bad_request: { code: Code.InvalidArgument, retryable: false },
  undeclared_event_type: { code: Code.InvalidArgument, retryable: false },
  schema_violation: { code: Code.InvalidArgument, retryable: false },
  invalid_filter: { code: Code.InvalidArgument, retryable: false },
  invalid_manifest: { code: Code.InvalidArgument, retryable: false },
  id_conflict: { code: Code.AlreadyExists, retryable: false },
  already_exists: { code: Code.AlreadyExists, retryable: false },
  not_found: { code: Code.NotFound, retryable: false },
  /** GetEvent of an event retention removed (metadata `seq`): not the same as one that never was. */
  event_removed: { code: Code.NotFound, retryable: false },
  /** A read from a seq below where the log now starts (metadata `first_seq`): retention removed events the reader has not read. */
  before_log_start: { code: Code.OutOfRange, retryable: false },
  unauthenticated: { code: Code.Unauthenticated, retryable: false },
  permission_denied: { code: Code.PermissionDenied, retryable: false },
  failed_precondition: { code: Code.FailedPrecondition, retryable: false },
  /** An append to a stream that is not at the version the caller expected (metadata `actual_version`). */
  wrong_expected_version: { code: Code.FailedPrecondition, retryable: false },
  too_large: { code: Code.ResourceExhausted, retryable: false },
  unavailable: { code: Code.Unavailable, retryable: true },
  /** An action's run failed: the message carries the action's error. A new call with the same id runs it again. */
  action_failed: { code: Code.Aborted, retryable: false },
  /** The caller cancelled (e.g. a CallAction whose caller went away). */
  cancelled: { code: Code.Canceled, retryable: false },
  /** The caller's deadline passed before the answer. */
  deadline_exceeded: { code: Code.DeadlineExceeded, retryable: true },
  internal: { code: Code.Internal, retryable: true },
} as const satisfies Record<string, { code: Code; retryable: boolean }>;

/** One of the registered error kinds. */
export type ErrorKind = keyof typeof errorKinds;

/** A problem with one field of a request; `field` is a dotted path or, for JSON data, a JSON pointer. */
export interface FieldViolation {
  field: string;
  description: string;
}

/**
 * The one error class of the owner. `message` names the offending field, type
 * or rule; `violations` list field-level problems (schema errors);
 * `metadata` carries stable facts (e.g. `{ type: "booking.created" }`).
 */
export class ChronologError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly violations: FieldViolation[] = [],
    readonly metadata: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ChronologError";
  }

  /** The gRPC code of this error's kind. */
  get code(): Code {
    return errorKinds[this.kind].code;
  }

  /**
   * Normalises anything thrown into a ChronologError: ChronologErrors pass
   * through, everything else becomes `internal` (its cause kept for logs, its
   * message and stack never sent to callers).
   */
  static from(e: unknown): ChronologError {
    if (e instanceof ChronologError) return e;
    if (isDiskFull(e)) return new ChronologError("unavailable", "the owner's disk is full: nothing was written; retry once space is freed");
    if (isConnectionLost(e)) return new ChronologError("unavailable", "the owner lost its connection to its database: retry (with the same ids) at the leader");
    const err = new ChronologError("internal", "internal error");
    (err as { cause?: unknown }).cause = e;
    return err;
  }
}

/**
 * `e` as the error of one item of a batch request: a ChronologError's fields and message name
 * the item (`delays[3].delay_id`, `delays[3]: ...`); anything else passes unchanged.
 */
export function forItem(item: string, e: unknown): unknown {
  if (!(e instanceof ChronologError)) return e;
  const violations = e.violations.map((v) => ({ ...v, field: `${item}.${v.field}` }));
  return new ChronologError(e.kind, `${item}: ${e.message}`, violations.length > 0 ? violations : [{ field: item, description: e.message }], e.metadata);
}

/** Runs `work`; an error it throws is the error of batch item `item` ({@link forItem}). */
export function asItem<T>(item: string, work: () => T): T {
  try {
    return work();
  } catch (e) {
    throw forItem(item, e);
  }
}

/**
 * A PostgreSQL connection that ended or broke (the server restarted, the connection was ended by
 * a takeover, the network failed): SQLSTATE class 08, 57P01-57P03, or libpq's own words.
 */
export function isConnectionLost(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const state = (e as { sqlState?: string }).sqlState;
  if (state && (state.startsWith("08") || /^57P0[123]$/.test(state))) return true;
  return /server closed the connection|terminating connection|no connection to the server|connection to server .* failed|could not send data to server|could not receive data from server|Unable to set non-blocking/i.test(
    e.message,
  );
}

/** SQLite's "database or disk is full" (SQLITE_FULL): the whole commit was rolled back. */
export function isDiskFull(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: unknown }).code === "SQLITE_FULL";
}

/** Shorthand for `new ChronologError(kind, message, ...)`. */
export function fail(kind: ErrorKind, message: string, violations?: FieldViolation[], metadata?: Record<string, string>): never {
  throw new ChronologError(kind, message, violations, metadata);
}
