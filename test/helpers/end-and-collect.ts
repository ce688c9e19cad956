// Connects to the PostgreSQL database at argv[2], runs a query and ends the connection with
// endNative, then collects garbage at once (twice), 100 times over (run with --expose-gc): a client
// collected before libuv finished closing its socket watcher aborts the process.
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";

const url = process.argv[2];
const gc = (globalThis as { gc?: () => void }).gc;
if (!url || !gc) throw new Error("usage: node --expose-gc --import tsx test/helpers/end-and-collect.ts <postgres url>");

function connectQueryEnd(): void {
  const client = connectNative(url, "chronolog tests");
  client.querySync("SELECT 1");
  endNative(client);
}

for (let i = 0; i < 100; i++) {
  connectQueryEnd();
  gc();
  gc(); // the second collection frees what the first found unreachable
  await new Promise((resolve) => setTimeout(resolve, 1));
}
console.log("ended and collected 100 clients");
