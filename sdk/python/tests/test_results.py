"""The Python SDK's action results against the owner's largest message (``Welcome.max_message_bytes``):
an output that does not fit is answered with a terminal error instead, and a long error is cut
(the owner would end the stream on it, and the call would run again and again). Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_results.py
"""

import unittest

from chronolog.session import Outcome, cut_to_fit, fitting_result
from chronolog.values import to_struct
from chronolog.gen.chronolog.v1 import executor_pb2


def result(pad: int) -> executor_pb2.ActionResult:
    return executor_pb2.ActionResult(invocation_id="inv-1", outcome=Outcome.OUTCOME_OK, output=to_struct({"pad": "x" * pad}), started_late_ms=3)


class FittingResultTest(unittest.TestCase):
    def test_a_result_that_fits_is_sent_as_it_is(self):
        r = result(1_000)
        self.assertIs(fitting_result(r, 8_000), r)

    def test_a_result_too_large_becomes_a_terminal_error_naming_its_size_and_the_limit(self):
        r = fitting_result(result(9_000), 8_000)
        self.assertEqual(r.invocation_id, "inv-1")
        self.assertEqual(r.outcome, Outcome.OUTCOME_TERMINAL_ERROR)
        self.assertEqual(r.started_late_ms, 3)
        self.assertFalse(r.HasField("output"))
        self.assertRegex(r.error, r"^the action's output is 90\d\d bytes encoded, more than the owner reads in one message \(8000 bytes\): not sent$")

    def test_an_error_too_long_is_cut_and_keeps_its_outcome(self):
        r = fitting_result(executor_pb2.ActionResult(invocation_id="inv-2", outcome=Outcome.OUTCOME_ERROR, error="e" * 9_000), 8_000)
        self.assertEqual(r.outcome, Outcome.OUTCOME_ERROR)
        self.assertEqual(r.error, "e" * 250 + "… (cut from 9000 characters: the owner reads at most 8000 bytes a message)")
        self.assertEqual(cut_to_fit("short", 8_000), "short")


if __name__ == "__main__":
    unittest.main()
