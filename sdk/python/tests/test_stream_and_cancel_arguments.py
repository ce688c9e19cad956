"""The Python SDK's stream and cancel-on arguments: how ``expected_version`` and ``cancel_on``
become protobuf, and that malformed ones fail in the SDK before any call. Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_stream_and_cancel_arguments.py
"""

import unittest

from chronolog.streams import expected_version, stream_fields
from chronolog.time_requests import cancel_on_entries, delay_request


class StreamAndCancelArguments(unittest.TestCase):
    """``expected_version``, ``stream_fields`` and ``cancel_on_entries`` map the documented forms and refuse others."""

    def test_expected_version_forms(self):
        """no_stream, any and a position from 0; anything else is a ValueError."""
        self.assertTrue(expected_version("no_stream").no_stream)
        self.assertTrue(expected_version("any").any)
        self.assertEqual(expected_version(0).WhichOneof("version"), "position")
        self.assertEqual(expected_version(7).position, 7)
        for bad in (-1, True, "NoStream", 1.5):
            with self.assertRaises(ValueError):
                expected_version(bad)

    def test_stream_fields(self):
        """None without a stream; an expected version alone is refused."""
        self.assertEqual(stream_fields(None, None), {})
        self.assertEqual(stream_fields("order-o-1", None), {"stream": "order-o-1"})
        self.assertEqual(stream_fields("order-o-1", 3)["expected_version"].position, 3)
        with self.assertRaises(ValueError):
            stream_fields(None, "no_stream")

    def test_cancel_on_entries(self):
        """type and match (optional) per entry, on a delay request too; unknown keys are refused."""
        [entry] = cancel_on_entries([{"type": "order.paid", "match": {"data.order_id": "input.order_id"}}])
        self.assertEqual((entry.type, dict(entry.match)), ("order.paid", {"data.order_id": "input.order_id"}))
        self.assertEqual(dict(cancel_on_entries([{"type": "order.noted"}])[0].match), {})
        request = delay_request("shop.remind", {"order_id": "o-1"}, {"interval_ms": 1000}, "unbounded", cancel_on=[{"type": "order.paid"}])
        self.assertEqual([c.type for c in request.cancel_on], ["order.paid"])
        for bad in ([{"match": {}}], [{"type": "a.b", "when": 1}], [{"type": 3}]):
            with self.assertRaises(ValueError):
                cancel_on_entries(bad)


if __name__ == "__main__":
    unittest.main()
