"""What a store folder this user may not write is told to do, by the reason it cannot: never
``chown -R 0`` to a root who owns it already, never ``chown`` to a user who owns it."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.store.folder import write_advice

ROOT = Path("/work/.retrieval-gate/store")


def test_a_read_only_file_system_is_named_and_no_owner_change_is_advised() -> None:
    for uid, owner in ((0, 0), (1001, 1001), (1001, 0)):
        advice = write_advice(root=ROOT, owner=owner, uid=uid, read_only=True)
        assert advice == f"{ROOT} is on a file system mounted read-only: copy the store to a writable folder"


def test_a_folder_of_one_s_own_is_told_its_mode_not_its_owner() -> None:
    assert write_advice(root=ROOT, owner=1001, uid=1001, read_only=False) == f"make it writable (chmod -R u+rwX {ROOT})"
    assert "chown" not in write_advice(root=ROOT, owner=1001, uid=0, read_only=False)  # root: the mode, never chown 0


def test_another_user_s_folder_is_given_to_this_user() -> None:
    assert write_advice(root=ROOT, owner=0, uid=1001, read_only=False) == (
        f"give it to this user (chown -R 1001 {ROOT}, as uid 0 or root) or make it writable for uid 1001")
