import { createServer } from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { ExecutorService } from "../sdk/ts/src/gen/chronolog/v1/executor_pb.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";

describe("TypeScript executor SDK (X4)", () => {
  it("treats an owner silent for 3 heartbeat intervals as gone and reconnects", async () => {
    let subscribes = 0;
    // A fake owner: welcomes with a 100 ms heartbeat interval, then says nothing more.
    const server = createServer(
      connectNodeAdapter({
        routes(router) {
          router.service(ExecutorService, {
            async *subscribe(requests, ctx) {
              subscribes++;
              yield { message: { case: "welcome", value: { sessionId: `s${subscribes}`, heartbeatIntervalMs: 100 } } };
              for await (const _ of requests) if (ctx.signal.aborted) return;
            },
          });
        },
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const executor = runExecutor({ url, plugins: [definePlugin({ name: "quiet" })], maxBackoffMs: 50, onError: () => {} });
    await executor.ready;
    const started = Date.now();
    while (subscribes < 2 && Date.now() - started < 3_000) await new Promise((r) => setTimeout(r, 20));
    const waitedMs = Date.now() - started;
    await executor.stop(0);
    server.close();
    expect(subscribes).toBeGreaterThanOrEqual(2);
    expect(waitedMs).toBeGreaterThanOrEqual(250); // not before 3 silent intervals (300 ms, timer granularity aside)
  });
});
