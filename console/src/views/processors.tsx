// Processors (AdminService): cursor, head, lag in events and seconds, in flight, retries,
// delivery latency (p50 and p99 over the last minute) and failures, polled once a second, with a lag-over-time chart; pause/resume, moving the cursor
// (the confirm says how many events will be delivered again), and the failed deliveries with
// their errors (failed-deliveries.tsx).

import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import type { DeliveryLatency, ProcessorStatus } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { admin, errorText, log } from "../api.js";
import { duration, ms } from "../format.js";
import { useSession } from "../session.js";
import { LagChart, type LagSample } from "./lag-chart.js";
import { FailedDeliveries } from "./failed-deliveries.js";

/** Poll period of the processors' state (and so the chart's sampling). */
const pollMs = 1000;
/** Samples kept for the chart (5 minutes at one a second). */
const keepSamples = 300;

/** How long the oldest unfinished event (the one after the cursor) has waited. */
function LagSeconds({ p }: { p: ProcessorStatus }) {
  const q = useQuery({
    queryKey: ["oldest", p.name, String(p.ackFloor)],
    enabled: p.lag > 0n,
    queryFn: () => log.readLog({ afterSeq: p.ackFloor, pageSize: 1 }),
    refetchInterval: false,
    staleTime: Infinity,
  });
  if (p.lag === 0n) return <>0 s</>;
  const oldest = q.data?.events[0];
  return <>{oldest ? duration(Date.now() - ms(oldest.at)) : "…"}</>;
}

/**
 * A processor's flow limits under its name: what it declares, and on the leader (which delivers)
 * its rate waits and its debounced bursts since the owner started.
 */
function FlowLimits({ p, leader }: { p: ProcessorStatus; leader: boolean }) {
  const rate = /(^|; )rate /.test(p.limits);
  const debounce = /(^|; )debounce /.test(p.limits);
  return (
    <div className="muted limits">
      {p.limits}
      {leader && rate && (
        <div className="rate-waits" title="deliveries that waited for a token of the rate, how long in all, and the events waiting now">
          rate waits: {String(p.rateWaits)} ({duration(Number(p.rateWaitMs))}), {p.rateWaiting} waiting
        </div>
      )}
      {leader && debounce && (
        <div className="debounced" title="events gathered in bursts now; debounced deliveries made and the events they stood for">
          debounced: {String(p.debounceHeld)} held, {String(p.debounceDeliveries)} deliveries for {String(p.debounceEvents)} events
        </div>
      )}
    </div>
  );
}

/** A latency percentile as `0.84 ms`, `123 ms`, `1.5 s`; "–" when no event was answered in the window. */
function latencyText(l: DeliveryLatency | undefined, ms: number): string {
  if (!l || l.count === 0n) return "–";
  return ms < 10 ? `${ms.toFixed(2)} ms` : duration(ms);
}

/** The latency cells: p50 and p99, titled with the window's count and length. */
function LatencyCells({ l }: { l: DeliveryLatency | undefined }) {
  const title = l ? `${l.count} events answered in the last ${Math.round(l.windowSeconds)} s (committed → first ack)` : "";
  return (
    <>
      <td className="num latency-p50" title={title}>
        {latencyText(l, l?.p50Ms ?? 0)}
      </td>
      <td className="num latency-p99" title={title}>
        {latencyText(l, l?.p99Ms ?? 0)}
      </td>
    </>
  );
}

function useProcessorAction() {
  const client = useQueryClient();
  const [result, setResult] = useState<{ ok: boolean; text: string }>({ ok: true, text: "" });
  const done = (text: string) => {
    setResult({ ok: true, text });
    void client.invalidateQueries({ queryKey: ["processors"] });
    void client.invalidateQueries({ queryKey: ["failed"] });
  };
  const failed = (e: unknown) => setResult({ ok: false, text: errorText(e) });
  return { result, done, failed };
}

