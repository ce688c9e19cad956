"""One Python executor process of the delivery benchmark (BENCH_EXECUTOR=python), as executor.ts:
hosts ``bench.drain`` (the same declaration as plugin.ts) and acks at once. Prints {"ready":true},
then {"handled"} every 100 ms, and on SIGTERM {"handled","latencies","firstAt","lastAt"}
(commit-to-handler ms of every 10th event, epoch ms of the first and last delivery handled).
Usage: .venv/bin/python bench/deliver/executor.py URL
"""

import json
import signal
import sys
import threading
import time

from chronolog import Plugin, run_executor

url = sys.argv[1]
plugin = Plugin("bench", events={"bench.placed": {"allow": ["*"], "schema": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}}})
lock = threading.Lock()
state = {"handled": 0, "first": 0.0, "last": 0.0}
latencies: list = []


@plugin.processor("drain", on="bench.placed", key="data.key", concurrency=1024, start="beginning")
def drain(ctx):
    now = time.time() * 1000
    with lock:
        state["handled"] += 1
        if state["handled"] == 1:
            state["first"] = now
        state["last"] = now
        if state["handled"] % 10 == 0:
            at = ctx.event.at
            latencies.append(now - (at.seconds * 1000 + at.nanos / 1e6))


executor = run_executor([plugin], url=url, credits=512)
if not executor.wait_ready(30):
    sys.exit(2)
print(json.dumps({"ready": True}), flush=True)
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
while not done.wait(0.1):
    print(json.dumps({"handled": state["handled"]}), flush=True)
print(json.dumps({"handled": state["handled"], "latencies": latencies, "firstAt": state["first"], "lastAt": state["last"]}), flush=True)
sys.exit(0)
