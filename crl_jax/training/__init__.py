"""The run around the RL step: configuration, trainer loop, warm start, checkpoints, metrics."""
