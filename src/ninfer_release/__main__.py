"""``python -m ninfer_release`` runs the CLI."""

from ninfer_release.cli import main

main()
