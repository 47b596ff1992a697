"""ninfer-release: the release build system of OMP NInfer.

Stages, top to bottom (each imports only the ones below it, see ``docs/architecture.md``)::

    cli -> build -> releases -> manifests -> sbom -> (packaging | containers) -> profiles -> foundation

Foundation modules import nothing above the foundation: :mod:`errors`,
:mod:`hashing`, :mod:`reproducible`, :mod:`atomic`, :mod:`jsonbytes`, :mod:`jsonfields`,
:mod:`checksums`.
"""

__version__ = "0.1.0"
