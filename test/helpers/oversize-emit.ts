// A client process that sends one emit past the owner's message limit, then a small one, and ends
// its script: it must exit by itself (nothing of the refused call may hold its event loop).
// Usage: node --import tsx test/helpers/oversize-emit.ts URL
import { createClient } from "../../sdk/ts/src/client.js";

const client = createClient({ url: process.argv[2] });
await client.registerPlugin({ name: "big", events: { "big.e": { allow: ["*"] } } });
const refused = await client.emit("big.e", { s: "x".repeat(5 * 1024 * 1024) }).then(
  () => "accepted",
  (e: Error) => e.message,
);
const small = await client.emit("big.e", { s: "small" });
console.log(JSON.stringify({ refused, seq: String(small.event?.seq) }));
