"""A hand-made trajectory whose looks show several object types, shared by
the sightings tests."""

GOAL = "look at statue under the desklamp"
ACTIONS = ("go to desk 1", "go to shelf 1", "open drawer 1", "go to sidetable 1")
OBSERVATIONS = ("You arrive at desk 1. On the desk 1, you see a desklamp 1, a pen 2, and a statue 1.",
                "You arrive at shelf 1. On the shelf 1, you see a book 1.",
                "You open the drawer 1. The drawer 1 is open. In it, you see nothing.",
                "You arrive at sidetable 1. On the sidetable 1, you see a book 2, and a pen 1.")
