"""The store against a real Chroma server (``chroma run``, shipped with chromadb) over HTTP."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_gate.errors import StoreError
from retrieval_gate.evaluation.run import run_eval
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import HashEmbedder
from tests.integration.test_dense_eval import TOP1, write_dataset


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    exe = shutil.which("chroma")
    if exe is None:
        pytest.skip("the chroma server CLI is not installed")
    root = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    log = (root / "server.log").open("w")
    proc = subprocess.Popen([exe, "run", "--path", str(root / "data"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):  # up to 20 s for the server to listen
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                pytest.skip(f"chroma run exited: {(root / 'server.log').read_text()[-500:]}")
            time.sleep(0.1)
        else:
            pytest.skip("chroma run did not start listening")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_eval_through_a_chroma_server_keeps_the_cache_locally_and_reruns_warm(chroma_server: int,
                                                                               tmp_path: Path) -> None:
    kb, cases = write_dataset(tmp_path)
    store = StoreSettings(mode="http", host="127.0.0.1", port=chroma_server, path=str(tmp_path / "cache"))
    config = SuiteConfig(kb=str(kb), cases=str(cases), store=store)
    cold = run_eval(suite_config=config, suite="server", embedder=HashEmbedder())
    assert {c.id: c.retrieved[0] for c in cold.cases if c.id in TOP1} == TOP1
    assert (tmp_path / "cache" / "embeddings.sqlite3").is_file()
    assert not (tmp_path / "cache" / "chroma").exists()  # the vectors live on the server
    again = HashEmbedder()
    warm = run_eval(suite_config=config, suite="server", embedder=again)
    assert again.documents == [] and warm.extras["store"]["added"] == 0
    assert warm.aggregates == cold.aggregates


def test_an_unreachable_server_is_one_store_error(tmp_path: Path) -> None:
    kb, cases = write_dataset(tmp_path)
    store = StoreSettings(mode="http", host="127.0.0.1", port=free_port(), path=str(tmp_path / "cache"))
    with pytest.raises(StoreError, match=r"^cannot reach the Chroma server at 127\.0\.0\.1:\d+: "):
        run_eval(suite_config=SuiteConfig(kb=str(kb), cases=str(cases), store=store), suite="t",
                 embedder=HashEmbedder())
