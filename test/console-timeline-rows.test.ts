// The rows of the console's timeline (console/src/timeline.ts) from events as the log holds them:
// where each goes (under its cause; a call of time under the trigger naming it or its timer's
// timer.scheduled), failed tries of deliveries and attempts of calls with their errors, outcomes
// and durations, several processors on one type, and the trace id an event may carry. The page
// itself is checked in Chromium (console-timeline.test.ts).

import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { EventSchema, type Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { timelineRows, traceHref, traceIdOf, type TreeInput } from "../console/src/timeline.js";

const T0 = Date.UTC(2026, 2, 2, 12);
let seq = 0n;
const event = (id: string, type: string, atMs: number, cause = "", data: JsonObject = {}): Event =>
  create(EventSchema, { id, type, cause, data, seq: ++seq, at: timestampFromMs(T0 + atMs) });
const shape = (input: Omit<TreeInput, "nowMs" | "processorsOn"> & Partial<TreeInput>) =>
  timelineRows({ processorsOn: new Map(), nowMs: T0 + 60_000, ...input }).map((r) => [
    r.depth,
    r.kind,
    r.label,
    r.outcome,
    r.endMs === undefined ? null : r.endMs - r.startMs,
  ]);

describe("the timeline's rows", () => {
  it("a delivery tried three times that failed for good, then a call retried once that completed, its work under it", () => {
    const root = event("e1", "order.placed", 0);
    const under = [
      event("r1", "processor.retried", 10, "e1", { processor: "shop.handler", attempt: 1, error: "boom", retry_in_ms: 1000 }),
      event("r2", "processor.retried", 1020, "e1", { processor: "shop.handler", attempt: 2, error: "boom", retry_in_ms: 5000 }),
      event("s1", "action.started", 6020, "e1", { call_id: "c1", action: "shop.charge", attempt: 1 }),
      event("a1", "action.retried", 6100, "s1", { call_id: "c1", action: "shop.charge", attempt: 2, error: "declined" }),
      event("x1", "order.charged", 6150, "s1"),
      event("a2", "action.completed", 6200, "s1", { call_id: "c1", action: "shop.charge", attempt: 2 }),
      event("f1", "processor.failed", 6300, "e1", { processor: "shop.handler", attempts: 3, error: "still boom" }),
    ];
    const rows = timelineRows({ root, under, processorsOn: new Map([["order.placed", ["shop.handler"]]]), currentId: "x1", nowMs: T0 });
    expect(rows.map((r) => [r.depth, r.kind, r.label, r.outcome, r.detail])).toEqual([
      [0, "event", "order.placed", "", "e1"],
      [1, "delivery", "shop.handler", "failed", "delivery of #1, 3 tries"],
      [2, "try", "try 1", "retry in 1.0 s", "boom"],
      [2, "try", "try 2", "retry in 5.0 s", "boom"],
      [2, "try", "try 3", "gave up", "still boom"],
      [2, "call", "shop.charge", "completed", "call c1, 2 attempts"],
      [3, "attempt", "attempt 1", "failed, retried", "declined"],
      [3, "attempt", "attempt 2", "completed", ""],
      [3, "event", "order.charged", "", "x1"],
    ]);
    expect(rows.find((r) => r.kind === "delivery")!.endMs! - T0).toBe(6300);
    expect(rows.find((r) => r.kind === "call")!.endMs! - T0).toBe(6200);
    expect(rows.filter((r) => r.current).map((r) => r.key)).toEqual(["x1"]);
  });

  it("with an admin's cursors a delivery is done or pending; with two processors on a type the work stays under the event", () => {
    const root = event("e2", "order.placed", 0);
    const under = [event("n2", "order.noted", 5, "e2")];
    const processorsOn = new Map([["order.placed", ["shop.a", "shop.b"]]]);
    expect(
      shape({
        root,
        under,
        processorsOn,
        cursors: new Map([
          ["shop.a", root.seq],
          ["shop.b", root.seq - 1n],
        ]),
        currentId: "e2",
      }),
    ).toEqual([
      [0, "event", "order.placed", "", null],
      [1, "delivery", "shop.a", "done", null], // (the work is not its alone: no end known)
      [1, "delivery", "shop.b", "pending", null],
      [1, "event", "order.noted", "", null],
    ]);
  });

  it("a call of time goes under the trigger naming it, else under its timer's last timer.scheduled before it; a missed occurrence under the timer", () => {
    const root = event("e3", "job.go", 0);
    const under = [
      event("t1", "timer.scheduled", 10, "e3", { timer_id: "d1", kind: "delay", action: "jobs.ring", spec: { at: T0 + 5_000 } }),
      event("t2", "timer.scheduled", 20, "e3", { timer_id: "s1", kind: "runtime", action: "jobs.ring", spec: { every_ms: 60_000 } }),
      event("g1", "timer.triggered", 30, "e3", { timer_id: "s1", occurrence_id: "o-trig", action: "jobs.ring" }),
      event("c-trig", "action.started", 40, "", { call_id: "o-trig", action: "jobs.ring", timer_id: "s1", chain_depth: 1 }),
      event("c-delay", "action.started", 5_000, "", { call_id: "o-d1", action: "jobs.ring", timer_id: "d1", chain_depth: 1 }),
      event("k1", "action.failed", 5_100, "c-delay", { call_id: "o-d1", action: "jobs.ring", attempt: 1, error: "no" }),
      event("m1", "timer.skipped", 70_000, "", { timer_id: "s1", occurrence_id: "o-late", action: "jobs.ring", reason: "late" }),
    ];
    expect(shape({ root, under, currentId: "e3" })).toEqual([
      [0, "event", "job.go", "", null],
      [1, "timer", "delay jobs.ring", "1 call made", 4_990],
      [2, "call", "jobs.ring", "failed", 100],
      [3, "attempt", "attempt 1", "failed", null],
      [1, "timer", "runtime jobs.ring", "skipped", null],
      [2, "event", "timer.skipped", "", null],
      [1, "event", "timer.triggered", "", null],
      [2, "call", "jobs.ring", "running", null],
    ]);
    // A delay not yet due says when it is.
    const pending = event("t3", "timer.scheduled", 0, "", { timer_id: "d2", kind: "delay", action: "jobs.ring", spec: { at: T0 + 90_000 } });
    expect(shape({ root: pending, under: [], currentId: "t3" })[0]).toEqual([0, "timer", "delay jobs.ring", "due in 30.0 s", 90_000]);
  });

  it("reads an event's trace id from a trace_id or a W3C traceparent, none otherwise", () => {
    const plain = event("p1", "x.y", 0);
    expect(traceIdOf(plain)).toBe("");
    expect(traceIdOf(Object.assign(event("p2", "x.y", 0), { traceId: "4bf92f3577b34da6a3ce929d0e0e4736" }))).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(traceIdOf(Object.assign(event("p3", "x.y", 0), { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }))).toBe(
      "4bf92f3577b34da6a3ce929d0e0e4736",
    );
    expect(traceIdOf(Object.assign(event("p4", "x.y", 0), { traceparent: "garbage" }))).toBe("");
    // Linked only with both a viewer's URL and a trace id.
    expect(traceHref("https://jaeger.example/trace/{trace_id}", "4bf92f3577b34da6a3ce929d0e0e4736")).toBe(
      "https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736",
    );
    expect([traceHref(undefined, "4bf9"), traceHref("https://jaeger.example/trace/{trace_id}", "")]).toEqual(["", ""]);
  });
});
