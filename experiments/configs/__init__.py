"""Run presets: one module per preset, each with get_config() -> RunConfig."""
