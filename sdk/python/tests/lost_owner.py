"""Run by test/python-follow-leader.test.ts: two clients given the same two owners
(CHRONOLOG_URL, the first of which the test freezes with SIGSTOP after "ready") send unary emits.
After "go" on stdin, both at once: an emit without an id, lost with the frozen owner (its ping
unanswered), raises; an emit naming its id, lost so, is made again at the second owner. Prints one JSON line
with what happened.
"""

import json
import os
import sys
import threading
import time

from chronolog import ChronologError, Client

urls = os.environ["CHRONOLOG_URL"]
with Client(urls, emit_via="unary") as unnamed, Client(urls, emit_via="unary") as named:
    unnamed.emit("lost.any", {"n": 0}, id="lost-warm-0")
    named.emit("lost.any", {"n": 1}, id="lost-warm-1")
    print("ready", flush=True)
    sys.stdin.readline()
    # Both calls go out at once, on connections the owner's freeze has not yet been noticed on.
    result = {}

    def emit_named():
        started = time.monotonic()
        answer = named.emit("lost.any", {"n": 3}, id="lost-named")
        result.update(named=answer.event.id, existing=answer.existing, took_s=time.monotonic() - started)

    thread = threading.Thread(target=emit_named)
    thread.start()
    try:
        unnamed.emit("lost.any", {"n": 2})
        result["without_id"] = "answered"
    except ChronologError as e:
        result["without_id"] = e.status_code.name
    thread.join()
    print(json.dumps(result), flush=True)
