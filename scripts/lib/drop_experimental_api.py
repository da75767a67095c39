"""Drops from grpcio-tools' ``*_pb2_grpc.py`` files the class it writes for each service under
"This class is part of an EXPERIMENTAL API": static methods over ``grpc.experimental``, for
calls without a channel. Nothing here calls them, and mypy-protobuf's ``.pyi`` does not
declare the class, so typed code cannot use it; the stub, the servicer and
``add_*Servicer_to_server`` stay as written. Run by ``scripts/gen`` on the files it generates.

    python scripts/lib/drop_experimental_api.py FILE_pb2_grpc.py...

It fails, changing nothing, when a file does not look as expected (a new grpcio-tools):
the class missing, its marker missing, a method that is not such a call, or the ``.pyi``
declaring it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MARKER = "# This class is part of an EXPERIMENTAL API."


def services(tree: ast.Module) -> list[str]:
    """The services a generated module serves: one ``<Name>Servicer`` class each."""
    return [
        node.name.removesuffix("Servicer")
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name.endswith("Servicer")
    ]


def is_experimental_call(method: ast.stmt) -> bool:
    """Whether ``method`` is a static method that returns ``grpc.experimental.<arity>(...)``."""
    if not isinstance(method, ast.FunctionDef) or len(method.body) != 1:
        return False
    static = [d for d in method.decorator_list if isinstance(d, ast.Name)]
    returned = method.body[0]
    if [d.id for d in static] != ["staticmethod"] or not isinstance(returned, ast.Return):
        return False
    call = returned.value
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and ast.unparse(call.func.value) == "grpc.experimental"
    )


def experimental_class(path: Path, tree: ast.Module, lines: list[str], name: str) -> ast.ClassDef:
    """The service's experimental class, checked to be nothing else."""
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    if len(found) != 1:
        raise SystemExit(f"{path}: no class {name} (grpcio-tools changed its output)")
    cls = found[0]
    if lines[cls.lineno - 2].strip() != MARKER:
        raise SystemExit(f"{path}: class {name} is not marked {MARKER!r}")
    methods = cls.body[1:] if ast.get_docstring(cls) is not None else cls.body
    if not methods or not all(is_experimental_call(m) for m in methods):
        raise SystemExit(f"{path}: class {name} holds more than grpc.experimental calls")
    stub = path.with_suffix(".pyi")
    declared = ast.parse(stub.read_text()).body
    if any(isinstance(n, ast.ClassDef) and n.name == name for n in declared):
        raise SystemExit(f"{stub}: declares {name}, which typed code may use")
    return cls


def dropped(path: Path) -> str:
    """The file's text without its services' experimental classes."""
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    spans = []
    for name in services(tree):
        cls = experimental_class(path, tree, lines, name)
        end = cls.end_lineno or cls.lineno
        while end < len(lines) and not lines[end].strip():
            end += 1  # the blank lines after it too: those before it separate what follows
        spans.append((cls.lineno - 2, end))
    for start, end in sorted(spans, reverse=True):
        del lines[start:end]
    kept = "".join(lines).rstrip("\n") + "\n"
    compile(kept, str(path), "exec")
    return kept


def main(paths: list[str]) -> None:
    texts = {Path(p): dropped(Path(p)) for p in paths}
    for path, text in texts.items():
        path.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
