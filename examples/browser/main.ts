// A browser client of Chronolog: emits events with a form and shows
// the live Watch stream as a list that grows. It talks Connect over HTTP/1.1 with
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
  list.append(item);
  while (list.childElementCount > MAX_SHOWN) list.firstElementChild?.remove();
}

/**
 * Follows the log for the page's life: catch-up from `from`, then live. A stream
 * that ends or breaks (owner restart, network) starts again after the last seq
 * shown; errors no retry can fix (token, permission, bad filter) stop it.
 */
async function watch(): Promise<void> {
  let after = fromSeq;
  let wait = 500;
  for (;;) {
    setStatus("connecting", "connecting");
    try {
      for await (const res of log.watch({ afterSeq: after, types: onlyType ? [onlyType] : [] })) {
        if (res.message.case === "event") {
          after = res.message.value.seq;
          show(res.message.value);
        } else if (res.message.case === "caughtUp") {
          wait = 500;
          setStatus("live", `live (caught up at seq ${res.message.value.headSeq})`);
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
