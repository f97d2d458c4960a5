"""Run presets: one module per preset, each with get_config() -> RunConfig.

``PRESETS`` is the catalog the entry points hand to the library
(crl_jax.training.config_io.PresetCatalog); the names below are its methods,
for scripts and tests that load a preset by name.
"""
from crl_jax.training.config_io import PresetCatalog

PRESETS = PresetCatalog(__name__)
list_presets = PRESETS.names
load_preset = PRESETS.load
preset_profiles = PRESETS.profiles
preset_summary = PRESETS.summary
unknown_preset_message = PRESETS.unknown_message
