"""The Python client's publish stream (LogService.Publish) against a real owner: emits in
flight on one stream are acknowledged in call order with dense seqs; a refused emit fails
alone with the owner's code, message and field violations (as Emit's) while its neighbours
commit; Watch with data as JSON text gives the same data as with the Struct.

Run against an owner with an admin principal whose token is CHRONOLOG_ADMIN_TOKEN and the
`pub` plugin of test/publish.test.ts (which runs it):

    CHRONOLOG_URL=... CHRONOLOG_ADMIN_TOKEN=... PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_publish.py
"""

import os
import unittest
import uuid

import grpc

from chronolog import ChronologError, Client, event_data

URL = os.environ.get("CHRONOLOG_URL", "http://127.0.0.1:50051")
ADMIN = os.environ.get("CHRONOLOG_ADMIN_TOKEN", "")


class Publish(unittest.TestCase):
    """The default emit path of the Python client."""

    @classmethod
    def setUpClass(cls):
        """An admin client (its emits go on the publish stream)."""
        cls.client = Client(URL, ADMIN)

    @classmethod
    def tearDownClass(cls):
        """Closes it."""
        cls.client.close()

    def test_acks_in_order_with_dense_seqs(self):
        """500 publishes in flight resolve in call order, seqs dense, each in the log once."""
        run = uuid.uuid4().hex[:8]
        futures = [self.client.publish("pub.tick", {"n": n, "run": run}) for n in range(500)]
        results = [f.result(timeout=30) for f in futures]
        seqs = [r.event.seq for r in results]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + 500)))
        self.assertTrue(all(r.event.id and not r.existing for r in results))
        stored = [e for e in self.client.read(after_seq=seqs[0] - 1, types=["pub.tick"]) if e.seq <= seqs[-1]]
        self.assertEqual([(e.id, e.data["n"]) for e in stored], [(r.event.id, n) for n, r in enumerate(results)])
        # emit() waits for its ack; the same id again answers the stored event.
        again = self.client.emit("pub.tick", {"n": 0, "run": run}, id=results[0].event.id)
        self.assertTrue(again.existing)
        self.assertEqual(again.event.seq, seqs[0])
        self.assertEqual(event_data(again.event), {"n": 0, "run": run})

    def test_a_refused_emit_fails_alone(self):
        """A schema violation and an undeclared type fail with Emit's errors; the emits around them commit."""
        before = self.client.publish("pub.tick", {"n": 1})
        bad = self.client.publish("pub.tick", {"n": -1})
        undeclared = self.client.publish("nobody.declared", {})
        after = self.client.publish("pub.tick", {"n": 2})
        first, last = before.result(timeout=10), after.result(timeout=10)
        self.assertGreater(last.event.seq, first.event.seq)
        with self.assertRaises(ChronologError) as caught:
            bad.result(timeout=10)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(caught.exception.reason, "SCHEMA_VIOLATION")
        self.assertEqual([v.field for v in caught.exception.field_violations], ["data/n"])
        unary = Client(URL, ADMIN, emit_via="unary")
        try:
            with self.assertRaises(ChronologError) as direct:
                unary.emit("pub.tick", {"n": -1})
        finally:
            unary.close()
        self.assertEqual(caught.exception.details(), direct.exception.details())
        self.assertEqual(caught.exception.field_violations, direct.exception.field_violations)
        with self.assertRaises(ChronologError) as caught:
            undeclared.result(timeout=10)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(caught.exception.reason, "UNDECLARED_EVENT_TYPE")

    def test_watch_json_text_equals_struct(self):
        """The same events watched with data as JSON text (the default) and as a Struct give the same dicts."""
        head = self.client.head()
        samples = [{"s": "héllo 😀", "n": 1, "f": 0.5, "big": 1e21, "l": [1, None, True, {"a": []}]}, {}]
        for data in samples:
            self.client.emit("pub.any", data)

        def watched(data_json):
            out = []
            stream = self.client.watch(after_seq=head, types=["pub.any"], data_json=data_json)
            for event in stream:
                self.assertEqual(bool(event.data_json), data_json)
                out.append(event_data(event))
                if len(out) == len(samples):
                    stream.close()
            return out

        self.assertEqual(watched(True), watched(False))
        self.assertEqual(watched(True), samples)


if __name__ == "__main__":
    unittest.main()
