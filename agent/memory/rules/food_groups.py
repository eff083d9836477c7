"""What a diet or an allergy rules out, as data: food groups and the words that name them.

"I'm vegetarian", then "can I eat a burger?": the words of the question share none with the
diet, yet a person knows the answer. :data:`GROUPS` says which everyday foods and drinks
belong to a group (a burger is meat, a latte has dairy, a beer has alcohol), :data:`DIETS`
which groups a diet leaves out, and a constraint the user told ("I'm allergic to nuts", "I
don't drink alcohol") leaves out the groups it names. Words that make a food free of a group
("veggie burger", "alcohol-free beer", "oat milk") take it out of that group. Pure functions of
their arguments; the lists are a start, not a nutrition database: a food no list names is
answered from the words alone, as before.

Tested by the "what a diet or an allergy rules out" family of
``tests/test_everyday_phrasings.py`` and by ``tests/test_food_groups.py``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

__all__ = [
    "DIETS",
    "GROUPS",
    "food_groups",
    "groups_left_out",
    "groups_named",
    "how_it_has",
    "outside_groups",
]

_F = re.IGNORECASE

_MEAT = """meat beef pork chicken lamb mutton veal steak bacon ham sausage salami pepperoni burger
    hamburger cheeseburger hotdog hot-dog turkey duck venison mince meatball kebab chorizo
    prosciutto pancetta brisket ribs jerky nuggets wings goose pate pâté carbonara bolognese"""
_FISH = """fish salmon tuna cod sushi sashimi anchovy anchovies sardine trout mackerel haddock
    halibut seabass"""
_SHELLFISH = """shellfish shrimp prawn lobster crab mussel oyster clam scallop crayfish langoustine
    calamari squid octopus"""
_DAIRY = """dairy milk cheese butter cream yoghurt yogurt latte cappuccino flat-white milkshake
    custard mozzarella cheddar parmesan brie feta ricotta mascarpone cheesecake gelato ice-cream
    lactose whey"""
_EGG = (
    "egg eggs omelette omelet mayonnaise mayo meringue quiche frittata cake cakes pancake pancakes"
    " brioche custard"
)
_NUTS = """nut nuts peanut almond walnut cashew pistachio hazelnut pecan macadamia nutella praline
    marzipan satay snickers pesto"""
_PEANUTS = "peanut peanuts satay snickers"
_GLUTEN = """gluten wheat bread pasta pizza beer barley rye couscous cake cookie biscuit croissant
    bagel flour cereal toast sandwich spaghetti lasagne lasagna noodles muffin pastry doughnut
    donut pancake waffle sourdough baguette brioche cracker ramen udon dumpling pie scone
    pretzel naan pita crumpet"""
_ALCOHOL = """alcohol beer wine vodka whisky whiskey gin rum tequila cider champagne prosecco
    cocktail sake brandy liqueur margarita mojito lager ale spirits booze sangria"""
_SESAME = "sesame tahini hummus houmous halva halwa"
_PORK = "pork bacon ham salami pepperoni chorizo prosciutto pancetta lard carbonara"
# Soft and blue cheeses (what a pregnancy or a doctor may rule out, not every cheese).
_SOFT_CHEESE = """brie camembert feta ricotta mascarpone gorgonzola roquefort stilton chevre
    burrata cream-cheese cottage-cheese goats-cheese goat's-cheese blue-cheese dolcelatte
    taleggio"""

#: Each group, and the words of the foods and drinks in it (each also read in the plural).
GROUPS: Mapping[str, frozenset[str]] = {
    name: frozenset(words.split())
    for name, words in (
        ("meat", _MEAT),
        ("fish", _FISH),
        ("shellfish", _SHELLFISH),
        ("dairy", _DAIRY),
        ("egg", _EGG),
        ("nuts", _NUTS),
        ("peanuts", _PEANUTS),
        ("gluten", _GLUTEN),
        ("alcohol", _ALCOHOL),
        ("pork", _PORK),
        ("sesame", _SESAME),
        ("soft-cheese", _SOFT_CHEESE),
    )
}

#: The groups each diet leaves out.
DIETS: Mapping[str, frozenset[str]] = {
    diet: frozenset(groups.split())
    for diet, groups in (
        ("vegetarian", "meat fish shellfish pork"),
        ("vegan", "meat fish shellfish pork dairy egg"),
        ("pescatarian", "meat pork"),
        ("gluten-free", "gluten"),
        ("gluten free", "gluten"),
        ("coeliac", "gluten"),
        ("celiac", "gluten"),
        ("lactose-intolerant", "dairy"),
        ("lactose intolerant", "dairy"),
        ("gluten-intolerant", "gluten"),
        ("gluten intolerant", "gluten"),
        ("wheat-intolerant", "gluten"),
        ("wheat intolerant", "gluten"),
        ("dairy-free", "dairy"),
        ("dairy free", "dairy"),
        ("teetotal", "alcohol"),
        ("sober", "alcohol"),
        ("halal", "pork alcohol"),
        ("kosher", "pork shellfish"),
    )
}

# What a constraint's words name besides a group's own words: "seafood", "lactose", "eggs".
_NAMES = {
    "seafood": ("fish", "shellfish"),
    "lactose": ("dairy",),
    "milk": ("dairy",),
    "wheat": ("gluten",),
}

# Words that take a food out of a group: "veggie burger", "alcohol-free beer", "oat milk".
_FREE_OF = {
    "meat": r"veggie|vegetarian|vegan|plant[- ]based|meat[- ]?free|meatless|tofu|beyond",
    "fish": r"vegan|plant[- ]based|fish[- ]?free",
    "dairy": r"vegan|plant[- ]based|(?:dairy|lactose|milk)[- ]?free|(?:oat|soy|soya|almond|rice"
    r"|coconut)[- ]milk|oat|soy|soya|(?:peanut|nut|almond|cashew|apple|cocoa)[- ]butter",
    "egg": r"vegan|egg[- ]?free|eggless",
    "alcohol": r"alcohol[- ]?free|non[- ]?alcoholic|zero[- ]alcohol|virgin|mocktail|0\.0",
    "gluten": r"gluten[- ]?free|coeliac[- ]friendly",
    "nuts": r"nut[- ]?free",
    "peanuts": r"(?:pea)?nut[- ]?free",
}
_FREE = {group: re.compile(rf"\b(?:{words})\b", _F) for group, words in _FREE_OF.items()}

# A group whose food *is* of it ("a burger is meat"), not one a food has in it.
_KINDS = frozenset({"meat", "fish", "shellfish", "pork", "soft-cheese"})


def _words(text: str) -> set[str]:
    """The words of ``text``, each also without a plural ending, and each two in a row
    hyphenated ("ice cream": "ice-cream")."""
    said = re.findall(r"[^\W\d_]+(?:[-'][^\W\d_]+)*", text.casefold())
    words = set(said) | {a + "-" + b for a, b in itertools.pairwise(said)}
    return (
        words
        | {w[:-2] for w in words if w.endswith("es")}
        | {w[:-1] for w in words if w[-1:] == "s"}
    )


def food_groups(thing: str) -> frozenset[str]:
    """The groups a food or drink the user names belongs to ("a burger": meat; "a veggie
    burger": none; "an almond croissant": nuts and gluten)."""
    words = _words(thing)
    return frozenset(
        group
        for group, members in GROUPS.items()
        if words & members and not (group in _FREE and _FREE[group].search(thing))
    )


def groups_left_out(attribute: str, value: str) -> frozenset[str]:
    """The groups a fact of the user's leaves out: a ``diet`` ("vegetarian") by
    :data:`DIETS`, less what it allows ("vegetarian except fish"); an ``allergy`` or ``avoid``
    ("nuts", "eat pork", "drink alcohol") by the groups its words name."""
    said = value.casefold().strip()
    if attribute == "diet":  # "vegetarian except fish": what it allows is not left out
        diet, _, allowed = said.partition(" except ")
        return DIETS.get(diet.strip(), frozenset()) - groups_named(allowed)
    return groups_named(said)


def groups_named(said: str) -> frozenset[str]:
    """The groups ``said`` names by name ("nuts", "seafood": fish and shellfish)."""
    words = _words(said)
    named = {group for group in GROUPS if group in words or group.rstrip("s") in words}
    named.update(group for word, groups in _NAMES.items() if word in words for group in groups)
    return frozenset(named)


def outside_groups(value: str) -> str:
    """The words of a constraint that name no group ("shellfish and kiwi": "and kiwi"): what
    it rules out by the words a food shares with them."""
    said = re.findall(r"[^\W\d_]+(?:[-'][^\W\d_]+)*", value)
    named = set(GROUPS) | {g.rstrip("s") for g in GROUPS} | set(_NAMES)
    return " ".join(w for w in said if not _words(w) & named)


def how_it_has(thing: str, group: str) -> str:
    """Say why ``thing`` is left out: "a burger is meat", "the wings are meat", "a latte
    usually has dairy"; "" when ``thing`` names the group itself ("meat")."""
    if group in _words(thing) or group.rstrip("s") in _words(thing):
        return ""
    head = re.split(r"\s+(?:with|and|in|on|from|of)\s+", thing.strip(), maxsplit=1)[0]
    # "the wings", not "the pad thai with nuts", "hummus" or "couscous"
    several = re.search(r"[^su]s$", head) is not None
    said = group.replace("-", " ")  # "soft-cheese": soft cheese
    if group in _KINDS:
        return f"{thing} {'are' if several else 'is'} {said}"
    return f"{thing} usually {'have' if several else 'has'} {said}"