export function ProcessorsView() {
  // A standby reads the processors as stored: cursor, lag, failures and pauses; what is read ahead, in flight and retried is in the leader's memory.
  const { standby } = useSession();
  const changes = standby === null;
  const q = useQuery({ queryKey: ["processors"], queryFn: () => admin.listProcessors({}), refetchInterval: pollMs });
  const [samples, setSamples] = useState<LagSample[]>([]);
  const [selected, setSelected] = useState("");
  const { result, done, failed } = useProcessorAction();
  const pause = useMutation({
    mutationFn: (v: { name: string; paused: boolean }) => admin.setProcessorPaused({ processor: v.name, paused: v.paused }),
    onSuccess: (r, v) => done(`${v.name} ${v.paused ? "paused" : "resumed"}${r.unchanged ? " (it already was)" : ""}`),
    onError: failed,
  });

  useEffect(() => {
    if (!q.data) return;
    const lag: Record<string, number> = {};
    for (const p of q.data.processors) lag[p.name] = Number(p.lag);
    const sample = { t: q.dataUpdatedAt / 1000, lag };
    // At most one sample a second: a refetch right after an action replaces the last one.
    setSamples((s) => (s.length > 0 && sample.t - s[s.length - 1].t < 1 ? [...s.slice(0, -1), sample] : [...s, sample].slice(-keepSamples)));
  }, [q.data, q.dataUpdatedAt]);

  if (q.isPending) return <p className="note">loading…</p>;
  if (q.isError) return <p className="error">{errorText(q.error)}</p>;
  const list = q.data.processors;
  const current = list.find((p) => p.name === selected);
  return (
    <section>
      <h2>Processors</h2>
      <LagChart samples={samples} names={list.map((p) => p.name)} />
      <table id="processors">
        <colgroup>
          <col className="name" />
          <col span={10} />
          <col className="state" />
          <col className="actions" />
        </colgroup>
        <thead>
          <tr>
            <th>processor</th>
            <th className="num">cursor</th>
            <th className="num">head</th>
            <th className="num">lag</th>
            <th className="num" title="how long the oldest unfinished event has waited">
              lag age
            </th>
            <th className="num">read to</th>
            <th className="num">in flight</th>
            <th className="num">retries</th>
            <th className="num" title="an event committed to its first delivery's ack, median over the last minute">
              p50
            </th>
            <th className="num" title="an event committed to its first delivery's ack, 99th percentile over the last minute">
              p99
            </th>
            <th className="num">failures</th>
            <th>state</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {list.map((p) => (
            <tr key={p.name} data-name={p.name} data-paused={String(p.paused)} className={p.name === selected ? "selected" : ""}>
              <td>
                <button type="button" className="link" onClick={() => setSelected(p.name === selected ? "" : p.name)}>
                  {p.name}
                </button>
                {p.limits && <FlowLimits p={p} leader={changes} />}
              </td>
              <td className="num">{String(p.ackFloor)}</td>
              <td className="num">{String(p.ackFloor + p.lag)}</td>
              <td className="num lag">{String(p.lag)}</td>
              <td className="num">
                <LagSeconds p={p} />
              </td>
              {changes ? (
                <>
                  <td className="num">{String(p.delivered)}</td>
                  <td className="num">{p.inFlight}</td>
                  <td className="num">{String(p.retries)}</td>
                  <LatencyCells l={p.latency} />
                </>
              ) : (
                <td className="num muted leader-only" colSpan={5} title="known to the leader, which delivers">
                  on the leader
                </td>
              )}
              <td className="num failures">{String(p.failures)}</td>
              <td>{p.paused ? <span className="badge warn">paused</span> : <span className="badge ok">running</span>}</td>
              <td className="actions">
                {changes && (
                  <button type="button" className="admin pause" disabled={pause.isPending} onClick={() => pause.mutate({ name: p.name, paused: !p.paused })}>
                    {p.paused ? "Resume" : "Pause"}
                  </button>
                )}
                <button type="button" className="admin details" onClick={() => setSelected(p.name)}>
                  {changes ? "Cursor & failures" : "Failures"}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.length === 0 && <p className="note">No processors are declared.</p>}
      <p id="action-result" className={result.ok ? "ok" : "error"}>
        {result.text}
      </p>
      {current && <ProcessorDetail key={current.name} p={current} onDone={done} onError={failed} />}
    </section>
  );
}

/** Where the log starts now (retention removed what was before): the lowest cursor a move may set is one less. */
async function logStart(): Promise<{ firstSeq: bigint; headSeq: bigint }> {
  const { firstSeq, headSeq } = await log.readLog({ pageSize: 1, fromFirstSeq: true });
  return { firstSeq: firstSeq > 0n ? firstSeq : 1n, headSeq };
}

/** The cursor after a move to `moment`: the event before the first committed at or after it (among those still in the log). */
async function floorForMoment(moment: Date): Promise<bigint> {
  const { firstSeq, headSeq } = await logStart();
  let lo = firstSeq;
  let hi = headSeq + 1n; // first seq whose event is at or after the moment; headSeq + 1: none
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    const { events } = await log.readLog({ afterSeq: mid - 1n, pageSize: 1, fromFirstSeq: true });
    const e = events[0];
    if (!e || ms(e.at) >= moment.getTime()) hi = e ? e.seq : mid;
    else lo = e.seq + 1n;
  }
  return lo - 1n;
}

interface Plan {
  to: { case: "ackFloor"; value: bigint } | { case: "at"; value: ReturnType<typeof timestampFromDate> };
  floor: bigint;
  text: string;
}

function ProcessorDetail({ p, onDone, onError }: { p: ProcessorStatus; onDone: (t: string) => void; onError: (e: unknown) => void }) {
  const { standby } = useSession();
  const [kind, setKind] = useState<"seq" | "time">("seq");
  const [target, setTarget] = useState("");
  const [plan, setPlan] = useState<Plan | null>(null);
  const [planError, setPlanError] = useState("");
  const move = useMutation({
    mutationFn: (pl: Plan) => admin.moveCursor({ processor: p.name, to: pl.to }),
    onSuccess: (r) => {
      setPlan(null);
      onDone(`${p.name}: cursor at ${String(r.processor?.ackFloor)}`);
    },
    onError,
  });
  const check = async (e: FormEvent) => {
    e.preventDefault();
    setPlan(null);
    setPlanError("");
    try {
      let to: Plan["to"];
      let floor: bigint;
      if (kind === "seq") {
        if (!/^\d+$/.test(target.trim())) throw new Error("a seq is a whole number");
        floor = BigInt(target.trim());
        const { firstSeq } = await logStart();
        if (floor < firstSeq - 1n)
          throw new Error(`the log starts at seq ${firstSeq} (retention removed the events before it): the cursor can go back to ${firstSeq - 1n} at most`);
        to = { case: "ackFloor", value: floor };
      } else {
        const moment = new Date(target.trim());
        if (Number.isNaN(moment.getTime())) throw new Error("not a time: use e.g. 2026-12-02T07:00:00Z");
        floor = await floorForMoment(moment);
        to = { case: "at", value: timestampFromDate(moment) };
      }
      // The cursor now, not as last polled: the confirm must say what really happens.
      const now = (await admin.listProcessors({})).processors.find((x) => x.name === p.name);
      const from = now?.ackFloor ?? p.ackFloor;
      const text =
        floor < from
          ? `Move the cursor of ${p.name} back from ${from} to ${floor}: ${from - floor} events of the log (seqs ${floor + 1n} to ${from}) will be delivered again (those the processor's filter matches).`
          : floor > from
            ? `Move the cursor of ${p.name} forward from ${from} to ${floor}: ${floor - from} events of the log (seqs ${from + 1n} to ${floor}) will be skipped, none delivered again.`
            : `The cursor of ${p.name} is already at ${from}: no event will be delivered again.`;
      setPlan({ to, floor, text });
    } catch (err) {
      setPlanError(err instanceof Error && !("code" in err) ? err.message : errorText(err));
    }
  };
  return (
    <div className="detail">
      <h3>{p.name}</h3>
      {standby === null && (
        <form className="inline" onSubmit={check}>
          <label htmlFor="move-kind">Move the cursor to</label>
          <select id="move-kind" value={kind} onChange={(e) => setKind(e.target.value as "seq" | "time")}>
            <option value="seq">seq</option>
            <option value="time">time</option>
          </select>
          <input
            id="move-target"
            placeholder={kind === "seq" ? "seq, e.g. 0 (replay all)" : "2026-12-02T07:00:00Z"}
            value={target}
            onChange={(e) => setTarget(e.target.value)}
          />
          <button id="move-check" type="submit" className="admin">
            Move…
          </button>
        </form>
      )}
      {planError && <p className="error">{planError}</p>}
      {plan && (
        <div className="confirm" id="move-confirm-box">
          <p id="move-confirm-text">{plan.text}</p>
          <button id="move-confirm" type="button" className="admin danger" disabled={move.isPending} onClick={() => move.mutate(plan)}>
            Confirm move
          </button>
          <button type="button" onClick={() => setPlan(null)}>
            Cancel
          </button>
        </div>
      )}
      <FailedDeliveries processor={p.name} onDone={onDone} onError={onError} />
    </div>
  );
}
