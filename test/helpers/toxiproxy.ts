// Toxiproxy (github.com/Shopify/toxiproxy), a TCP proxy that injects network faults, for the
// tests and benchmarks that put distance or faults between an owner and its PostgreSQL server.
// .ci/run builds it into .tools/toxiproxy-server; TOXIPROXY_SERVER names another binary.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";

const repo = new URL("../../", import.meta.url).pathname;

/** The toxiproxy-server binary: TOXIPROXY_SERVER, or .tools/toxiproxy-server (undefined when neither is there). */
export function toxiproxyBinary(): string | undefined {
  const binary = process.env.TOXIPROXY_SERVER ?? `${repo}.tools/toxiproxy-server`;
  return existsSync(binary) ? binary : undefined;
}

/** A proxy to one upstream: `listen` is its host:port; toxics change what passes through it. */
export interface Proxy {
  listen: string;
  /** Adds `ms` to every answer from the upstream (a latency toxic on the downstream stream), replacing any added before. */
  latency(ms: number): Promise<void>;
  /** Adds a toxic: `timeout` (data stops; with timeout 0 the connection hangs until removed), `reset_peer` (connections reset). */
  fault(type: "timeout" | "reset_peer", attributes?: Record<string, number>): Promise<void>;
  /**
   * A black hole: nothing passes either way any more, on the connections open and on new ones,
   * until cleared (a latency of an hour on both streams). The `timeout` toxic drops data but passes
   * the upstream's close on (a database ending a connection): a network that drops packets does not.
   */
  blackHole(): Promise<void>;
  /** Removes every toxic. */
  clear(): Promise<void>;
}

/** A running toxiproxy server. */
export interface Toxiproxy {
  /** A proxy listening on a free loopback port, to `upstream` (host:port). */
  proxy(name: string, upstream: string): Promise<Proxy>;
  stop(): void;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** Starts toxiproxy-server on a free loopback port; throws when the binary is missing. */
export async function startToxiproxy(): Promise<Toxiproxy> {
  const binary = toxiproxyBinary();
  if (!binary)
    throw new Error("toxiproxy-server is not installed: .ci/run builds it into .tools/ (go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0)");
  const port = await freePort();
  const child: ChildProcess = spawn(binary, ["-host", "127.0.0.1", "-port", String(port)], { stdio: "ignore" });
  const api = `http://127.0.0.1:${port}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!response.ok) throw new Error(`toxiproxy ${method} ${path}: ${response.status} ${await response.text()}`);
    return response.status === 204 ? undefined : response.json();
  };
  for (let tries = 0; ; tries++) {
    try {
      await call("GET", "/version");
      break;
    } catch (e) {
      if (tries > 100) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    async proxy(name, upstream) {
      const listen = `127.0.0.1:${await freePort()}`;
      await call("POST", "/proxies", { name, listen, upstream, enabled: true });
      const toxics = async () => ((await call("GET", `/proxies/${name}/toxics`)) as { name: string }[]).map((t) => t.name);
      const clear = async () => {
        for (const toxic of await toxics()) await call("DELETE", `/proxies/${name}/toxics/${toxic}`);
      };
      return {
        listen,
        async latency(ms) {
          await clear();
          if (ms > 0)
            await call("POST", `/proxies/${name}/toxics`, { name: "latency", type: "latency", stream: "downstream", attributes: { latency: ms, jitter: 0 } });
        },
        async fault(type, attributes = {}) {
          await call("POST", `/proxies/${name}/toxics`, {
            name: type,
            type,
            stream: "downstream",
            attributes: type === "timeout" ? { timeout: 0, ...attributes } : attributes,
          });
        },
        async blackHole() {
          for (const stream of ["upstream", "downstream"])
            await call("POST", `/proxies/${name}/toxics`, {
              name: `black_hole_${stream}`,
              type: "latency",
              stream,
              attributes: { latency: 3_600_000, jitter: 0 },
            });
        },
        clear,
      };
    },
    stop: () => void child.kill(),
  };
}
