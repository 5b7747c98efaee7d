"""The errors the toolkit library raises, each one a failure a person can act on.

Every error here means *nothing on the host was changed* (configuration is planned in memory
and written only once the whole plan is known to be good; a failure while writing rolls back
the files already replaced). The CLI turns them into one line on standard error; the simulator
records them per node. The tree:

    ToolkitError
    ├── ConfigPathError      a path option is unusable (escapes the host root, not absolute, ...)
    ├── ConfigParseError     a TOML file does not parse; carries line and column when known
    ├── ConfigVersionError   containerd config version 1, or a version this tool does not know
    ├── ConfigShapeError     the file parses, but a key the tool must touch has the wrong type
    ├── ConfigWriteError     reading or writing a file failed (permissions, read-only fs, ...)
    └── StateError           the record of an earlier run is unreadable or disagrees with disk
"""

from __future__ import annotations

import re


class ToolkitError(Exception):
    """Base class: a failure the user can fix. The message is one line and names the file."""


class ConfigPathError(ToolkitError):
    """A path given to the tool cannot be used (for example it escapes the host root)."""


class ConfigParseError(ToolkitError):
    """A file is not valid TOML.

    ``line`` and ``column`` are 1-based positions from the TOML parser, or ``None`` when the
    parser did not report one.
    """

    def __init__(
        self, path: str, problem: str, line: int | None = None, column: int | None = None
    ) -> None:
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"cannot parse {path}: {problem}{where}; nothing was changed")
        self.path = path
        self.problem = problem
        self.line = line
        self.column = column


class ConfigVersionError(ToolkitError):
    """The containerd config version is one this tool refuses to edit."""


class ConfigShapeError(ToolkitError):
    """A key the tool needs has an unexpected type (a string where a table must be, ...)."""


class ConfigWriteError(ToolkitError):
    """A file could not be read, written, renamed or removed."""


class StateError(ToolkitError):
    """The state record left by an earlier run cannot be used."""


_POSITION = (
    re.compile(r"\s*\(at line (\d+), column (\d+)\)"),  # tomllib
    re.compile(r"\s*at line (\d+) col (\d+)"),  # tomlkit
)


def parse_error(path: str, exc: Exception) -> ConfigParseError:
    """A `ConfigParseError` from a tomllib or tomlkit exception, with its line and column."""
    text = str(exc)
    for pattern in _POSITION:
        match = pattern.search(text)
        if match:
            problem = (text[: match.start()] + text[match.end() :]).strip()
            return ConfigParseError(path, problem, int(match.group(1)), int(match.group(2)))
    return ConfigParseError(path, text)
