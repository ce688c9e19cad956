"""The Python client given several owners follows the leader: a standby first (it refuses every
call with UNAVAILABLE and ``chronolog-leader: <the leader's url>``), or a port where nothing
listens. Emits (publish stream and unary), action calls, reads and a watch reach the leader and
write every event once; the pyshop executor (examples/python/executor.py, given the standby
first too) prices the carts.

Run by test/follow-leader.test.ts, which starts the owner, the standbys and the executor:

    CHRONOLOG_URLS=standby,leader CHRONOLOG_DEAD_URL=... CHRONOLOG_LONELY_URL=... \\
    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_follow_leader.py
"""

import os
import threading
import time
import unittest
import uuid

import grpc

from chronolog import ChronologError, Client, event_data

URLS = os.environ.get("CHRONOLOG_URLS", "")
DEAD = os.environ.get("CHRONOLOG_DEAD_URL", "")
LONELY = os.environ.get("CHRONOLOG_LONELY_URL", "")


class FollowLeader(unittest.TestCase):
    """Calls go to the leader among the owners given."""

    def test_standby_first(self):
        """Publishes, unary emits, a call and a watch at the leader through a standby; each event once; the executor prices the carts."""
        run = uuid.uuid4().hex[:8]
        with Client(URLS) as client, Client(URLS.split(","), emit_via="unary") as unary:
            watched = []
            watch = client.watch(types=["cart.submitted", "cart.checked"])
            reader = threading.Thread(target=lambda: [watched.append(e) for e in watch if event_data(e)["cart_id"].startswith(run)], daemon=True)
            reader.start()
            futures = [client.publish("cart.submitted", {"cart_id": f"{run}-{n}", "items": [{"sku": "tea", "price": 1.5, "qty": n + 1}]}, id=f"{run}-{n}") for n in range(10)]
            results = [f.result(timeout=30) for f in futures]
            results += [unary.emit("cart.submitted", {"cart_id": f"{run}-{n}", "items": [{"sku": "cup", "price": 2, "qty": 1}]}, id=f"{run}-{n}") for n in range(10, 12)]
            self.assertTrue(all(not r.existing for r in results))
            self.assertEqual(client.call("pyshop.total", {"items": [{"sku": "tea", "price": 1.5, "qty": 2}]}).output, {"total": 3, "items": 2})

            deadline = time.monotonic() + 20
            while len(watched) < 24 and time.monotonic() < deadline:
                time.sleep(0.05)
            submitted = [e for e in client.read(types=["cart.submitted"]) if e.id.startswith(run)]
            self.assertEqual(sorted(e.id for e in submitted), sorted(f"{run}-{n}" for n in range(12)))
            checked = {event_data(e)["cart_id"]: event_data(e)["total"] for e in client.read(types=["cart.checked"]) if event_data(e)["cart_id"].startswith(run)}
            self.assertEqual(checked, {**{f"{run}-{n}": 1.5 * (n + 1) for n in range(10)}, f"{run}-10": 2, f"{run}-11": 2})
            self.assertEqual(len(watched), 24)
            self.assertEqual(len({e.seq for e in watched}), 24)

    def test_dead_port_first(self):
        """An owner that cannot be reached is passed over; alone, it fails at once as before."""
        with Client([DEAD, URLS.split(",")[-1]]) as client:
            response = client.emit("cart.submitted", {"cart_id": "dead-first", "items": []})
            self.assertEqual(client.get_event(response.event.id).seq, response.event.seq)
        with Client(DEAD, emit_via="unary") as alone:
            started = time.monotonic()
            with self.assertRaises(ChronologError) as caught:
                alone.head()
            self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAVAILABLE)
            self.assertLess(time.monotonic() - started, 5)

    def test_standby_without_leader(self):
        """A standby that knows no leader: the call is asked again for failover_timeout_s, then its refusal is the caller's."""
        with Client(LONELY, emit_via="unary", failover_timeout_s=0.3) as client:
            with self.assertRaises(ChronologError) as caught:
                client.emit("cart.submitted", {"cart_id": "lonely", "items": []})
            self.assertEqual((caught.exception.code(), caught.exception.details()), (grpc.StatusCode.UNAVAILABLE, "this owner is a standby; no leader is known yet"))

    def test_bad_urls(self):
        """A list with an entry that is not an http(s) URL is refused before anything is sent, naming it."""
        with self.assertRaisesRegex(ValueError, r"^owner url 'ftp://x' \(url\[1\]\): expected http://host:port or https://host:port$"):
            Client([URLS.split(",")[0], "ftp://x"])
        with self.assertRaisesRegex(ValueError, r"^owner url '' \(url\[1\]\)"):
            Client(URLS.split(",")[0] + ",")
        with self.assertRaisesRegex(ValueError, r"^failover_timeout_s -1: expected a number of seconds >= 0$"):
            Client(URLS, failover_timeout_s=-1)


if __name__ == "__main__":
    unittest.main()
