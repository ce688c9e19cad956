import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createTransport } from "../../../sdk/ts/src/transport.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { leaderKey, roleKey } from "../../../sdk/ts/src/owner-failures.js";
import { ownerUnavailableStatus, urlsOf, type ClientFlags } from "./client-commands.js";
import { formatTable } from "./table.js";

/** How long one owner's health check may take. */
const checkTimeoutMs = 5_000;

/** One owner's answer to a health check. */
interface OwnerHealth {
  url: string;
  /** `leader` or `standby` as the owner says (an owner that says nothing and serves leads alone), `-` when it did not answer. */
  role: string;
  /** SERVING, NOT_SERVING, ... or UNREACHABLE. */
  status: string;
  /** The leader's URL the owner names, "" when it names none. */
  leader: string;
  /** Why it did not answer, "" when it did. */
  error: string;
}

/**
 * `chronolog health [--json]`: asks each owner of `--url` (one, or a comma-separated list) for
 * its health (grpc.health.v1.Health/Check) and prints its role (leader or standby), status and
 * the leader it names. Exits 0 when an owner serves (leads), else {@link ownerUnavailableStatus}.
 */
export async function healthCommand(flags: ClientFlags & { json: boolean }): Promise<void> {
  const owners = await Promise.all(urlsOf(flags.url).map((url) => check(url, flags.token ?? process.env.CHRONOLOG_TOKEN)));
  if (flags.json) for (const o of owners) console.log(JSON.stringify(o));
  else
    console.log(
      formatTable(
        ["URL", "ROLE", "STATUS", "LEADER", "ERROR"],
        owners.map((o) => [o.url, o.role, o.status, o.leader, o.error]),
        ["ERROR"],
      ),
    );
  if (!owners.some((o) => o.status === ServingStatus[ServingStatus.SERVING])) process.exitCode = ownerUnavailableStatus;
}

async function check(url: string, token: string | undefined): Promise<OwnerHealth> {
  const metadata = new Headers();
  const keep = (headers: Headers) => headers.forEach((value, key) => metadata.set(key, value));
  const health = createRpcClient(Health, createTransport({ url, token, failoverTimeoutMs: 0 }));
  try {
    const { status } = await health.check({}, { timeoutMs: checkTimeoutMs, onHeader: keep, onTrailer: keep });
    const role = metadata.get(roleKey) ?? (status === ServingStatus.SERVING ? "leader" : "-");
    return { url, role, status: ServingStatus[status], leader: metadata.get(leaderKey) ?? (role === "leader" ? url : ""), error: "" };
  } catch (e) {
    const error = ConnectError.from(e);
    return { url, role: "-", status: "UNREACHABLE", leader: "", error: `${Code[error.code]}: ${error.rawMessage}` };
  }
}
