"""The questions about facts the rule-based concierge answers, as data: the user's own
(:data:`FACT_QUESTIONS`) and those of the people and pets in their life
(:data:`SOMEONE_QUESTIONS`).

Each entry of :data:`FACT_QUESTIONS` is a pattern of the question, the fact keys it asks for and
how the answer says that none is known ("You haven't told me where you live yet."): "where do I
live?" asks for ``location`` (and ``ex_location``: "you no longer live in Berlin"), "what are my
plans?" for every ``plan:`` and ``event:``. Each of :data:`SOMEONE_QUESTIONS`, a pattern whose
``who`` group names them and the attribute asked for. Read by
:mod:`agent.engines.rule_facts` (``answer_fact``, ``answer_someone``); tested by the families of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re

from agent.memory.longterm.memory_slots import PLURALS
from agent.memory.rules.fact_words import DIETS, PEOPLE, PETS, TRAITS

__all__ = ["FACT_QUESTIONS", "PLURAL", "SOMEONE_QUESTIONS"]

_F = re.IGNORECASE

#: (question, fact keys asked for (a trailing ":" or "*" is a prefix: "relative:flatmate*" is
#: any flatmate), what is missing if unknown);
#: a ``thing`` group names a favourite's thing ("what's my favourite film?").
FACT_QUESTIONS: tuple[tuple[re.Pattern[str], tuple[str, ...], str], ...] = tuple(
    (re.compile(pattern, _F), tuple(keys.split()), missing)
    for pattern, keys, missing in (
        (r"\bwhere do i (?:live|stay)\b|\bwhere am i (?:living|based|staying)\b"
         r"|\b(?:which|what) (?:city|town|country|village|area|neighbou?rhood|part of [\w ]+?)"
         r" (?:do i live|am i living|am i based|do i call home) in\b"
         r"|\bwhat(?:'s| is) my (?:home |current |new )?address\b",
         "location ex_location", "where you live"),
        (r"\bwhere (?:am i|do i come) from\b|\bwhere was i (?:born|raised|brought up)\b"
         r"|\bwhere did i grow up\b|\bmy hometown\b", "hometown",
         "where you're from"),
        (r"\bwhen(?:'s|\s+is)\s+my\s+due\s+date\b|\bwhat(?:'s|\s+is)\s+my\s+due\s+date\b"
         r"|\bwhen\s+am\s+i\s+due\b", "event:baby", "when your baby is due"),
        (r"\bwhere (?:am i|will i be) (?:this|next|on|at the)\b|\bwhen (?:am i|will i be) back\b"
         r"|\bwhen do i (?:get|come|fly|go) (?:back|home)\b|\bam i away\b"
         r"|^am i (?:working|at work|off|in the office)\b", "away",
         "about being away"),
        (r"\bwhat am i planning\b|\bwhat(?:'s| is| are) my plans?\b|\bwhat (?:do|did) i plan\b"
         r"|^(?:what(?:'s| is| have i got| do i have)|(?:is there |have i got )?anything)"
         r" coming up\b",
         "plan: event:", "about your plans"),
        (r"\bwhat(?:'s| is| are) my (?:goals?|aims?)\b|\bwhat am i saving (?:up )?for\b", "goal:",
         "about your goals"),
        (r"\bwhat (?:am|was) i (?:thinking (?:of|about)|considering)\b"
         r"|\bwhat (?:have i|did i say i) (?:been )?(?:thinking (?:of|about)|consider(?:ing|ed))\b",
         "considering:", "about anything you're thinking of doing"),
        (r"\bwhat (?:did|have) i decided?\b|\bwhat are my decisions\b", "decision:",
         "about decisions of yours"),
        (r"\bwhat am i allergic to\b|\bam i allergic\b|\bdo i have (?:any )?allerg|\bany allergies"
         r"|\b(?:what|which) (?:are )?(?:my )?allergies\b|\bmy allergies\b.*\?$", "allergy:",
         "about allergies"),
        (r"\bwhat (?:can't|cannot|can i not|don't|shouldn't) i (?:eat|drink)\b"
         r"|\bwhat(?:'s| is) my diet\b|\bdietary\b|^do i (?:still\s+)?(?:smoke|drink|vape)\b",
         "allergy: avoid: diet",
         "about your diet"),
        (rf"^am i (?:still\s+)?(?:an?\s+)?(?:{DIETS})\b", "diet ex_diet", "about your diet"),
        (rf"^am i (?:more\s+)?(?:an?\s+)?(?:{'|'.join(TRAITS.values())})\b"
         r"|\bwhat (?:am i|kind of person am i) like\b",
         "trait:", "what you're like"),
        (r"\b(?:what|which|how many) languages? (?:do|can) i speak\b|^(?:do|can) i speak\b",
         "speaks:", "which languages you speak"),
        (r"^(?:do i have|have i got) (?:any\s+)?(?:health\s+|medical\s+)?(?:conditions?|problems?)"
         r"|\bwhat (?:health\s+|medical\s+)?conditions? do i have\b"
         r"|\bmy (?:health|medical) (?:conditions?|problems?|issues?)\b",
         "condition:", "about any health conditions"),
        (r"\bwhat (?:[\w-]+ ){0,3}?(?:do i (?:dislike|hate|not like)|don't i like)\b", "dislikes:",
         "what you don't like"),
        (r"\bwhat(?:'s| is| are) my (?:routines?|habits?)\b", "routine:", "about your routines"),
        # Flatmates live with the user by what they are ("my flatmate is called Jess").
        (r"^who do i live with\b|^do i live (?:alone|on my own|by myself|with)\b",
         "household relative:flatmate* relative:roommate* relative:housemate* relative:lodger*",
         "who you live with"),
        (r"\bwhat (?:did i ask you to|have i asked you to|should you) remember\b"
         r"|\bmy notes\b", "note:", "anything to remember (say /remember …)"),
        (r"\bwhat pets? do (?:i|we) have\b|\bdo (?:i|we) have (?:any )?pets?\b"
         r"|\b(?:my|our) pets\b",
         "pet: count:dogs count:cats count:pets count:puppies count:kittens", "about any pets"),
        (r"\bwho (?:is|are) (?:in )?my family\b|\bmy (?:family|relatives)\b", "relative:",
         "about your family and friends"),
        (r"\bwhere do i (?:work|teach)\b"
         r"|\bwhat(?:'s| is) my (?:job|work|profession|occupation|line of work)\b"
         r"|\bwho do i work for\b|\bwho(?:'s| is) my employer\b|\bwhere(?:'s| is) my (?:workplace"
         r"|office|work)\b|\b(?:what|which) (?:company|firm) do i work (?:for|at)\b",
         "job workplace ex_workplace",
         "about your work"),
        (r"\bwhat do i do for (?:a )?(?:living|work)\b|^what do i (?:do|teach)\??$", "job",
         "your job"),
        (r"\bwhat (?:do i study|am i studying|is my (?:major|subject|degree|course))\b"
         r"|\bwhat(?:'s| is) my (?:major|subject|degree|course)\b", "study",
         "what you study"),
        (r"\bwhere (?:do i study|am i studying|do i go to (?:school|uni|university|college))\b",
         "school", "where you study"),
        (r"\bwhen do i work\b|\bwhat (?:hours|days|shifts?) do i work\b"
         r"|\bwhat(?:'s| is| are) my (?:working |work )?(?:hours|shifts?)\b", "hours",
         "when you work"),
        (r"\bwhen(?:'s| is) my birthday\b|\bwhat(?:'s| is) my (?:birthday|bday)\b", "birthday",
         "your birthday"),
        (r"\bhow old am i\b|\bwhat(?:'s| is) my age\b", "age born", "your age"),
        (r"\bwhen was i born\b|\bwhat year was i born\b|\bmy (?:year|date) of birth\b",
         "born birthday", "when you were born"),
        (r"\bwhat (?:[\w-]+ ){0,3}?do i play\b", "does:", "what you play"),
        (r"\bwhat are my (?:hobbies|interests)\b", "does: learning: likes:", "what you like"),
        (r"\bwhat (?:[\w-]+ )?am i (?:learning|studying)\b", "learning:", "what you're learning"),
        (r"\b(?:which|what) (?P<thing>[^\W\d_]+(?: [^\W\d_]+)?) do i (?:like|love|enjoy)"
         r" (?:the )?(?:most|best)\b", "favourite:", "your favourites"),
        (r"\bwhat (?:[\w-]+ ){0,3}?do i (?:like|love|enjoy)\b|^what am i (?:really )?into\b"
         r"|\bwhat are my likes\b", "likes:", "what you like"),
        (r"\b(?:which|what) (?:[\w-]+ )?team do i (?:support|follow|root for|cheer for|like)\b"
         r"|^who do i (?:support|root for|cheer for)\b", "favourite:team",
         "which team you support"),
        (r"\b(?:what|who)(?:'s| is) my (?:favou?rite|fave?|go-to|usual)"
         r" (?P<thing>[^\W\d_]+(?: [^\W\d_]+)?)",
         "favourite:", "your favourites"),
    )
)  # fmt: skip

#: Several asked about at once ("what are my cats called?", "how old are my children?").
PLURAL = rf"(?:{'|'.join(PLURALS.values())}|pets|(?:{PEOPLE}|{PETS})(?<!s)s)(?!\w)"

_WHO = rf"(?P<who>(?:{PLURAL}|{PEOPLE}|{PETS}|[A-Z][^\W\d_]+))"
_WHO_AGAIN = _WHO.replace("(?P<who>", "(?P<who2>", 1)  # the same, in another alternative

#: (question about someone in the user's life, the attribute asked for; "" for who they are):
#: "where does my sister live?" asks for ``location``.
SOMEONE_QUESTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, _F), attribute)
    for pattern, attribute in (
        (rf"\bwhere (?:does|did) (?:my )?{_WHO} (?:live|stay|move)\b", "location"),
        (rf"\bwhere(?:'s| is) (?:my )?{_WHO} (?:living|based)\b", "location"),
        (rf"\bwhere(?:'s| is| does) (?:my )?{_WHO} (?:from|come from)\b", "hometown"),
        (rf"\bwhere does (?:my )?{_WHO} work\b", "workplace"),
        (rf"\b(?:when|what hours|what days) does (?:my )?{_WHO} work\b", "hours"),
        (rf"\bwhat does (?:my )?{_WHO} do\b(?!\s+(?:on|every|at the|in the)\b)", "job"),
        (rf"\bwhat(?:'s| is) (?:my )?{_WHO}'s job\b", "job"),
        (rf"\bhow old (?:is|are) (?:my )?{_WHO}\b", "age"),
        (rf"\bwhat(?:'s| is) (?:my )?{_WHO}(?:'s|s') age\b", "age"),
        (rf"\b(?:when(?:'s| is)|what(?:'s| is| date is)(?: the date of)?) (?:my )?{_WHO}'s"
         r" (?:birthday|bday)\b", "birthday"),
        (rf"\bdoes (?:my )?{_WHO} have (?:any )?(?:health |medical )?conditions?\b", "condition"),
        (rf"\bwhen was (?:my )?{_WHO} born\b", "born"),
        (rf"\bwhat does (?:my )?{_WHO} (?:like|love|enjoy)\b", "likes"),
        # "what should I get Marco for his birthday?": what they like, if told
        (rf"\bwhat (?:should|could|can|shall) i (?:get|buy|give|make|cook) (?:for )?"
         rf"(?:my )?{_WHO}\b", "gift"),
        (rf"\b(?:what\s+)?(?:is|are) (?:my )?{_WHO} allergic\b", "allergy"),
        (rf"\b(?:is|are) (?:my )?{_WHO} (?:an?\s+)?(?:{DIETS})\b", "diet"),
        (rf"\bwhat (?:doesn't|does not|can't|cannot) (?:my )?{_WHO} (?:eat|drink)\b", "avoid"),
        # "what does Jess eat?", "what's Jess's diet?", "does Tom have any dietary needs?"
        (rf"\bwhat (?:does|can|will|do) (?:my )?{_WHO} (?:eat|drink)\b|\bwhat(?:'s| is)"
         rf" (?:my )?{_WHO_AGAIN}(?:'s|s'|') diet\b", "food"),
        (rf"\b(?:does|do) (?:my )?{_WHO} have (?:any )?(?:dietary|food) (?:needs|requirements"
         r"|restrictions)\b", "food"),
        (rf"\bwhat does (?:my )?{_WHO} (?:play|learn|practi[cs]e)\b", "does"),
        (rf"\b(?:what|which) languages? (?:does|can) (?:my )?{_WHO} speak\b", "speaks"),
        (rf"\bwhat(?:'s| is| are) (?:the names? of )?(?:my|our|the) {_WHO}(?:'s|s'|')?"
         r" (?:names?|called)\b", "name"),
        (rf"\bwhat(?:'s| is| are) (?:my|our|the) {_WHO} called\b", "name"),
        (rf"\bwhat(?:'s| is| are) the names? of (?:my|our) {_WHO}\??$", "name"),
        (rf"\bhow many {_WHO} (?:do (?:i|we) have|have (?:i|we) got|(?:i|we)'ve got)\b", "count"),
        (rf"\bwhat (?:breed|kind of (?:dog|cat)|type of (?:dog|cat)) (?:is|are) (?:my )?{_WHO}\b",
         "breed"),
        # "when is Priya back?", "is my boss still off?": away, and until when.
        (rf"\b(?:when(?:'s| is| will)|is) (?:my )?{_WHO} (?:be )?(?:back|returning|still (?:away"
         r"|off|on holiday|on leave|out))\b", "away"),
        (rf"\bwhen does (?:my )?{_WHO} (?:get|come) back\b", "away"),
        # "who is Leo's teacher?", "what's Leo's best friend called?": one of theirs, by role.
        (rf"\bwho(?:'s| is| are) (?:my )?{_WHO}'s (?P<role>{PEOPLE})\b"
         rf"|\bwhat(?:'s| is) (?:my )?{_WHO_AGAIN}'s (?P<role2>{PEOPLE})(?:'s name| called)\b",
         "relative"),
        (rf"\bwho(?:'s| is) (?:my )?{_WHO}\b", ""),
        (rf"\b(?:tell me|what (?:do|did) you (?:know|remember)) about (?:my )?{_WHO}\b", ""),
    )
)  # fmt: skip
