"""containers — OCI images for the container lane: daemonless build, docker backend, carry.

Owns (to be built): image recipes (``containers/*.yaml``), deterministic layers, OCI image
layouts and ``docker load``-able archives, the docker SDK backend, and carrying a published
image by digest (DESIGN.md §7).
"""
