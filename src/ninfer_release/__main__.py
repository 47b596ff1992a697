"""``python -m ninfer_release`` runs the CLI (``--help``/``--version`` without loading it)."""

from ninfer_release.fastcli import main

main()
