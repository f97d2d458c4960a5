"""Measurements of a trained run's models (entry quality, next-action accuracy)."""
