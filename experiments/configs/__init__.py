"""Run presets: one module per preset, each with get_config() -> RunConfig.

``PRESETS`` is the catalog the entry points hand to the library
(crl_jax.training.config_io.PresetCatalog); ``load_preset`` is its ``load``,
for scripts and tests that load a preset by name.
"""
from crl_jax.training.config_io import PresetCatalog

PRESETS = PresetCatalog(__name__)
load_preset = PRESETS.load
