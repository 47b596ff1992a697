"""manifests — the release manifest: every config hash and component binding of a release.

Owns (to be built): assembling ``release-manifest.json`` from lane results, byte-identical
whether the lanes were built in one process or in separate CI jobs.
"""
