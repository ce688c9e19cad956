import { Ajv2020 } from "ajv/dist/2020.js";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { ActorField, Role } from "./auth/principal.js";
import { configRetentionRules, retentionConfigSchema, type RetentionConfig } from "./log/retention-rules.js";
import { sha256Hex } from "./sha256.js";
import type { TracingConfig } from "./tracing/setup.js";

/** One principal as written in the config file. */
export interface PrincipalConfig {
  name: string;
  /** The bearer token, or its SHA-256 in hex as `token_sha256`. */
  token?: string;
  token_sha256?: string;
  role: Role;
  /** Actor fields used when a request asserts none. */
  actor?: Partial<Record<ActorField, string>>;
  /** Per actor field, the patterns a request may assert (`*`, `prefix*` or exact). */
  assert?: Partial<Record<ActorField, string[]>>;
  /** Executors: the plugins (patterns: `*`, `prefix*` or exact) whose manifests its hellos may register and whose work it may host (default `*`). */
  plugins?: string[];
}

/** The owner's config file (`chronolog serve --config FILE`), JSON or YAML. */
export interface OwnerConfig {
  /** Who may call, by bearer token; absent: every caller is the local admin and the owner binds loopback only. */
  principals?: PrincipalConfig[];
  /** Origins allowed to call from browsers (`*` for any). */
  cors?: { origins: string[] };
  /** PEM files, relative to the config file; enables TLS. */
  tls?: { cert: string; key: string };
  limits?: {
    /** Largest request message in bytes (default 4 MiB); larger ones get RESOURCE_EXHAUSTED. */
    max_message_bytes?: number;
    /** Emits a Publish stream may have unacknowledged (default 1,024); the owner reads no more of it while that many are. */
    publish_window?: number;
  };
  /** This owner's region (default 0; `serve --region` overrides): it makes only the declared schedules of this region. */
  region?: number;
  timers?: {
    /** Spent timers and ended occurrences older than this many days are deleted, hourly (default 7; 0 keeps them forever; time/retention.ts). */
    retention_days?: number;
    /** How far ahead of their moment calls are claimed and started, ms (default 250, 0..1000; `serve --timer-lookahead-ms` overrides; time/clock-arm.ts). */
    lookahead_ms?: number;
  };
  /** Traces over OTLP/HTTP (tracing/setup.ts); the standard OTEL_* environment variables win over these. */
  tracing?: TracingConfig;
  /** What the console shows (console.ts's ConsoleSettings). */
  console?: {
    /** A trace viewer's URL with `{trace_id}` where an event's trace id goes: the console links traces there. */
    trace_url?: string;
  };
  actions?: {
    /** Finished action calls older than this many days (a whole number) are deleted, hourly (default 7; 0 keeps them forever; `serve --call-retention-days` overrides; actions/retention.ts). */
    call_retention_days?: number;
  };
  /** The log's retention: rules by event type and a log-wide size limit (log/retention-rules.ts, docs/retention.md). */
  log?: { retention?: RetentionConfig };
}

const actorPatterns = { type: "array", items: { type: "string", minLength: 1 } };
const configSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    principals: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "role"],
        oneOf: [{ required: ["token"] }, { required: ["token_sha256"] }],
        properties: {
          name: { type: "string", pattern: "^(?!role:)[A-Za-z0-9_.:@-]+$" },
          token: { type: "string", minLength: 16 },
          token_sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
          role: { enum: ["admin", "executor", "client"] },
          actor: {
            type: "object",
            additionalProperties: false,
            properties: { id: { type: "string" }, for: { type: "string" }, in: { type: "string" }, via: { type: "string" } },
          },
          assert: {
            type: "object",
            additionalProperties: false,
            properties: { id: actorPatterns, for: actorPatterns, in: actorPatterns, via: actorPatterns },
          },
          plugins: actorPatterns,
        },
      },
    },
    cors: { type: "object", additionalProperties: false, required: ["origins"], properties: { origins: { type: "array", items: { type: "string" } } } },
    tls: { type: "object", additionalProperties: false, required: ["cert", "key"], properties: { cert: { type: "string" }, key: { type: "string" } } },
    region: { type: "integer", minimum: 0, maximum: 4294967295 },
    timers: {
      type: "object",
      additionalProperties: false,
      properties: { retention_days: { type: "number", minimum: 0, maximum: 36600 }, lookahead_ms: { type: "integer", minimum: 0, maximum: 1000 } },
    },
    tracing: {
      type: "object",
      additionalProperties: false,
      properties: {
        endpoint: { type: "string", pattern: "^https?://" },
        service_name: { type: "string", minLength: 1 },
        sample_ratio: { type: "number", minimum: 0, maximum: 1 },
      },
    },
    console: {
      type: "object",
      additionalProperties: false,
      properties: { trace_url: { type: "string", pattern: "^https?://.*\\{trace_id\\}" } },
    },
    actions: { type: "object", additionalProperties: false, properties: { call_retention_days: { type: "integer", minimum: 0, maximum: 36600 } } },
    log: { type: "object", additionalProperties: false, properties: { retention: retentionConfigSchema } },
    limits: {
      type: "object",
      additionalProperties: false,
      properties: {
        max_message_bytes: { type: "integer", minimum: 1024, maximum: 268435456 },
        publish_window: { type: "integer", minimum: 1, maximum: 65536 },
      },
    },
  },
};

/**
 * Reads and checks a config file. Throws an Error naming the file and the
 * offending path (the owner refuses to start on a bad config). TLS paths are
 * resolved relative to the file.
 */
export function loadConfig(path: string): OwnerConfig {
  let json: unknown;
  try {
    const text = readFileSync(path, "utf8");
    json = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new Error(`cannot read config ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const validate = new Ajv2020({ allErrors: true }).compile<OwnerConfig>(configSchema);
  if (!validate(json)) {
    const problems = (validate.errors ?? [])
      .map(
        (e) =>
          `${e.instancePath || "/"} ${e.message}${e.keyword === "additionalProperties" ? ` (${String((e.params as { additionalProperty: string }).additionalProperty)})` : ""}`,
      )
      .join("; ");
    throw new Error(`invalid config ${path}: ${problems}`);
  }
  const principals = json.principals ?? [];
  const names = principals.map((p) => p.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new Error(`invalid config ${path}: principal ${dup} is declared twice`);
  const hashes = principals.map((p) => p.token_sha256 ?? sha256Hex(p.token ?? ""));
  const shared = hashes.findIndex((h, i) => hashes.indexOf(h) !== i);
  if (shared >= 0)
    throw new Error(
      `invalid config ${path}: principals ${principals[hashes.indexOf(hashes[shared])].name} and ${principals[shared].name} have the same token; each principal needs its own`,
    );
  try {
    configRetentionRules(json.log?.retention);
  } catch (e) {
    throw new Error(`invalid config ${path}: ${(e as Error).message}`);
  }
  const archive = json.log?.retention?.archive;
  if (archive) archive.dir = resolve(dirname(path), archive.dir);
  if (json.tls) json.tls = { cert: resolve(dirname(path), json.tls.cert), key: resolve(dirname(path), json.tls.key) };
  return json;
}
