// What log retention holds back (events its rules let go that stay, by what holds them) and the
// automatic archive's lag, for the log view. No RPC says it: it is read from the owner's
// `GET /metrics` (`chronolog_log_retention_held_events{holder}`, `chronolog_log_archive_lag_events`,
// Prometheus text, admin only), every 10 seconds.

import { useQuery } from "@tanstack/react-query";
import { getToken } from "../api.js";

const heldMetric = "chronolog_log_retention_held_events";

/** Events held back by holder (as the metric labels it), from the metrics' text; holders with none are left out. */
export function parseHeld(text: string): [string, number][] {
  const held: [string, number][] = [];
  for (const line of text.split("\n")) {
    const m = new RegExp(`^${heldMetric}\\{holder="((?:[^"\\\\]|\\\\.)*)"\\}\\s+(\\S+)$`).exec(line);
    if (m && Number(m[2]) > 0) held.push([m[1].replace(/\\(.)/g, "$1"), Number(m[2])]);
  }
  return held.sort((a, b) => b[1] - a[1]);
}

/** What a holder means, in words. */
function holderText(holder: string): string {
  const [kind, name] = holder.includes(":") ? [holder.slice(0, holder.indexOf(":")), holder.slice(holder.indexOf(":") + 1)] : [holder, ""];
  switch (kind) {
    case "processor":
      return `processor ${name} has not finished them`;
    case "failed_delivery":
      return `their deliveries to ${name} failed (redeliver or dismiss them)`;
    case "timer":
      return "pending timers were set by them";
    case "action_call":
      return "they started action calls still running";
    case "document":
      return "they are documents' latest changes";
    case "cause":
      return "kept events name them as their cause";
    case "archive":
      return "they are not archived yet";
    default:
      return holder;
  }
}

async function readHeld(): Promise<[string, number][]> {
  const token = getToken();
  const res = await fetch("/metrics", { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (!res.ok) throw new Error(`GET /metrics: ${res.status} ${(await res.text()).trim()}`);
  return parseHeld(await res.text());
}

/** A note under the log's title when the last retention pass held events back; nothing otherwise. */
export function RetentionHeld() {
  const q = useQuery({ queryKey: ["retention-held"], queryFn: readHeld, refetchInterval: 10_000 });
  const held = q.data ?? [];
  if (q.isError) return <p className="note">What retention holds back: {(q.error as Error).message}</p>;
  if (held.length === 0) return null;
  const total = held.reduce((n, [, count]) => n + count, 0);
  return (
    <div className="note" id="retention-held" data-total={total}>
      Retention holds back {total} events its rules let go (at its last pass):
      <ul>
        {held.map(([holder, count]) => (
          <li key={holder} data-holder={holder}>
            {count}: {holderText(holder)}
          </li>
        ))}
      </ul>
    </div>
  );
}
