"""The RL step itself: rollouts, prompts, advantages (split-GRPO, SDAE), the actor and extractor learners."""
