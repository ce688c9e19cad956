// A browser client of Chronolog: emits events with a form and shows
// the live Watch stream as a list that grows, newest first. It talks Connect over HTTP/1.1 with
// connect-web's fetch transport, cross-origin: the owner's config must allow this
// page's origin (`cors: { origins: [...] }`).
//
// Query parameters:
//   owner  the owner's base URL (default http://127.0.0.1:50051)
//   token  a principal's bearer token (sent as `authorization: Bearer ...`); a
//          `client` principal is enough. Fine for trying things out; a real app
//          gets its token from its own sign-in, not from the address bar.
//   type   only events of this type in the list (default: every type)
//   from   watch after this seq (default 0: the whole log, then live)
//
// Build: `npm run build:browser` (Vite) writes examples/browser/dist/.

import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";

/** The list keeps at most this many events (the oldest leave first). */
const MAX_SHOWN = 500;

const params = new URLSearchParams(location.search);
const ownerUrl = (params.get("owner") ?? "http://127.0.0.1:50051").replace(/\/+$/, "");
const token = params.get("token") ?? "";
const onlyType = params.get("type") ?? "";
const fromSeq = parseSeq(params.get("from"));

const bearer: Interceptor = (next) => (req) => {
  req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};
const transport = createConnectTransport({
  baseUrl: ownerUrl,
  // fetch from a page speaks HTTP/1.1 to a plaintext owner: unary and server
  // streaming work; the binary format keeps messages small.
  useBinaryFormat: true,
  interceptors: token ? [bearer] : [],
});
const log = createClient(LogService, transport);

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
};
const form = $<HTMLFormElement>("emit-form");
const typeInput = $<HTMLInputElement>("type");
const dataInput = $<HTMLTextAreaElement>("data");
const idInput = $<HTMLInputElement>("id");
const emitButton = $<HTMLButtonElement>("emit");
const emitResult = $("emit-result");
const status = $("status");
const list = $<HTMLOListElement>("events");
$("owner").textContent = ownerUrl;
if (onlyType) typeInput.value = onlyType;

function parseSeq(text: string | null): bigint {
  return text && /^\d+$/.test(text) ? BigInt(text) : 0n;
}

/** "InvalidArgument: data of order.placed does not match ..." */
function describeError(err: unknown): string {
  const e = ConnectError.from(err);
  return `${Code[e.code]}: ${e.rawMessage}`;
}

function setStatus(state: "connecting" | "live" | "retrying" | "error", text: string): void {
  status.dataset.state = state;
  status.textContent = text;
}

/** Adds `event` at the top of the list; the oldest leave at the bottom past {@link MAX_SHOWN}. */
function show(event: Event): void {
  const item = document.createElement("li");
  item.value = Number(event.seq);
  item.dataset.seq = String(event.seq);
  item.dataset.id = event.id;
  item.dataset.type = event.type;
  const at = event.at ? timestampDate(event.at).toISOString() : "";
  const actor = event.actor ? Object.entries(event.actor).filter(([k, v]) => k !== "$typeName" && v) : [];
  const who = actor.length ? ` (${actor.map(([k, v]) => `${k}=${String(v)}`).join(" ")})` : "";
  item.textContent = `${at} ${event.type} ${JSON.stringify(event.data ?? {})} id=${event.id}${who}`;
  list.prepend(item);
  while (list.childElementCount > MAX_SHOWN) list.lastElementChild?.remove();
}

/** Whether the owner's log still holds `event` at its seq: false when the owner at that URL now runs on another log. */
async function stillInLog(event: Event): Promise<boolean> {
  try {
    const found = (await log.getEvent({ id: event.id })).event;
    return found?.seq === event.seq;
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) return false;
    throw err;
  }
}

/**
 * Follows the log for the page's life: catch-up from `from`, then live, the status saying the
 * seq of the last event shown. A stream that ends or breaks (owner restart, network) starts
 * again after the last seq shown, once the owner is found to hold that event still; an owner
 * started again at that URL on another log (a new data folder) is followed from `from` again,
 * with the list emptied. Errors no retry can fix (token, permission, bad filter) stop it.
 */
async function watch(): Promise<void> {
  let after = fromSeq;
  let last: Event | undefined;
  let wait = 500;
  for (;;) {
    setStatus("connecting", "connecting");
    try {
      let note = "";
      if (last && !(await stillInLog(last))) {
        list.replaceChildren();
        after = fromSeq;
        last = undefined;
        note = "; the owner's log is another one now: shown from its start";
      }
      let live = false;
      for await (const res of log.watch({ afterSeq: after, types: onlyType ? [onlyType] : [] })) {
        if (res.message.case === "event") {
          last = res.message.value;
          after = last.seq;
          show(last);
          if (live) setStatus("live", `live (last event at seq ${after})`);
        } else if (res.message.case === "caughtUp") {
          wait = 500;
          live = true;
          setStatus("live", `live (caught up at seq ${res.message.value.headSeq}${note})`);
        }
      }
      setStatus("retrying", "stream ended, reconnecting");
    } catch (err) {
      const code = ConnectError.from(err).code;
      if ([Code.Unauthenticated, Code.PermissionDenied, Code.InvalidArgument].includes(code)) {
        setStatus("error", describeError(err));
        return;
      }
      setStatus("retrying", `${describeError(err)}; retrying in ${wait} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 10_000);
  }
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  void emit();
});

async function emit(): Promise<void> {
  let data: JsonObject;
  try {
    const parsed: unknown = JSON.parse(dataInput.value);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("data must be a JSON object");
    data = parsed as JsonObject;
  } catch (err) {
    emitResult.dataset.state = "error";
    emitResult.textContent = `not sent: ${err instanceof Error ? err.message : String(err)}`;
    return;
  }
  emitButton.disabled = true;
  emitResult.dataset.state = "sending";
  emitResult.textContent = "sending";
  try {
    const { event, existing } = await log.emit({ type: typeInput.value.trim(), data, id: idInput.value.trim() });
    emitResult.dataset.state = existing ? "existing" : "committed";
    emitResult.dataset.seq = String(event?.seq ?? "");
    emitResult.dataset.id = event?.id ?? "";
    emitResult.textContent = `${existing ? "already in the log" : "committed"}: seq ${event?.seq} id ${event?.id}`;
  } catch (err) {
    emitResult.dataset.state = "error";
    emitResult.textContent = describeError(err);
  } finally {
    emitButton.disabled = false;
  }
}

void watch();
