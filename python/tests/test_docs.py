"""Every Python block of docs/python.md runs, in order and in one namespace, against a real
`bridle mock-llm` (the examples' 127.0.0.1:8090) and `bridle serve` (127.0.0.1:8080)."""

import re

from conftest import ADMIN_KEY, ROOT, USER_KEY

DOC = ROOT / "docs" / "python.md"


def blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


def test_every_example_in_docs_python_md_runs(gateway, monkeypatch, capsys):
    server, mock = gateway()
    monkeypatch.setenv("BRIDLE_KEY", USER_KEY)
    monkeypatch.setenv("BRIDLE_ADMIN_KEY", ADMIN_KEY)
    found = blocks()
    assert len(found) >= 10
    namespace: dict = {"__name__": "docs_python_md"}
    for number, code in enumerate(found, 1):
        code = code.replace("http://127.0.0.1:8090", mock.url).replace("http://127.0.0.1:8080", server.url)
        exec(compile(code, f"docs/python.md block {number}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "Traceback" not in printed and printed.count("\n") >= len(found)
