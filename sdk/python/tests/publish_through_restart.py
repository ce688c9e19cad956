"""Publishes CHRONOLOG_COUNT `pub.any` events ({"py": i}) at once on the Python client's publish
stream, prints `acked N` once N (CHRONOLOG_KILL_AFTER) were acknowledged (test/publish.test.ts
then kills the owner with SIGKILL and starts it again on the same port; test/python-follow-leader.test.ts,
with several owners in CHRONOLOG_URL, on another port of the list), and when every future
resolved prints one JSON line: the ids and seqs in publish order. Exits 1 if any failed.
"""

import json
import os
import sys
import threading

from chronolog import Client

client = Client(os.environ["CHRONOLOG_URL"], os.environ["CHRONOLOG_ADMIN_TOKEN"])
count = int(os.environ.get("CHRONOLOG_COUNT", "2000"))
kill_after = int(os.environ.get("CHRONOLOG_KILL_AFTER", "200"))
done = 0
lock = threading.Lock()


def acked(_future):
    global done
    with lock:
        done += 1
        if done == kill_after:
            print(f"acked {done}", flush=True)


futures = [client.publish("pub.any", {"py": i}) for i in range(count)]
for f in futures:
    f.add_done_callback(acked)
try:
    results = [f.result(timeout=60) for f in futures]
except Exception as e:  # noqa: BLE001 - reported to the test
    print(json.dumps({"error": repr(e)}), flush=True)
    sys.exit(1)
print(json.dumps({"ids": [r.event.id for r in results], "seqs": [r.event.seq for r in results], "existing": sum(r.existing for r in results)}), flush=True)
client.close()
