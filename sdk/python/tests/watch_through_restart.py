"""Watches ``pub.any`` events with the Python client given several owners (CHRONOLOG_URL, a
comma-separated list) and prints ``watching`` once it is caught up, then the seq of each event it
gets, one a line, until it got CHRONOLOG_COUNT of them. test/python-follow-leader.test.ts kills
the leader meanwhile (SIGKILL) and starts it again on another port of the list: the watch goes on
there after the last event it gave. Exits 1 with the error if the watch ended.
"""

import os
import sys

from chronolog import Client, event_data

count = int(os.environ.get("CHRONOLOG_COUNT", "2000"))
client = Client(os.environ["CHRONOLOG_URL"])
print(f"watching from {client.head()}", flush=True)
seen = 0
try:
    for event in client.watch(types=["pub.any"]):
        if "py" in event_data(event):
            print(event.seq, flush=True)
            seen += 1
            if seen == count:
                break
except Exception as e:  # noqa: BLE001 - reported to the test
    print(f"error {e!r}", flush=True)
    sys.exit(1)
client.close()
