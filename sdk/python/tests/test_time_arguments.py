"""The Python SDK's time arguments: how ``when`` and ``overdue`` become
protobuf, and that malformed ones fail in the SDK with a clear message before any call.
Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_time_arguments.py
"""

import unittest
from datetime import datetime, timedelta, timezone

from chronolog import Client
from chronolog.time_requests import delay_request, overdue_bound, timer_spec


class TimeArguments(unittest.TestCase):
    """``timer_spec`` and ``overdue_bound`` map the documented forms and refuse others."""

    def test_timer_spec_forms(self):
        """at (aware datetime or ms, rounded to whole ms), cron with or without zone, every_ms."""
        berlin = timezone(timedelta(hours=1))
        spec = timer_spec({"at": datetime(2030, 1, 1, 10, 0, 0, 1600, tzinfo=berlin)})
        self.assertEqual((spec.at.seconds, spec.at.nanos), (1893488400, 2_000_000))  # 09:00:00.0016 UTC, rounded to whole ms
        self.assertEqual(spec.at.ToMilliseconds(), timer_spec({"at": 1893488400002.4}).at.ToMilliseconds())
        self.assertEqual(timer_spec({"cron": "0 9 * * 1", "zone": "Europe/Berlin"}).cron.zone, "Europe/Berlin")
        self.assertEqual(timer_spec({"cron": "0 9 * * 1"}).cron.zone, "")
        self.assertEqual(timer_spec({"every_ms": 5000}).every_ms, 5000)

    def test_timer_spec_refusals(self):
        """A naive datetime (zone unknown), an unknown or mixed form, a wrong type."""
        with self.assertRaisesRegex(ValueError, "naive datetime"):
            timer_spec({"at": datetime(2030, 1, 1)})
        with self.assertRaisesRegex(ValueError, "expected"):
            timer_spec({"every_ms": 1000, "cron": "* * * * *"})
        with self.assertRaisesRegex(ValueError, "expected"):
            timer_spec({"everyMs": 1000})
        with self.assertRaisesRegex(TypeError, "timezone-aware datetime or ms"):
            timer_spec({"at": "2030-01-01T00:00:00Z"})

    def test_milliseconds_are_whole(self):
        """every_ms, interval_ms and max_lateness_ms take whole numbers (60000.0 too); 1.5, "5" or True are refused naming the field."""
        self.assertEqual(timer_spec({"every_ms": 60000.0}).every_ms, 60000)
        self.assertEqual(delay_request("a.b", None, {"interval_ms": 1000}, "unbounded").interval_ms, 1000)
        for bad in (1.5, "5", True, None):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(ValueError, r"^every_ms must be a whole number of milliseconds"):
                    timer_spec({"every_ms": bad})
                with self.assertRaisesRegex(ValueError, r"^interval_ms must be a whole number of milliseconds"):
                    delay_request("a.b", None, {"interval_ms": bad}, "unbounded")
                with self.assertRaisesRegex(ValueError, r"^max_lateness_ms must be a whole number of milliseconds"):
                    overdue_bound({"max_lateness_ms": bad})

    def test_overdue_forms_and_refusals(self):
        """The three bounds; anything else is refused naming the forms."""
        self.assertEqual(overdue_bound("unbounded").WhichOneof("bound"), "unbounded")
        self.assertEqual(overdue_bound("on_time_or_never").WhichOneof("bound"), "on_time_or_never")
        self.assertEqual(overdue_bound({"max_lateness_ms": 250}).max_lateness_ms, 250)
        for bad in ("onTimeOrNever", {"maxLatenessMs": 1}, None, 5):
            with self.assertRaisesRegex(ValueError, "'unbounded', 'on_time_or_never' or"):
                overdue_bound(bad)

    def test_client_refuses_before_calling(self):
        """Bad arguments fail in the client, without reaching an owner (none listens on port 9)."""
        with Client("http://127.0.0.1:9") as client:
            with self.assertRaisesRegex(ValueError, "interval_ms"):
                client.delay("a.b", {}, {"every_ms": 5}, "unbounded")
            with self.assertRaisesRegex(ValueError, "naive datetime"):
                client.delay("a.b", {}, {"at": datetime(2030, 1, 1)}, "unbounded")
            with self.assertRaisesRegex(ValueError, "overdue"):
                client.schedule("a.b", {}, {"every_ms": 5000}, overdue="sometimes")
            with self.assertRaisesRegex(ValueError, "kind"):
                next(client.list_timers(kind="weekly"))


if __name__ == "__main__":
    unittest.main()
