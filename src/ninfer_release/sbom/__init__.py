"""sbom — SPDX 2.3 file inventories and CycloneDX 1.6 dependency inventories.

Owns (to be built): the SPDX document of a package's files (spdx-tools), the CycloneDX
dependency inventory of its resolved dependencies (cyclonedx-python-lib), PE version and import
reading (pefile), and the curated redistributable metadata in ``sbom/``.
"""
