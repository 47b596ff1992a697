"""build — orchestrates one lane or a whole release through the stages, reporting progress.

Owns (to be built): ``build lane`` and ``build release`` (DESIGN.md §1, §9).
"""
