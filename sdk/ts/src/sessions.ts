// The HTTP/2 connections a client keeps to one owner: connect-node's session manager, with
// every session it hands out given a last "error" listener.
//
// When the owner stops answering, the manager's ping destroys the session with "PING timed
// out"; Node emits that error when the socket closes, a moment later. If a call was made again
// meanwhile (a Watch opened again at the same owner after trying the next), the manager has
// already left that session and taken its listeners off, and an "error" event with no listener
// throws from the event loop: the client's whole process exits. The calls on the session see the
// error themselves (their streams fail, UNAVAILABLE), so the listener only keeps it from throwing.

import type * as http2 from "node:http2";
import { Http2SessionManager } from "@connectrpc/connect-node";

export class OwnerSessions extends Http2SessionManager {
  private readonly guarded = new WeakSet<http2.ClientHttp2Session>();

  override async request(...args: Parameters<Http2SessionManager["request"]>): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(...args);
    const session = stream.session as http2.ClientHttp2Session | undefined;
    if (session && !this.guarded.has(session)) {
      this.guarded.add(session);
      session.on("error", ignore);
    }
    return stream;
  }
}

function ignore(): void {}
