// A client in a process of its own watching the owners given (argv[2], comma-separated):
// prints each event's seq on a line, and `ended <code>` if the watch ends. A crash of the client
// ends the process (its exit code says how), which a test sees.
import { createClient } from "../../sdk/ts/src/client.js";

const client = createClient({ url: process.argv[2] });
try {
  for await (const e of client.watch({ types: [process.argv[3]] })) console.log(String(e.seq));
  console.log("ended ok");
} catch (e) {
  console.log(`ended ${(e as { code?: unknown }).code}`);
}
