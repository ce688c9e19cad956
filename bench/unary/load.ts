// Load generator of bench/unary: a forked child that runs closed-loop unary
// calls with @grpc/grpc-js (requests encoded once, responses left as bytes)
// and answers each IPC request with a result. It tells the parent when the
// warm-up is over and when the measured window ends ({ phase }), so the
// parent reads the server's CPU time over the same window.

import * as grpc from "@grpc/grpc-js";

/** One measured run. */
export interface UnaryLoad {
  /** host:port */
  target: string;
  /** e.g. /grpc.health.v1.Health/Check */
  method: string;
  /** Request payloads (protobuf binary, base64), cycled through. */
  payloads: string[];
  /** Bearer token sent with every call, if any. */
  token?: string;
  callers: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
}

export interface UnaryResult {
  calls: number;
  errors: number;
  firstError?: string;
  callsPerSec: number;
  /** CPU used by this generator during the measured window, % of one core. */
  cpuPercent: number;
}

export async function runUnaryLoad(req: UnaryLoad, onPhase: (phase: "start" | "end") => void): Promise<UnaryResult> {
  const clients = Array.from(
    { length: req.connections },
    // A local subchannel pool per client: each one gets its own TCP connection.
    () => new grpc.Client(req.target, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }),
  );
  const payloads = req.payloads.map((p) => Buffer.from(p, "base64"));
  const metadata = new grpc.Metadata();
  if (req.token) metadata.set("authorization", `Bearer ${req.token}`);
  const identity = (b: Buffer) => b;
  const call = (client: grpc.Client, payload: Buffer) =>
    new Promise<void>((resolve, reject) =>
      client.makeUnaryRequest(req.method, identity, identity, payload, metadata, (err) => (err ? reject(err) : resolve())),
    );

  const start = performance.now();
  const measureFrom = start + req.warmupMs;
  const measureTo = measureFrom + req.durationMs;
  let calls = 0;
  let errors = 0;
  let firstError: string | undefined;
  let cpuAtStart: NodeJS.CpuUsage | undefined;
  let cpu: NodeJS.CpuUsage | undefined;
  const end = () => {
    cpu = process.cpuUsage(cpuAtStart);
    onPhase("end");
  };
  const timers = [
    setTimeout(() => {
      cpuAtStart = process.cpuUsage();
      onPhase("start");
    }, req.warmupMs),
    setTimeout(end, req.warmupMs + req.durationMs),
  ];
  const caller = async (index: number) => {
    const client = clients[index % clients.length];
    let i = index;
    while (performance.now() < measureTo) {
      try {
        await call(client, payloads[i % payloads.length]);
        const now = performance.now();
        if (now >= measureFrom && now <= measureTo) calls++;
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
        if (errors > 1000) throw new Error(`too many errors, first: ${firstError}`);
      }
      i += req.callers;
    }
  };
  await Promise.all(Array.from({ length: req.callers }, (_, i) => caller(i)));
  timers.forEach(clearTimeout);
  // The callers can all finish before a late end timer fires.
  if (!cpu) end();
  for (const c of clients) c.close();
  return { calls, errors, firstError, callsPerSec: calls / (req.durationMs / 1000), cpuPercent: ((cpu!.user + cpu!.system) / 1000 / req.durationMs) * 100 };
}

if (process.send && import.meta.url === `file://${process.argv[1]}`) {
  process.on("message", (req: UnaryLoad) => {
    runUnaryLoad(req, (phase) => process.send!({ phase })).then(
      (result) => process.send!({ ok: true, result }),
      (e: unknown) => process.send!({ ok: false, error: e instanceof Error ? e.message : String(e) }),
    );
  });
  process.send({ ready: true });
}
