// Small formatting helpers shared by the views.

import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Actor } from "@chronolog/sdk/gen/chronolog/v1/event_pb";

/** A timestamp as `2026-12-02 07:44:24.123` (UTC), or "" when absent. */
export function at(ts: Timestamp | undefined): string {
  if (!ts) return "";
  return timestampDate(ts).toISOString().replace("T", " ").replace("Z", "");
}

/** Milliseconds since the epoch of a timestamp (NaN when absent). */
export function ms(ts: Timestamp | undefined): number {
  return ts ? timestampDate(ts).getTime() : Number.NaN;
}

/** A duration in ms as `850 ms`, `12.3 s`, `4 min 5 s`, `2 h 3 min`, `3 d 4 h`. */
export function duration(msValue: number): string {
  const a = Math.abs(msValue);
  if (a < 1000) return `${Math.round(a)} ms`;
  if (a < 60_000) return `${(a / 1000).toFixed(1)} s`;
  if (a < 3_600_000) return `${Math.floor(a / 60_000)} min ${Math.floor((a % 60_000) / 1000)} s`;
  if (a < 86_400_000) return `${Math.floor(a / 3_600_000)} h ${Math.floor((a % 3_600_000) / 60_000)} min`;
  return `${Math.floor(a / 86_400_000)} d ${Math.floor((a % 86_400_000) / 3_600_000)} h`;
}

/** A moment relative to now: `in 4.0 s`, `12.3 s ago`. */
export function relative(ts: Timestamp | undefined, now = Date.now()): string {
  if (!ts) return "";
  const d = ms(ts) - now;
  return d >= 0 ? `in ${duration(d)}` : `${duration(d)} ago`;
}

/** The actor's set fields as `id=user:ana via=app:web`, or "system". */
export function actor(a: Actor | undefined): string {
  if (!a) return "system";
  const parts = (["id", "for", "in", "via"] as const).filter((k) => a[k]).map((k) => `${k}=${a[k]}`);
  return parts.length ? parts.join(" ") : "system";
}

/** Compact JSON of a value (bigints as numbers). */
export function json(value: unknown, space?: number): string {
  return JSON.stringify(value ?? null, (_k, v) => (typeof v === "bigint" ? Number(v) : v), space);
}
