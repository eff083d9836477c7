"""The words fact reading knows: who someone is to the user, pets, jobs, events, goals, and
words that are no name. Data, read by :mod:`agent.memory.rules.fact_extraction` (whose tests,
``tests/test_extraction.py`` and ``tests/test_everyday_phrasings.py``, cover them).
"""

from __future__ import annotations

__all__ = [
    "ALIASES",
    "AWAY",
    "BREEDS",
    "BUSINESSES",
    "CONDITIONS",
    "COUNTED",
    "DETAIL_NOUNS",
    "DIETS",
    "EVENTS",
    "GOAL_VERBS",
    "JOBS",
    "LODGING",
    "NAME_STOP",
    "NOT_DETAILS",
    "NOT_NAMES",
    "ONE_COUNTED",
    "PEOPLE",
    "PETS",
    "TRAITS",
]

#: The kinds one has a number of ("3 kids", "two dogs", "no pets"), as a count names them.
COUNTED = (
    "kids|children|sons|daughters|grandchildren|grandkids|siblings|brothers|sisters|dogs|cats|pets"
)
#: One of them, as said: "I have a dog", "I have a younger sister".
ONE_COUNTED = (
    "kid|child|son|daughter|grandchild|grandkid|sibling|brother|sister|dog|cat|pet|puppy|kitten"
)
#: Health conditions one lives with ("I have asthma", "my son has type 1 diabetes").
CONDITIONS = (
    r"(?:type\s+[12]\s+)?diabetes|asthma|arthritis|epilepsy|(?:high|low)\s+blood\s+pressure"
    r"|adhd|autism|migraines|eczema|psoriasis|ibs|crohn'?s(?:\s+disease)?|a\s+heart\s+condition"
    r"|sleep\s+apno?ea|an?\s+(?:underactive|overactive)\s+thyroid|long\s+covid|tinnitus|lupus"
    r"|multiple\s+sclerosis|copd|gout|osteoporosis|a\s+pacemaker|hay\s?fever"
)
#: What one is like, by kind: one of each is true at a time ("a night owl" or "a morning
#: person"), so the kind keys the fact.
TRAITS = {
    "chronotype": r"night\s+owl|morning\s+person|early\s+(?:bird|riser)|late\s+riser",
    "temperament": r"introvert|extrovert|ambivert|people\s+person|homebody",
    "handedness": r"left-handed|right-handed|ambidextrous",
    "sleep": r"light\s+sleeper|heavy\s+sleeper",
    "pet person": r"cat\s+person|dog\s+person",
}
#: Where one stays away from home: "the hotel", "an Airbnb", "a cottage".
LODGING = (
    r"hotel(?:\s+room)?|motel|room|airbnb|air\s?bnb|b&b|bnb|bed\s+and\s+breakfast|guest\s?house"
    r"|cottage|cabin|villa|apartment|hostel|campsite|lodge|chalet|caravan|inn|resort"
)
#: How one is away for a while: "on holiday until Monday", "off sick this week".
AWAY = (
    r"away|abroad|on\s+(?:holiday|holidays|vacation|leave|annual\s+leave|maternity\s+leave"
    r"|paternity\s+leave|sick\s+leave|a\s+business\s+trip|sabbatical)|off\s+(?:sick|work)"
    r"|out\s+of\s+(?:the\s+)?office"
)

