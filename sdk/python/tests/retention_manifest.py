"""Prints, as JSON, the manifest of a plugin declared in Python with retention rules: the
TypeScript test test/log-retention.test.ts registers it with an owner and checks that its rules
are applied.

    PYTHONPATH=sdk/python .venv/bin/python sdk/python/tests/retention_manifest.py
"""

from google.protobuf import json_format

from chronolog import Plugin

notes = Plugin(
    "notes",
    events={"note.added": {"allow": ["*"]}, "note.pinned": {"allow": ["*"]}},
    retention=[
        {"types": "note.added", "max_count": 2},
        {"types": "note.pinned", "keep": "latest_per_key", "key": "data.k"},
    ],
)

print(json_format.MessageToJson(notes.manifest()))
