"""The one bounded read (``files.read_bounded`` + ``files.decode_text``) every capped file goes
through: the input readers, the baseline and results readers, the action's confined reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.files import ReadRefused, decode_text, read_bounded
from retrieval_gate.forge import event as forge_event


def test_a_file_at_the_cap_is_read_one_byte_over_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 10)
    assert read_bounded(path, max_bytes=10) == b"x" * 10
    with pytest.raises(ReadRefused, match="larger than 9 bytes"):
        read_bounded(path, max_bytes=9)


def test_a_pipe_and_an_open_descriptor_read_like_a_file() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"abc")
    os.close(write_end)
    try:
        assert read_bounded(read_end, max_bytes=3) == b"abc"
    finally:
        os.close(read_end)


def test_missing_folder_and_bad_text_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ReadRefused, match="file not found") as missing:
        read_bounded(tmp_path / "absent", max_bytes=10)
    assert missing.value.missing
    with pytest.raises(ReadRefused, match="is a directory") as folder:
        read_bounded(tmp_path, max_bytes=10)
    assert not folder.value.missing
    assert decode_text("\ufeff{}".encode()) == "{}"
    with pytest.raises(ReadRefused, match="invalid UTF-8 at byte 3"):
        decode_text(b'{"\xff"}')


def test_the_action_s_event_payload_goes_through_the_bounded_read(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"number": 7}')
    assert forge_event.read_event(str(event)) == {"number": 7}
    monkeypatch.setattr(forge_event, "EVENT_MAX_BYTES", 10)  # our own cap, small to reach the refusal
    with pytest.raises(InputError, match="cannot read the event payload: larger than 10 bytes"):
        forge_event.read_event(str(event))
    event.write_bytes(b'{"n": "\xff"}')
    monkeypatch.setattr(forge_event, "EVENT_MAX_BYTES", 100)
    with pytest.raises(InputError, match="cannot read the event payload: invalid UTF-8 at byte 8"):
        forge_event.read_event(str(event))
