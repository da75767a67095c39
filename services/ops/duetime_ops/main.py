"""The entry point: one parser, a sub-command for each area of commands."""

from __future__ import annotations

import argparse

from duetime_ops import admin, groups, migrate, secrets


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="duetime-ops", description="Duetime operator commands")
    areas = parser.add_subparsers(dest="area", required=True)
    for area in (migrate, admin, secrets, groups):
        area.register(areas)
    args = parser.parse_args(argv)
    args.run(args)
