"""The Python executor's options, checked before it connects: ``credits`` a whole number from 0 to
2^32-1 (0: the owner's default, 16), else ValueError naming it (a float used to loop on a
TypeError, a negative number silently became 1). Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_executor_options.py
"""

import unittest

from chronolog import Executor


class CreditsTest(unittest.TestCase):
    def test_bad_credits_are_refused_naming_the_option(self) -> None:
        for credits in (-3, 1.5, True, "16", 2**32):
            with self.subTest(credits=credits), self.assertRaisesRegex(ValueError, r"^credits must be a whole number from 0 to 4294967295"):
                Executor([], "http://127.0.0.1:1", credits=credits)

    def test_zero_is_the_default_and_others_are_kept(self) -> None:
        self.assertEqual(Executor([], "http://127.0.0.1:1", credits=0).credits, 16)
        self.assertEqual(Executor([], "http://127.0.0.1:1", credits=3).credits, 3)


if __name__ == "__main__":
    unittest.main()
