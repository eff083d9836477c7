"""What a diet or an allergy rules out: the food groups of ``agent/memory/rules/food_groups.py``."""

from __future__ import annotations

import pytest

from agent.memory.rules.food_groups import food_groups, groups_left_out, how_it_has


@pytest.mark.parametrize(
    ("thing", "groups"),
    [
        ("a burger", {"meat"}),
        ("the chicken wings", {"meat"}),
        ("a veggie burger", set()),
        ("a plant-based burger", set()),
        ("an almond croissant", {"nuts", "gluten"}),
        ("peanut butter", {"nuts", "peanuts"}),
        ("a beer", {"alcohol", "gluten"}),
        ("an alcohol-free beer", {"gluten"}),
        ("a non-alcoholic cocktail", set()),
        ("ice cream", {"dairy"}),
        ("an oat milk latte", set()),
        ("mussels", {"shellfish"}),
        ("a ham sandwich", {"meat", "pork", "gluten"}),
        ("gluten-free bread", set()),
        ("a salad", set()),
        ("your help", set()),
    ],
)
def test_a_food_is_of_the_groups_its_words_name_unless_it_is_free_of_them(thing, groups):
    assert food_groups(thing) == groups


@pytest.mark.parametrize(
    ("attribute", "value", "left_out"),
    [
        ("diet", "vegetarian", {"meat", "fish", "shellfish", "pork"}),
        ("diet", "pescatarian", {"meat", "pork"}),
        ("diet", "Vegan", {"meat", "fish", "shellfish", "pork", "dairy", "egg"}),
        ("diet", "lactose intolerant", {"dairy"}),
        ("allergy", "nuts", {"nuts"}),
        ("allergy", "peanuts", {"peanuts"}),
        ("allergy", "seafood", {"fish", "shellfish"}),
        ("allergy", "eggs", {"egg"}),
        ("allergy", "penicillin", set()),
        ("avoid", "drink alcohol", {"alcohol"}),
        ("avoid", "eat pork", {"pork"}),
        ("avoid", "drink milk", {"dairy"}),
        ("avoid", "drink coffee", set()),
    ],
)
def test_a_diet_or_a_constraint_leaves_out_the_groups_it_names(attribute, value, left_out):
    assert groups_left_out(attribute, value) == left_out


def test_why_a_food_is_left_out_is_said_in_a_few_words():
    assert how_it_has("a burger", "meat") == "a burger is meat"
    assert how_it_has("the chicken wings", "meat") == "the chicken wings are meat"
    assert how_it_has("a latte", "dairy") == "a latte usually has dairy"
    assert (
        how_it_has("the noodles with peanuts", "nuts")
        == "the noodles with peanuts usually have nuts"
    )
    assert (
        how_it_has("the pad thai with peanuts", "nuts")
        == "the pad thai with peanuts usually has nuts"
    )
    assert how_it_has("hummus", "sesame") == "hummus usually has sesame"  # not a plural
    assert how_it_has("couscous", "gluten") == "couscous usually has gluten"
    assert how_it_has("the chips", "gluten") == "the chips usually have gluten"
    assert how_it_has("meat", "meat") == ""  # "do I eat meat?": nothing to explain
