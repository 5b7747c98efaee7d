"""The audit reader follows the API server's log rotation (rename, then a fresh file)."""

from __future__ import annotations

import json
from pathlib import Path

from gpuop.controlplane.audit import audit_entries, audit_mark, write_requests

USER = "system:serviceaccount:gpu-operator:gpuop-operator"


def entry(verb: str, name: str, user: str = USER) -> str:
    return (
        json.dumps(
            {
                "stage": "ResponseComplete",
                "verb": verb,
                "requestURI": f"/api/v1/nodes/{name}",
                "user": {"username": user},
            }
        )
        + "\n"
    )


def append(path: Path, *lines: str) -> None:
    with path.open("a") as handle:
        handle.writelines(lines)


def rotate(path: Path, stamp: str) -> None:
    path.rename(path.with_name(f"audit-{stamp}.log"))
    path.write_text("")


def test_reading_from_a_mark_goes_on_through_rotated_files(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    append(log, entry("patch", "before"))
    mark = audit_mark(log)
    append(log, entry("patch", "a"), entry("get", "b"))
    rotate(log, "2026-11-29T19-18-11.443")
    append(log, entry("patch", "c"))
    rotate(log, "2026-11-29T19-29-51.193")
    append(log, entry("patch", "d"), entry("patch", "e", user="someone-else"))

    names = [uri.rsplit("/", 1)[1] for _, uri in write_requests(log, mark, USER)]

    assert names == ["a", "c", "d"]


def test_a_mark_after_rotation_sees_only_newer_entries(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    append(log, entry("patch", "old"))
    rotate(log, "2026-11-29T19-18-11.443")
    append(log, entry("patch", "new"))
    mark = audit_mark(log)
    append(log, entry("delete", "newest"))

    assert write_requests(log, mark, USER) == [("delete", "/api/v1/nodes/newest")]


def test_without_a_mark_every_kept_entry_is_read_oldest_first(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    append(log, entry("patch", "one"), "not json\n", '{"half": ')
    rotate(log, "2026-11-29T19-18-11.443")
    append(log, entry("patch", "two"))

    assert [e["requestURI"] for e in audit_entries(log)] == [
        "/api/v1/nodes/one",
        "/api/v1/nodes/two",
    ]


def test_a_mark_whose_file_was_deleted_reads_what_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    append(log, entry("patch", "gone"))
    mark = audit_mark(log)
    rotate(log, "2026-11-29T19-18-11.443")
    (tmp_path / "audit-2026-11-29T19-18-11.443.log").unlink()
    append(log, entry("patch", "kept"))

    assert write_requests(log, mark, USER) == [("patch", "/api/v1/nodes/kept")]
