"""releases — the native asset set (10 hashed entries + ``SHA256SUMS``), verify and publish.

Owns (to be built): the asset contract of DESIGN.md §4, qualification binding, provenance,
route block, component manifest, sealing, consumer verification and publishing (DESIGN.md §8).
"""
