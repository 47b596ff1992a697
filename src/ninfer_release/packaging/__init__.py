"""packaging — deterministic Windows zip packages from a staged engine build.

Owns (to be built): the staged-input contract (``docs/staged-inputs.md``), package recipes
(``packaging/*.yaml``), Windows path safety (DESIGN.md §6) and the deterministic zip writer
(DESIGN.md §5).
"""
