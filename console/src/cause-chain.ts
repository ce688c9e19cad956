// The chain of causes above an event, as the console's event page shows it: each link a GetEvent
// with the page's token, so it holds what that principal may read and no more.

import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import type { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { ErrorInfoSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";

/** A cause the principal may not read (GetEvent: PERMISSION_DENIED): its id and type, no content. */
export interface Withheld {
  withheld: true;
  id: string;
  type: string;
}

export type ChainLink = Event | Withheld;

/**
 * The event `first` and up to `maxDepth - 1` causes above it, each a GetEvent. A cause of a type the principal may not
 * read is a withheld link (the refusal names its type and its own cause, so the chain goes on
 * above it); a cause not in the log (or in a space the principal does not reach) ends the chain.
 */
export async function causeChain(log: Pick<Client<typeof LogService>, "getEvent">, first: string, maxDepth: number): Promise<ChainLink[]> {
  const chain: ChainLink[] = [];
  let id = first;
  while (id && chain.length < maxDepth) {
    let event: Event | undefined;
    try {
      event = (await log.getEvent({ id })).event;
    } catch (e) {
      const refusal = chain.length > 0 ? withheld(e, id) : undefined;
      if (refusal) {
        chain.push(refusal.link);
        id = refusal.cause;
        continue;
      }
      if (chain.length > 0 && ConnectError.from(e).code === Code.NotFound) break;
      throw e;
    }
    if (!event) break;
    chain.push(event);
    id = event.cause;
  }
  return chain;
}

/** The withheld link a GetEvent refusal stands for, with the cause above it; undefined for any other error. */
function withheld(e: unknown, id: string): { link: Withheld; cause: string } | undefined {
  const err = ConnectError.from(e);
  if (err.code !== Code.PermissionDenied) return undefined;
  const info = err.findDetails(ErrorInfoSchema)[0];
  return { link: { withheld: true, id, type: info?.metadata.type ?? "" }, cause: info?.metadata.cause ?? "" };
}
