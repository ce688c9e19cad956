"""The Python SDK refuses numbers JSON cannot hold (NaN, infinities) in what it sends, naming
their path, before any call (the owner would store them as null). Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_json_numbers.py
"""

import unittest

from chronolog import Client
from chronolog.values import to_struct


class JsonNumbers(unittest.TestCase):
    def test_to_struct_names_the_path(self):
        """NaN and infinities anywhere in an object, list or nested object; finite floats pass."""
        with self.assertRaisesRegex(ValueError, r"^data\.v: nan is not a JSON number$"):
            to_struct({"v": float("nan")})
        with self.assertRaisesRegex(ValueError, r"^input\.a\[1\]\.b: inf is not a JSON number$"):
            to_struct({"a": [1, {"b": float("inf")}]}, "input")
        with self.assertRaisesRegex(ValueError, r"^doc\.x: -inf is not a JSON number$"):
            to_struct({"x": float("-inf")}, "doc")
        self.assertEqual(to_struct({"ok": 1.5, "n": 2}).fields["ok"].number_value, 1.5)

    def test_client_calls_refuse_before_sending(self):
        """emit, delay_batch: the error names the field; no owner is needed (nothing is sent)."""
        client = Client("http://127.0.0.1:1")
        with self.assertRaisesRegex(ValueError, r"^data\.v: nan is not a JSON number$"):
            client.emit("visit.made", {"v": float("nan")})
        with self.assertRaisesRegex(ValueError, r"^delays\[0\]: input\.x: inf is not a JSON number$"):
            client.delay_batch([{"action": "a.b", "input": {"x": float("inf")}, "when": {"interval_ms": 1}, "overdue": "unbounded"}])
        with self.assertRaisesRegex(ValueError, r"^delays\[0\]: unknown key 'bogus'"):
            client.delay_batch([{"action": "a.b", "input": {}, "when": {"interval_ms": 1}, "overdue": "unbounded", "bogus": 1}])


if __name__ == "__main__":
    unittest.main()
