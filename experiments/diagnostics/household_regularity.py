"""Where objects lie across the games of one floorplan: the regularity a lesson can carry.

    python experiments/diagnostics/household_regularity.py                # the real train pack
    python experiments/diagnostics/household_regularity.py --split=valid_seen
    python experiments/diagnostics/household_regularity.py --households=96 --home_rate=0.65

For each game's goal object (and, in a second table, every object type the
game places), the receptacle where that type lay most often in the other
games of the same floorplan is checked against where it lies in this game
(crl_jax/envs/alfworld_regularity.py). Printed per level (receptacle name
as the game shows it, receptacle type) and per evidence (other games with
the same goal object, every other game showing the type); --json writes the
numbers. ``--households=N`` measures games of N generated households
instead (crl_jax/envs/alfworld_households.py) at ``--home_rate`` (0: the
uniform placement, the control).
"""
from __future__ import annotations

import json
import sys

from absl import app, flags

from crl_jax.envs import alfworld_regularity as reg
from crl_jax.envs.alfworld_data import load_pack
from crl_jax.envs.alfworld_households import DEFAULT_HOME_RATE, household_games, households

flags.DEFINE_string("split", "train", "pack split to measure (train, valid_seen, valid_unseen)")
flags.DEFINE_integer("households", 0, "measure games of this many generated households "
                     "instead of the pack (0: the pack)")
flags.DEFINE_integer("games_per_household", 30, "generated games of each household "
                     "(the pack has a median of 27 a floorplan)")
flags.DEFINE_float("home_rate", DEFAULT_HOME_RATE, "the households' home rate")
flags.DEFINE_string("room_size", "medium", "the households' room size")
flags.DEFINE_string("json", "", "also write the numbers to this JSON file")
FLAGS = flags.FLAGS


def _records():
    if FLAGS.households:
        members = households(FLAGS.households, FLAGS.room_size)
        return household_games(members, FLAGS.households * FLAGS.games_per_household,
                               home_rate=FLAGS.home_rate)
    return load_pack(FLAGS.split)


def main(argv) -> int:
    del argv
    records = _records()
    items = reg.pack_placements(records)
    source = (f"{FLAGS.households} generated households ({FLAGS.room_size} rooms, home rate "
              f"{FLAGS.home_rate})" if FLAGS.households else f"pack split {FLAGS.split}")
    print(f"{source}: {len(records)} games, {len({p.floorplan for p in items})} floorplans")
    out = {"source": source, "games": len(records), "rows": []}
    for targets_only in (True, False):
        scored = "goal object" if targets_only else "every placed type"
        print(f"\nscored: {scored}")
        print(f"{'level':9} {'evidence':9} {'pairs':>6} {'plans':>5} {'top-1':>6} {'top-2':>6} "
              f"{'chance':>6} {'top-1/chance':>12}")
        for level in reg.LEVELS:
            for evidence in reg.EVIDENCE:
                if not targets_only and evidence == "target":
                    continue  # non-goal types have no games of their own goal to vote
                h = reg.home_hit_rates(items, level, evidence, targets_only)
                ratio = h.top1 / h.chance if h.n else float("nan")
                print(f"{level:9} {evidence:9} {h.n:6d} {h.floorplans:5d} {h.top1:6.2f} "
                      f"{h.top2:6.2f} {h.chance:6.2f} {ratio:12.1f}")
                out["rows"].append({"scored": scored, "level": level, "evidence": evidence,
                                    **h.as_dict()})
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"\nwrote {FLAGS.json}")
    return 0


if __name__ == "__main__":
    sys.exit(app.run(main))
