"""This SDK's name and version, sent in an executor's hello, and the comparison with the owner's
version its welcome gives. ``pyproject.toml`` reads the package's version from here."""

from __future__ import annotations

import re

__all__ = ["SDK_NAME", "__version__", "versions_differ"]

#: This SDK's name in an executor's hello (``Hello.sdk``).
SDK_NAME = "python"

#: This SDK's version (major.minor.patch); sent in an executor's hello.
__version__ = "0.1.0"


def versions_differ(owner_version: str, ours: str = __version__) -> bool:
    """True when ``owner_version`` differs from this SDK's in its major or minor number, or is not a
    version at all ("" from an owner that does not say its own): the owner and the SDKs are released
    together, and a patch release changes no message the other side reads, while a minor or major
    one may."""

    def major_minor(version: str):
        match = re.match(r"(\d+)\.(\d+)(?:\.|$)", version)
        return match.groups() if match else None

    theirs = major_minor(owner_version)
    return theirs is None or theirs != major_minor(ours)
