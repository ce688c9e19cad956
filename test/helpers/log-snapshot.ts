// Reads the whole log through the public API, to prove that a bad request
// wrote nothing: take a snapshot before, another after, and compare.

import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import type { ChronologClient } from "../../sdk/ts/src/client.js";
import { EventSchema } from "@chronolog/sdk/gen/chronolog/v1/event_pb";

/** The log's head seq and every event in it, as JSON. */
export interface LogSnapshot {
  head: bigint;
  events: unknown[];
}

/** Reads the head and every event (ReadLog, page by page, with an admin client). */
export async function logSnapshot(client: ChronologClient): Promise<LogSnapshot> {
  const first = await client.log.readLog({ pageSize: 1 });
  const events: unknown[] = [];
  for await (const e of client.read({}, 1000)) events.push(toJson(EventSchema, e));
  return { head: first.headSeq, events };
}

/** Asserts the log is exactly as it was in `before` (nothing written). */
export async function expectUnchanged(client: ChronologClient, before: LogSnapshot): Promise<void> {
  const after = await logSnapshot(client);
  expect(after.head).toBe(before.head);
  expect(after.events).toEqual(before.events);
}

/**
 * Awaits `p`, expecting it to fail with a ConnectError of `code` whose raw
 * message matches every pattern; returns the error for further checks.
 */
export async function expectConnectError(p: Promise<unknown>, code: Code, ...message: RegExp[]): Promise<ConnectError> {
  let caught: unknown;
  try {
    await p;
  } catch (e) {
    caught = e;
  }
  expect(caught, "the call should have failed").toBeInstanceOf(ConnectError);
  const err = caught as ConnectError;
  expect(Code[err.code]).toBe(Code[code]);
  for (const m of message) expect(err.rawMessage).toMatch(m);
  return err;
}

/** Every event of the given types, in log order (all pages). */
export async function eventsOf(client: ChronologClient, types: string[]) {
  const out = [];
  for await (const e of client.read({ types })) out.push(e);
  return out;
}
