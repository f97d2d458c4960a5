"""A hand-made trajectory whose looks show several object types, and the
searching expert's episodes on household games, shared by the sightings
tests."""

GOAL = "look at statue under the desklamp"
ACTIONS = ("go to desk 1", "go to shelf 1", "open drawer 1", "go to sidetable 1")
OBSERVATIONS = ("You arrive at desk 1. On the desk 1, you see a desklamp 1, a pen 2, and a statue 1.",
                "You arrive at shelf 1. On the shelf 1, you see a book 1.",
                "You open the drawer 1. The drawer 1 is open. In it, you see nothing.",
                "You arrive at sidetable 1. On the sidetable 1, you see a book 2, and a pen 1.")


def expert_demos(n_games: int, seed: int):
    """(game, demo) for each of ``n_games`` games of 4 generated households
    (home rate 0.8), each played by the searching expert with 20 turns."""
    from crl_jax.envs.alfworld_households import household_games, households
    from crl_jax.envs.registry import make_env, make_expert
    from crl_jax.training.warmstart import play_expert
    games = household_games(households(4), n_games, seed=seed, home_rate=0.8)
    env = make_env("alfworld", games=games, max_steps=20)
    try:
        return [(g, play_expert(env, t, make_expert("alfworld"), 20, "alfworld"))
                for t, g in enumerate(games)]
    finally:
        env.close()


class CharTokenizer:
    """One token per character: warm-start pairs decode back to their text."""
    eos_id = 0

    def encode(self, text):
        return [ord(c) for c in text]