#: Words that follow "call me" / "I'm" but are no name ("I'm tired", "call me later").
NOT_NAMES = frozenset(
    """a an the not no so very too just really also still now here there back later tomorrow
    today tonight maybe sometime soon again anytime whenever when if please home ok okay sorry
    fine good great well tired done ready sure busy bored sick hungry thirsty happy sad glad
    afraid excited new old in at on from with going about all alone lost late early up out off
    sleepy cold hot free interested curious confused worried scared angry stressed exhausted
    right wrong bad better worse alright awake asleep away around into over under working
    trying looking thinking planning hoping moving leaving coming staying living crazy anything
    whatever something sometimes always never usually often ever only almost already nearly
    finally literally totally back monday tuesday wednesday thursday friday saturday sunday
    january february march april june july august september october november december""".split()
) | frozenset(  # "my dad is Irish", "my parents are French and Italian": no names
    """english french irish scottish welsh british american canadian mexican brazilian german
    italian spanish portuguese dutch belgian swiss swedish norwegian danish finnish polish
    russian ukrainian greek turkish chinese japanese korean indian pakistani australian african
    asian european latino catholic christian jewish muslim hindu buddhist atheist""".split()
)
NAME_STOP = frozenset(
    """and but or from here btw by the i my so because who when if please later now tomorrow
    today instead anytime at on in thanks ok okay""".split()
)
#: What a goal does ("I'd like to learn Spanish"; not "I'd like to set a reminder").
GOAL_VERBS = (
    r"(?:learn|become|run|lose|gain|save|visit|travel|improve|master|speak|study|retire|quit"
    r"|stop|build|write|finish|climb|complete|graduate|pass|earn|own|launch|open|start (?:my|a|an)"
    r"|get (?:fit|better|in shape|a degree|promoted|married)|move (?:to|abroad|out)|read more"
    r"|spend more|be (?:a|an|more|better)|cut (?:down|back)|eat (?:less|more|better|healthier)"
    r"|drink (?:less|more)|exercise more|sleep more|walk more|get (?:more|better) sleep)"
)
#: Who someone is to the user ("my sister Mia"), and which animals are pets ("my cat Miso").
PEOPLE = (
    "best friend|best mate|bestie|friend|mate|pal|buddy|girlfriend|boyfriend|partner|spouse|wife"
    "|husband|fiancee|fiancée|fiance|fiancé"
    "|mother-in-law|father-in-law|daughter-in-law|son-in-law|sister-in-law|brother-in-law"
    "|mother|father|mom|mum|mommy|dad|daddy|parents|stepmother|stepmum|stepmom|stepdad"
    "|stepfather|stepsister|stepbrother|sister|brother|son|daughter|kid|child|baby|grandmother"
    "|grandma|granny|grandfather|grandpa|grandson|granddaughter|grandchild|grandkid|stepson|twin"
    "|stepdaughter|aunt|uncle|cousin|niece|nephew|colleague|coworker|boss"
    "|manager|roommate|flatmate|housemate|neighbour|neighbor|teacher|doctor|therapist|dentist"
    "|accountant|lawyer|solicitor|landlord|landlady|cleaner|nanny|babysitter|childminder|tutor"
    "|personal trainer|vet|mechanic|plumber|electrician|hairdresser|barber|supplier|client"
    "|mentor|godmother|godfather|carer|physio|counsellor|counselor|little boy"
    "|little girl|boy|girl"
)
#: What one runs or owns as one's work ("I run a small bakery in Bristol").
BUSINESSES = (
    "bakery|shop|cafe|café|coffee shop|restaurant|business|company|salon|studio|store|bar|pub"
    "|gym|clinic|practice|agency|firm|farm|garage|start-?up|hotel|b&b|bookshop|boutique"
    "|consultancy|charity|nursery|food truck|stall|brewery|vineyard|kennels|florist"
)
#: A pet said by its breed ("a golden retriever named Biscuit"), and the animal it is.
BREEDS = {
    breed: animal
    for animal, breeds in (
        ("dog", "golden retriever|labrador retriever|german shepherd|border collie|jack russell"
         "|cocker spaniel|springer spaniel|french bulldog|labrador|retriever|spaniel|poodle"
         "|terrier|collie|beagle|pug|dachshund|husky|greyhound|whippet|corgi|schnauzer|chihuahua"
         "|bulldog|rottweiler|doberman|labradoodle|cockapoo|cavapoo|sheepdog"),
        ("cat", "tabby|siamese cat|persian cat|maine coon|ragdoll|bengal cat|moggy"),
    )
    for breed in breeds.split("|")
}  # fmt: skip
#: A role said in other words, and the role it is ("a golden retriever": a dog; "a little
#: boy": a son).
ALIASES = {
    **BREEDS,
    **{"little boy": "son", "boy": "son", "little girl": "daughter", "girl": "daughter"},
}
PETS = (
    "cat|kitten|dog|puppy|parrot|budgie|hamster|rabbit|bunny|guinea pig|fish|goldfish|horse"
    "|pony|bird|turtle|tortoise|snake|lizard|ferret|gecko|chinchilla|rat|mouse|"
    + "|".join(BREEDS)
)
#: Work a person says they do with "I'm a ..." (a word or two may come before: "software").
JOBS = (
    "nurse|teacher|doctor|engineer|developer|programmer|designer|lawyer|accountant|architect"
    "|chef|cook|baker|student|writer|journalist|photographer|artist|musician|pilot|driver"
    "|electrician|plumber|carpenter|mechanic|pharmacist|dentist|vet|veterinarian|scientist"
    "|researcher|professor|lecturer|consultant|manager|analyst|librarian|firefighter"
    "|police officer|paramedic|farmer|waiter|waitress|barista|cashier|translator|therapist"
    "|psychologist|secretary|receptionist|entrepreneur|freelancer|surgeon|midwife"
    "|physiotherapist|tutor|coach|editor|economist|banker|clerk|technician|builder|painter"
    "|gp|radiographer|solicitor|hairdresser|barber|cleaner|carer|nanny|childminder|assistant"
    "|administrator|optician|estate agent|social worker|civil servant|soldier|postman|courier"
    "|actor|actress|singer|dancer|dietitian|counsellor|counselor|copywriter|sales rep"
)
#: A diet said "I'm ..." ("I have coeliac disease" too): what it rules out is
#: :mod:`agent.memory.rules.food_groups`'s.
DIETS = (
    r"(?:vegetarian|vegan|pescatarian|gluten[- ]free|(?:lactose|gluten|wheat)[- ]intolerant"
    r"|dairy[- ]free|teetotal|sober|kosher|halal|coeliac|celiac)"
)
#: What a user may have on their calendar: "my flight to Berlin is on 14 March".
EVENTS = (
    "flight|train|bus|ferry|trip|holiday|vacation|appointment|meeting|interview|exam|test"
    "|wedding|party|concert|match|game|class|lesson|presentation|deadline|check-?up|surgery"
    "|operation|reservation|booking|visit|course|conference|show|date|dinner|lunch|brunch"
    "|drinks|game night|barbecue|bbq|picnic|hike|race|marathon|gig|recital|ceremony|funeral"
    "|haircut|massage|rehearsal|viewing|shift|festival|graduation|reunion|christening|check-in"
    "|scan|physio|therapy session|vaccination|jab|school play|parents'? evening|sports day"
    "|open (?:day|evening)|sleepover|play ?date|book club|tournament|audition|pick-?up|drop-?off"
    "|school run"
    "|anniversary|mot|service|inspection|delivery|housewarming|baby shower|hen do|stag do"
)
#: What a detail of the user's world is called when "the X is Y" states one ("the garage code
#: is 4471"), and "my X is Y" may without a name, a number or "a ..." ("my email is ...").
DETAIL_NOUNS = frozenset(
    """code codes password passwords passcode passphrase pin combination combo address email
    e-mail username login handle wifi id number plate reg registration size type model
    postcode zipcode zip pb weight height""".split()
)
#: What "my X is ..." says of no lasting detail: a time, the body, a mood, a way of speaking
#: ("my day is going great", "my back is killing me", "my point is ...").
NOT_DETAILS = frozenset(
    """day days morning afternoon evening night week weekend month year time life head back
    neck stomach tummy knee knees leg legs arm arms foot feet hand hands eye eyes throat tooth
    teeth heart chest skin hair body mood mind brain luck battery signal internet connection
    point question guess problem problems issue concern worry fear bad turn pleasure fault
    mistake opinion advice answer reply thought thoughts idea plan plans dream hope wish excuse
    reason gut treat schedule diary calendar family kids children situation story news shift
    fun favourite favorite fave""".split()
)
