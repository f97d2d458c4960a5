"""A hand-written four-receptacle ALFWorld game for exact-text unit tests.

Ids sort as: countertop (one), drawer_bar__minus_01 < drawer_bar__plus_02
(so the first gets number 2), fridge, microwave, sink..sinkbasin. Drawer
"minus" and "plus" share one location (stacked drawers).
"""
from crl_jax.envs.alfworld_data import GameRecord

APPLE = "Apple_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_00_dot_10"
MUG = "Mug_bar__plus_00_dot_20_bar__plus_00_dot_90_bar__plus_00_dot_20"
COUNTER = "CounterTop_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00"
DRAWER_A = "Drawer_bar__minus_01_dot_00_bar__plus_00_dot_50_bar__plus_01_dot_00"   # drawer 2
DRAWER_B = "Drawer_bar__plus_02_dot_00_bar__plus_00_dot_50_bar__plus_01_dot_00"    # drawer 1
FRIDGE = "Fridge_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_01_dot_00"
SINK = "Sink_bar__plus_04_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00_bar_SinkBasin"

PROBLEM = f"""(define (problem mini)
(:domain alfred)
(:objects
        agent1 - agent
        AppleType - otype
        MugType - otype
        CounterTopType - rtype
        DrawerType - rtype
        FridgeType - rtype
        SinkBasinType - rtype
        {APPLE} - object
        {MUG} - object
        {COUNTER} - receptacle
        {DRAWER_A} - receptacle
        {DRAWER_B} - receptacle
        {FRIDGE} - receptacle
        {SINK} - receptacle
        loc_bar_0_bar_0_bar_0_bar_0 - location
        loc_bar_1_bar_1_bar_0_bar_30 - location
        loc_bar_2_bar_2_bar_0_bar_30 - location
        loc_bar_3_bar_3_bar_0_bar_30 - location
        loc_bar_4_bar_4_bar_0_bar_30 - location
        )
(:init
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_0)
        (receptacleType {COUNTER} CounterTopType)
        (receptacleType {DRAWER_A} DrawerType)
        (receptacleType {DRAWER_B} DrawerType)
        (receptacleType {FRIDGE} FridgeType)
        (receptacleType {SINK} SinkBasinType)
        (objectType {APPLE} AppleType)
        (objectType {MUG} MugType)
        (canContain CounterTopType AppleType)
        (canContain CounterTopType MugType)
        (canContain FridgeType AppleType)
        (canContain DrawerType MugType)
        (pickupable {APPLE})
        (pickupable {MUG})
        (coolable {APPLE})
        (cleanable {MUG})
        (isReceptacleObject {MUG})
        (openable {DRAWER_A})
        (openable {FRIDGE})
        (inReceptacle {APPLE} {DRAWER_A})
        (inReceptacle {MUG} {COUNTER})
        (receptacleAtLocation {COUNTER} loc_bar_1_bar_1_bar_0_bar_30)
        (receptacleAtLocation {DRAWER_A} loc_bar_2_bar_2_bar_0_bar_30)
        (receptacleAtLocation {DRAWER_B} loc_bar_2_bar_2_bar_0_bar_30)
        (receptacleAtLocation {FRIDGE} loc_bar_3_bar_3_bar_0_bar_30)
        (receptacleAtLocation {SINK} loc_bar_4_bar_4_bar_0_bar_30)
        (objectAtLocation {APPLE} loc_bar_2_bar_2_bar_0_bar_30)
        (objectAtLocation {MUG} loc_bar_1_bar_1_bar_0_bar_30)
        )
(:goal
    (and (exists (?r - receptacle) (exists (?o - object) (and (coolable ?o) (objectType ?o AppleType)
        (receptacleType ?r CounterTopType) (isCool ?o) (inReceptacle ?o ?r)))))
    )
)
"""

RECORD = GameRecord(
    id="mini/pick_cool_then_place_in_recep-Apple-None-CounterTop-0/trial_0",
    split="generated", task_type="pick_cool_then_place_in_recep",
    task="put a cool apple in countertop",
    pddl_params=tuple(sorted({"object_target": "Apple", "parent_target": "CounterTop",
                              "toggle_target": "", "mrecep_target": "",
                              "object_sliced": False}.items())),
    pddl_problem=PROBLEM)
