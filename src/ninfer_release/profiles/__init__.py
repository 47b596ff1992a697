"""profiles — deployment profiles and engine config rendering.

Inputs: ``profiles/<profile-id>.yaml`` (deployment profiles, public and nonsecret),
``profiles/templates/*.j2`` (engine config templates). The release definition
(``manifests/<version>.yaml``) is read one stage up, by :mod:`ninfer_release.manifests`.

Outputs: frozen typed objects (:class:`Profile`, :class:`InstallLayout`, ...) validated up
front with every problem reported at once (file + field path, close-match suggestions); rendered
config bytes with their two hashes (:class:`RenderedConfig`); bearer keys.

Invariants and terms:

* *bytes SHA-256* — of the exact rendered UTF-8/LF config bytes; native lanes bind it.
* *semantic SHA-256* — of the RFC 8785 canonical JSON of the parsed TOML; the container lane
  binds it. The two are never mixed (DESIGN.md §5).
* Rendering is Jinja2 with ``StrictUndefined`` and ``keep_trailing_newline`` (C42); CRLF template
  sources are normalised to LF, a CR in a value is an error (C43); output is bytes, never text mode.
* YAML is parsed only here, safely and within bounds (:func:`load_yaml_data`); other stages load
  their recipe YAML through it.
* The config carries the checkpoint directory as the literal template
  ``cache/<release-instance-id>/session-checkpoints-v3`` (``[checkpoint] root``/``dir_template``):
  config bytes are fixed per profile, and the route block supplies the release-instance id.
* Every installed path (program root, data root, key, model, cache, checkpoints) comes from one
  :class:`InstallLayout` (:func:`install_layout`), which renders the config and the route block
  and is measured against the 260/248 budget (:func:`path_budget`); ``docs/install-layout.md``.
"""

from __future__ import annotations

from pathlib import Path

from ninfer_release.profiles._keys import (
    KEY_FILE_SPEC,
    KEY_RANDOM_BYTES,
    MIN_KEY_BYTES,
    AclGrant,
    KeyFileSpec,
    check_bearer_key,
    generate_bearer_key,
    read_bearer_key,
    write_bearer_key,
)
from ninfer_release.profiles._layout import (
    CHECKPOINT_FILE_NAME_CHARS,
    InstallLayout,
    LongestPath,
    PathBudget,
    RootBudget,
    install_layout,
    path_budget,
)
from ninfer_release.profiles._profile import (
    CHECKPOINT_DIR_TEMPLATE,
    CHECKPOINT_SCHEMA,
    CONFIG_SCHEMA,
    Checkpoint,
    Endpoint,
    Profile,
    Speculation,
    load_profile,
)
from ninfer_release.profiles._render import (
    RenderedConfig,
    RenderedTemplate,
    expected_config,
    render_config,
    render_template,
    template_values,
    toml_literal,
)
from ninfer_release.profiles._yaml import load_yaml_data
from ninfer_release.winpaths import (
    CONFIG_PATH,
    DATA_ROOT,
    INSTANCE_PLACEHOLDER,
    MAX_DIR_PATH,
    MAX_PATH,
    PROGRAM_ROOT,
    utf16_len,
    windows_join,
)


def check_profile(path: Path, *, templates_dir: Path | None = None) -> tuple[Profile, RenderedConfig]:
    """Validate a profile completely: load it, then render its config in memory and check it.

    Raises:
        InputError: the profile file is missing.
        DefinitionError: the profile, its template or the rendered config is invalid.
    """
    profile = load_profile(path)
    return profile, render_config(profile, templates_dir=templates_dir)


__all__ = [
    "CHECKPOINT_DIR_TEMPLATE",
    "CHECKPOINT_FILE_NAME_CHARS",
    "CHECKPOINT_SCHEMA",
    "CONFIG_PATH",
    "CONFIG_SCHEMA",
    "DATA_ROOT",
    "INSTANCE_PLACEHOLDER",
    "KEY_FILE_SPEC",
    "KEY_RANDOM_BYTES",
    "MAX_DIR_PATH",
    "MAX_PATH",
    "MIN_KEY_BYTES",
    "PROGRAM_ROOT",
    "AclGrant",
    "Checkpoint",
    "Endpoint",
    "InstallLayout",
    "KeyFileSpec",
    "LongestPath",
    "PathBudget",
    "Profile",
    "RenderedConfig",
    "RenderedTemplate",
    "RootBudget",
    "Speculation",
    "check_bearer_key",
    "check_profile",
    "expected_config",
    "generate_bearer_key",
    "install_layout",
    "load_profile",
    "load_yaml_data",
    "path_budget",
    "read_bearer_key",
    "render_config",
    "render_template",
    "template_values",
    "toml_literal",
    "utf16_len",
    "windows_join",
    "write_bearer_key",
]
