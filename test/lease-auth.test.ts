// Owners of one PostgreSQL database compare their principals through the lease: an owner started
// without principals (it would serve every caller as the local admin) refuses to join a database
// whose owners require tokens, as a standby or after the leader stopped, and says why.
//
// @module-tag postgres

import { afterAll, describe, expect, it } from "vitest";
import { onPostgres, startTestOwner, tempDir, testDatabase } from "./helpers/owner.js";

describe.runIf(onPostgres)("an owner without principals on a database whose owners require tokens", () => {
  const leaderDir = tempDir();
  const store = onPostgres ? testDatabase(leaderDir) : "";
  let leader: Awaited<ReturnType<typeof startTestOwner>> | undefined;
  afterAll(async () => leader?.close());

  it("refuses to start, beside the leader and after it stopped; an owner with principals starts", async () => {
    const principals = [{ name: "ops", token: "lease-auth-admin-token", role: "admin" as const }];
    leader = await startTestOwner({ dataDir: leaderDir, store, config: { principals } });
    await expect(startTestOwner({ store })).rejects.toThrow(/this database's owners require tokens .* start it with the same --config/);
    await leader.close();
    leader = undefined;
    await expect(startTestOwner({ store })).rejects.toThrow(/require tokens/);
    leader = await startTestOwner({ store, config: { principals } });
    expect(leader.port).toBeGreaterThan(0);
  });
});
