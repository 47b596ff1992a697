"""profiles — the release definition, deployment profiles and engine config rendering.

Owns (to be built): loading ``manifests/<version>.yaml`` and ``profiles/<profile-id>.yaml`` into
frozen typed objects with every problem reported at once; rendering ``profiles/templates/*.j2``
with Jinja2 into exact UTF-8/LF config bytes; the bytes SHA-256 and the semantic (RFC 8785)
SHA-256 of a rendered config; bearer-key generation.
"""
