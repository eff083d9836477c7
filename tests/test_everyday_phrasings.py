"""Everyday phrasings of what a user tells the offline concierge, family by family: several ways
of saying each thing, and of asking about it later. Each case is a short conversation (real
state manager, real long-term memory in a SQLite file: the ``Chat`` of test_rule_based.py); the
last reply must contain what a person expects.

The rules are data: the fact patterns of ``agent/memory/rules/fact_extraction.py``, the to-do
patterns of ``agent/memory/rules/extraction.py`` and the question patterns of
``agent/engines/rule_facts.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.test_console_sessions import replies, run_console
from tests.test_rule_based import T0, Chat


async def conversation(chat: Chat, lines: list[str]) -> str:
    said = ""
    for line in lines:
        said = (await chat.say(line)).text or ""
    return said


CASES: dict[str, list[tuple[list[str], str]]] = {
    "names": [
        (["call me Sam", "what do you call me?"], "Sam"),
        (["you can call me Sam", "what's my name?"], "Sam"),
        (["I go by Sam", "what's my name?"], "Your name is Sam."),
        (["people call me Sammy", "who am I?"], "Sammy"),
        (["my name is Samuel but call me Sam", "what's my name?"], "Sam"),
        (["hello! the name's Jo", "what's my name?"], "Your name is Jo."),
        (["everyone calls me JJ", "what do you call me?"], "JJ"),
        (["I'm called Theo", "what's my name?"], "Your name is Theo."),
        (["hi, I am named Alexandra", "who am I?"], "Alexandra"),
        (["I'm Margaret, but my friends call me Maggie", "what should you call me?"],
         "Your name is Maggie."),
        (["call me Sam", "how should you address me?"], "Your name is Sam."),
        (["my name is Ada", "do you know my name?"], "Your name is Ada."),
        (["I'm Tom, 41, living in Bristol", "how old am I?"], "You're 41."),
        (["I'm Tom, 41, living in Bristol", "where do I live?"], "You live in Bristol."),
        (["hi, I'm Ana, a nurse from Porto", "what's my job?"], "You work as a nurse."),
        (["I'm Ana, a nurse from Porto", "where am I from?"], "You're from Porto."),
        (["it's Sam here", "what's my name?"], "Your name is Sam."),
        (["hi! this is Priya speaking", "what's my name?"], "Your name is Priya."),
        (["it's Monday", "what's my name?"], "I don't know your name yet."),
        (["hey im jake"], "Nice to meet you, Jake."),
        (["hey im jake", "what's my name?"], "Your name is Jake."),
        (["im jake btw", "what's my name?"], "Your name is Jake."),
        (["hey im stuck", "what's my name?"], "I don't know your name yet."),
        (["my name is Dana", "I'm going to Rome in August with my sister",
          "who am I going to Rome with?"], "my sister"),
        (["my name is Dana", "hey, who am I?"], "Your name is Dana."),
    ],
    "pets and relatives": [
        (["I have a dog called Rex", "what's my dog called?"], "Rex"),
        (["I got a new puppy called Biscuit", "what pets do I have?"], "Biscuit"),
        (["we just adopted a cat named Luna", "what's my cat's name?"], "Luna"),
        (["I've got a cat named Luna, she's 4", "how old is Luna?"], "4"),
        (["we have a parrot called Kiwi", "what pets do I have?"], "Kiwi"),
        (["my daughter Emma is 7", "how old is Emma?"], "7"),
        (["our dog Rex is 3 years old", "how old is Rex?"], "3"),
        (["I have a brother called Tom", "who is Tom?"], "brother"),
        (["my husband Raj is a pilot", "what does Raj do?"], "pilot"),
        (["my sister Ana is a nurse at the city hospital", "what's Ana's job?"], "a nurse."),
        (["we've got a puppy called Biscuit, he's 1", "what's Biscuit's age?"], "1"),
        (["my son Leo is 3", "my son Leo just turned 4", "how old is Leo?"], "Leo is 4."),
        (["I have 2 cats, Tom and Jerry", "who's Tom?"], "Your cat is called Tom."),
        (["I have 2 cats, Tom and Jerry", "who is Jerry?"], "Your cat is called Jerry."),
        (["our twins are called Ana and Bea", "who is Bea?"], "Your twin is called Bea."),
        (["my kids are Ana and Leo", "who is Leo?"], "Your kid is called Leo."),
        (["my best friend is Jake", "who's my best friend?"], "Jake"),
        (["my dad is Irish", "what's my dad's name?"], "haven't told me your dad's name"),
        (["my parents are French and Italian", "who are my parents?"],
         "you told me: my parents are French and Italian"),
        (["we have two kids called Ana and Leo", "who is Leo?"], "kid"),
        (["I'm 34", "I just turned 35", "how old am I?"], "You're 35."),
        (["I have two cats, Miso and Tofu", "Miso is 3 and Tofu is 5", "how old is Tofu?"],
         "Tofu is 5"),
        (["I have two cats, Miso and Tofu", "Miso is 3, Tofu is 5", "how old is Miso?"],
         "Miso is 3"),
        (["my sons are Leo and Max", "Leo is 7 and Max is 4", "how old is Max?"], "Max is 4"),
        (["I have two cats, Miso and Tofu", "what are my cats called?"],
         "Your cats are called Miso and Tofu."),
        (["I have two cats, Miso and Tofu"], "Noted: your cats are called Miso and Tofu."),
        (["we have 3 kids: Ana, Leo and Max"], "your kids are called Ana, Leo and Max."),
        (["my wife Giulia works at the bank"], "Noted: your wife Giulia works at the bank."),
        (["my sister Ana and my brother Tom"], "your sister is called Ana and your brother is"),
        (["I have two cats, Miso and Tofu", "what are my cats' names?"], "Miso"),
        (["we have two kids called Ana and Leo", "what are my kids called?"], "Leo"),
        (["my daughters are Ana and Bea", "what are my daughters' names?"], "Bea"),
        (["I have two cats, Miso and Tofu", "Miso is 3 and Tofu is 5", "how old are my cats?"],
         "Tofu is 5"),
        (["I've got a brother called Tom who lives in Dublin", "where does Tom live?"],
         "Your brother Tom lives in Dublin."),
        (["my sister Ana, who works at the city hospital, is great", "where does Ana work?"],
         "Your sister Ana works at the city hospital."),
        (["we have a dog named Rex that loves long walks", "what does Rex like?"],
         "Your dog Rex likes long walks."),
        (["my son is 12", "his name is Leo", "who is Leo?"], "Your son is called Leo."),
        (["my wife's name is Clara", "she works at the city hospital", "where does Clara work?"],
         "Your wife Clara works at the city hospital."),
        (["I have a dog called Rex", "he's 3", "how old is Rex?"], "Your dog Rex is 3."),
        (["my sister Ana lives in Porto", "how old is she?"], "haven't told me that about Ana"),
        (["my son is 12", "what's his name?"], "haven't told me your son's name"),
        (["I have a dog called Rex", "my name is Ada", "Rex is 5 now", "how old is Rex?"],
         "Your dog Rex is 5."),
        (["my mom's birthday is on 3 June", "when is my mom's birthday?"], "3 June"),
        (["my wife is called Clara", "Clara's job is dentist", "what does Clara do?"],
         "dentist"),
        (["I have a cat called Miso", "she's 4", "she loves tuna", "what does she like?"],
         "Your cat Miso likes tuna."),
        (["I have two kids, Oliver who is 9 and Poppy who is 6", "how old is Poppy?"],
         "Your kid Poppy is 6."),
        (["I have two kids, Oliver who is 9 and Poppy who is 6", "who is Oliver?"],
         "Your kid is called Oliver."),
        (["we have two daughters, Ana (7) and Bea (4)", "how old is Bea?"], "Bea is 4."),
        (["my sons are Leo, 7, and Max, 4", "how old is Leo?"], "Leo is 7."),
        (["I have a golden retriever named Biscuit", "what's my dog called?"], "Biscuit"),
        (["I've got a 5 year old son, Leo", "how old is Leo?"], "Your son Leo is 5."),
        (["I've got a 5 year old son, Leo", "who is Leo?"], "Your son is called Leo."),
        (["I have a 10-year-old dog called Rex", "how old is my dog?"], "Rex is 10"),
        (["my 3 year old daughter Zoe loves drawing", "how old is Zoe?"], "Zoe is 3."),
        (["my 3 year old daughter Zoe loves drawing", "what does Zoe like?"], "drawing"),
        (["we have a 2 year old cat named Pixel", "what's my cat's name?"], "Pixel"),
        (["my 7 yo son Max is obsessed with dinosaurs", "how old is Max?"], "Max is 7."),
        (["got a cat called Pixel", "what pets do I have?"], "Pixel"),
        (["just adopted a rabbit named Clover", "what's my rabbit called?"], "Clover"),
        (["and a golden retriever named Biscuit, he turned 5 last month", "how old is Biscuit?"],
         "5"),
        (["we've got a tabby called Mog", "what pets do I have?"], "Mog"),
        (["I have two kids, Oliver and Poppy", "how many kids do I have?"],
         "You have 2 kids: Oliver and Poppy."),
        (["we have 3 kids: Ana, Leo and Max", "how many children do we have?"],
         "You have 3 children: Ana, Leo and Max."),
        (["I have a dog called Rex", "how many cats do I have?"], "haven't told me"),
        (["I've got a little boy, Arjun, he's 4", "how old is Arjun?"], "Arjun is 4."),
        (["we also have a cat, Pickle", "what's the cat called?"], "Pickle"),
        (["my daughter Meera just turned 8", "how old are my kids?"], "Meera is 8."),
        (["my wife is called Sarah, she's a GP", "what does Sarah do?"],
         "Your wife Sarah works as a GP."),
        (["my husband Dev is a radiographer", "what does Dev do?"], "a radiographer"),
        (["my best mate is called Chris and he lives in Leeds", "where does Chris live?"],
         "Your best mate Chris lives in Leeds."),
        (["my pal Dave is a plumber", "what does Dave do?"], "Your pal Dave works as a plumber."),
        (["I have two kids, Oliver and Poppy", "Oliver plays the violin",
          "what does Oliver play?"], "Your kid Oliver plays the violin."),
        (["my son Leo plays football", "what does Leo play?"], "Your son Leo plays football."),
        (["my daughter Ana is learning the piano", "tell me about Ana"],
         "Your daughter Ana is learning the piano."),
        (["I play the guitar", "what do I play?"], "You play the guitar."),
        (["I play tennis", "I love jazz", "what are my hobbies?"], "You play tennis."),
        (["I play football every Sunday", "what do I do on Sundays?"], "football"),
        (["my partner Jamie is a chef at a restaurant called Fern", "where does Jamie work?"],
         "Your partner Jamie works at a restaurant called Fern."),
        (["my brother Sam is a nurse at St Mary's", "what does Sam do?"],
         "Your brother Sam works as a nurse."),
        (["my partner Jamie is a chef", "actually Jamie works at a bistro called Moss now",
          "where does Jamie work?"], "Your partner Jamie works at a bistro called Moss."),
        (["we've got two cats called Salt and Pepper", "Salt is 3 and Pepper is 2",
          "no wait, my cat Salt is 4 actually", "how old is Salt?"], "Your cat Salt is 4."),
    ],
    "allergies and constraints": [
        (["I'm allergic to peanuts", "what am I allergic to?"], "peanuts"),
        (["I'm severely allergic to penicillin", "am I allergic to anything?"], "penicillin"),
        (["I have a peanut allergy", "do I have any allergies?"], "peanut"),
        (["I can't eat gluten", "what can't I eat?"], "gluten"),
        (["I don't eat meat", "what can't I eat?"], "meat"),
        (["I'm vegan", "what's my diet?"], "vegan"),
        (["I'm allergic to peanuts", "can I eat peanut butter?"],
         "Better not. You're allergic to peanuts."),
        (["I don't eat pork", "should I have the pork ribs?"], "Better not."),
        (["I'm allergic to shellfish", "I'm vegetarian", "can I have pasta?"],
         "Nothing you told me rules it out (you're allergic to shellfish; you're vegetarian)."),
    ],
    "what a diet or an allergy rules out": [
        (["I'm vegetarian", "can I eat a burger?"], "Better not. You're vegetarian"),
        (["I'm vegetarian", "should I order the chicken wings?"], "Better not."),
        (["I'm vegetarian", "can I have a veggie burger?"], "Nothing you told me rules it out"),
        (["I'm vegetarian", "do I eat meat?"], "No. You're vegetarian"),
        (["I'm vegetarian", "can I eat salmon?"], "Better not."),
        (["I'm pescatarian", "can I eat salmon?"], "Nothing you told me rules it out"),
        (["I'm pescatarian", "can I have a steak?"], "Better not."),
        (["I'm vegan", "can I have a latte?"], "Better not."),
        (["I'm vegan", "can I have an oat milk latte?"], "Nothing you told me rules it out"),
        (["I'm vegan", "can I eat an omelette?"], "Better not."),
        (["I don't drink alcohol", "can I have a beer?"], "Better not."),
        (["I don't drink alcohol", "can I have an alcohol-free beer?"],
         "Nothing you told me rules it out"),
        (["I'm teetotal", "should I try the red wine?"], "Better not."),
        (["I'm allergic to nuts", "can I eat an almond croissant?"], "Better not."),
        (["I have a nut allergy", "can I have a snickers bar?"], "Better not."),
        (["I'm allergic to shellfish", "can I eat shrimp?"], "Better not."),
        (["I'm allergic to shellfish", "can I eat salmon?"], "Nothing you told me rules it out"),
        (["I'm allergic to seafood", "can I try the mussels?"], "Better not."),
        (["I'm lactose intolerant", "can I have ice cream?"], "Better not."),
        (["I'm gluten-free", "can I have a croissant?"], "Better not."),
        (["I'm gluten-free", "can I have gluten-free bread?"], "Nothing you told me rules it out"),
        (["I'm allergic to eggs", "can I have mayo?"], "Better not."),
        (["I don't eat pork", "can I eat bacon?"], "Better not."),
        (["I'm halal", "can I eat a ham sandwich?"], "Better not."),
        (["I'm vegan", "do I drink milk?"], "No. You're vegan"),
        (["I'm allergic to shellfish and kiwi", "can I have a kiwi smoothie?"], "Better not."),
        (["I'm allergic to nuts and strawberries", "can I eat strawberry jam?"], "Better not."),
        (["I'm allergic to shellfish and kiwi", "can I have an apple?"],
         "Nothing you told me rules it out"),
        (["I'm coeliac", "can I have a croissant?"], "Better not."),
        (["I have celiac disease", "can I eat pasta?"], "Better not."),
        (["I'm coeliac", "what's my diet?"], "coeliac"),
        (["I'm coeliac", "is sourdough ok for me?"], "Better not."),
        (["I'm vegetarian", "is the chicken curry ok for me?"], "Better not."),
        (["I'm vegan", "is a veggie burger safe for me?"], "Nothing you told me rules it out"),
        (["I'm allergic to peanuts", "are peanut cookies safe for me to eat?"], "Better not."),
        (["I'm allergic to peanuts", "is it ok if I eat satay?"], "Better not."),
        (["I can't have dairy", "can I have a cheese toastie?"], "Better not."),
        (["I'm allergic to sesame", "can I have hummus?"], "Better not."),
        (["I'm lactose intolerant and allergic to sesame", "what am I allergic to?"],
         "You're allergic to sesame."),
    ],
    "work": [
        (["I'm a nurse", "what's my job?"], "nurse"),
        (["I work as a nurse", "what do I do for a living?"], "nurse"),
        (["I'm a software engineer at Google", "where do I work?"], "Google"),
        (["I work at a bakery", "where do I work?"], "bakery"),
        (["I'm a teacher", "what do I do?"], "teacher"),
        (["I work as a developer for Spotify", "where do I work?"], "Spotify"),
        (["I'm employed at Deloitte", "where do I work?"], "Deloitte"),
        (["my employer is the city council", "where do I work?"], "the city council"),
        (["I work as a chef at Nobu", "what's my job?"], "You work as a chef."),
        (["I'm a nurse", "I changed jobs, I'm now a teacher", "what's my job?"],
         "You work as a teacher."),
    ],
    "likes and dislikes": [
        (["I love hiking", "do I like hiking?"], "Yes"),
        (["I'm a big fan of jazz", "do I like jazz?"], "Yes"),
        (["I'm into pottery", "what do I like?"], "pottery"),
        (["I can't stand loud music", "do I like loud music?"], "No"),
        (["I hate cilantro", "what don't I like?"], "cilantro"),
        (["I love hiking", "do I like opera?"], "haven't told me"),
        (["I love sushi", "what food do I like?"], "sushi"),
        (["my favourite colour is green", "what's my favorite color?"], "green"),
        (["my favorite flavor is mint", "what's my favourite flavour?"], "mint"),
        (["I like jazz", "I no longer like jazz", "do I like jazz?"], "No"),
        (["I love running", "I don't like running anymore", "do I like running?"],
         "No, you don't like running."),
        (["I'm a fan of opera", "I'm not into opera any more", "do I like opera?"], "No"),
        (["I prefer tea over coffee", "do I like tea?"], "Yes"),
        (["pizza is my favourite food", "what's my favourite food?"], "pizza"),
        (["Radiohead are my favourite band", "what's my favorite band?"], "Radiohead"),
        (["pizza is my favourite food", "do I like pizza?"], "Yes"),
        (["I'm really into jazz", "am I into jazz?"], "Yes"),
        (["I'm a big fan of jazz", "am I a fan of jazz?"], "Yes"),
        (["I hate cilantro", "am I a fan of cilantro?"], "No"),
        (["I really enjoy swimming", "do I enjoy swimming?"], "Yes"),
        (["I've started liking olives", "do I like olives?"], "Yes, you like olives."),
        (["I have come to love jazz", "what do I like?"], "jazz"),
        (["I much prefer the mountains to the beach", "what do I like?"], "the mountains"),
        (["I prefer cycling", "what do I enjoy?"], "cycling"),
        (["I'm not keen on karaoke", "do I like karaoke?"], "No, you don't like karaoke."),
        (["I'm not really a fan of horror films", "what don't I like?"], "horror films"),
        (["I can't bear queues", "do I like queues?"], "No"),
        (["my favourite film is Amelie", "what's my favourite movie?"], "Amelie"),
        (["my favorite movie is Heat", "what's my fave film?"], "Heat"),
        (["my favourite TV show is Taskmaster", "what's my favourite show?"], "Taskmaster"),
        (["I adore Italian food", "what kind of music do I like?"],
         "haven't told me what music you like"),
        (["I adore Italian food", "I love jazz", "what kind of music do I like?"],
         "You like jazz."),
        (["I love sushi", "I love hiking", "what food do I like?"], "You like sushi."),
        (["I love hiking", "I'm into rock climbing", "what sports do I like?"], "hiking"),
        (["I love hiking", "what sort of things do I like?"], "hiking"),
        (["my favourite band is Radiohead", "what music do I like?"], "Radiohead"),
        (["I absolutely love Bollywood musicals", "what films do I like?"], "Bollywood musicals"),
    ],
    "plans with dates": [
        (["my flight to Berlin is on 14 March", "when is my flight?"], "14 March"),
        (["I'm going to Japan in August", "where am I going in August?"], "Japan"),
        (["I'm heading to Portugal in September", "where am I going in September?"], "Portugal"),
        (["I'm flying to Rome next Friday", "what are my plans?"], "Rome"),
        (["my dentist appointment is on Tuesday", "what are my plans?"],
         "Your dentist appointment is on Tue 4 Mar."),
        (["my dentist appointment is on Tuesday at 3pm", "when is my dentist appointment?"],
         "Your dentist appointment is on Tue 4 Mar at 15:00."),
        (["my exam is on 12 June", "when is my exam?"], "12 June"),
        (["I have a job interview on Monday at 10am", "when is my interview?"],
         "Your job interview is on Mon 3 Mar at 10:00."),
        (["I've got a dentist appointment next Thursday", "when's my dentist appointment?"],
         "Your dentist appointment is on Thu 6 Mar."),
        (["my exam is on 12 June", "my exam got moved to 19 June", "when is my exam?"],
         "19 June"),
        (["I have a test tomorrow", "when is my test?"], "Your test is tomorrow, Sun 2 Mar."),
        (["this weekend I'm going hiking with Tom", "what am I doing this weekend?"],
         "You're planning to go hiking with Tom the weekend of Sat 1 Mar."),
        (["on Friday I have a dinner with my parents", "I'm planning to paint the kitchen",
          "what are my plans for Friday?"], "Your dinner with your parents is on Fri 7 Mar."),
        (["I'm planning to paint the kitchen next month", "what are my plans for Friday?"],
         "haven't told me about plans for Friday"),
        (["my flight to Rome is next Tuesday", "do I have anything planned for next Tuesday?"],
         "Rome"),
        (["my birthday's on the 3rd of June", "when's my birthday?"], "the 3rd of June"),
        (["my flight to Tokyo is on 14 March", "where am I going in March?"], "Tokyo"),
        (["my train to Porto leaves on Friday", "where am I going?"], "Porto"),
        (["I'm travelling to Oslo in May", "where am I flying to?"], "Oslo"),
        (["I'm going to Japan in August", "where am I going in July?"],
         "haven't told me about a trip in July"),
        (["I'm flying to Lisbon on August 3rd", "when is my flight?"], "August 3rd"),
        (["I'm travelling to Oslo in May", "when's my trip?"], "Oslo in May"),
        (["I'm going to Rome in September for a conference", "when is my holiday?"],
         "September"),
        (["my flight to Lisbon is on 12 August at 6:40am", "what time is my flight?"],
         "12 August at 6:40am"),
        (["I have a dentist appointment on Tuesday at 3pm", "when's the dentist?"],
         "Your dentist appointment is on Tue 4 Mar at 15:00."),
        (["the conference in Madrid is on 2 October", "when is the conference?"],
         "Your conference in Madrid is on 2 October."),
        (["my train leaves at 7am tomorrow", "what time does my train leave?"], "07:00"),
        (["my exam is on 12 June", "what day is my exam?"], "12 June"),
        (["I'm going to Paris for work from the 4th to the 6th", "where am I going?"],
         "You're planning a trip to Paris for work from the 4th."),
        (["we're having a barbecue on Sunday", "what are my plans for Sunday?"],
         "Your barbecue is tomorrow, Sun 2 Mar."),
        (["I'm having a party on Saturday", "when is my party?"], "Your party is "),
        (["I'm flying to Lisbon on the 3rd of March and back on the 10th",
          "when am I flying to Lisbon?"], "You're planning a trip to Lisbon on the 3rd of March."),
        (["I'm going to Rome in May", "when am I going to Rome?"], "in May"),
        (["I'm going to Rome in May", "when am I going to Paris?"], "haven't told me"),
        (["my exam is on 12 June", "what have I got coming up?"], "Your exam is on 12 June."),
        (["my exam is on 12 June", "anything coming up?"], "Your exam is on 12 June."),
        (["my exam is on 12 June", "what's coming up?"], "Your exam is on 12 June."),
        (["my mother-in-law is coming on Sunday", "when is my mother-in-law coming?"],
         "Sun 2 Mar"),
        (["our anniversary is on 14 February", "when's our anniversary?"],
         "Your anniversary is on 14 February."),
        (["the boiler service is on the 9th at 8am", "when is the boiler service?"],
         "Your boiler service is on "),
        (["my car MOT is due on 30 January", "when's my MOT due?"],
         "Your car MOT is due on 30 January."),
        (["my parents are visiting from 3 to 7 September", "when are my parents visiting?"],
         "from 3 to 7 September"),
        (["my sister Ana is coming to stay next weekend", "what are my plans?"],
         "the weekend of Sat 8 Mar"),
        (["we're going camping in the Lake District in July", "what are my plans?"],
         "go camping in the Lake District in July"),
        (["I've got a haircut on Thursday at 11am", "what am I doing on Thursday?"],
         "Your haircut is on Thu 6 Mar at 11:00."),
        (["I've got a haircut on Thursday at 11am", "do I have anything on Thursday?"],
         "Your haircut is on Thu 6 Mar at 11:00."),
        (["I've got a haircut on Thursday at 11am", "do I have anything on Friday?"],
         "haven't told me about plans on Friday"),
    ],
    "corrections": [
        (["I'm 40", "sorry I'm 41"], "Corrected: you're 41 (updated)."),
        (["I'm 40", "sorry I'm 41", "how old am I?"], "You're 41."),
        (["I live in Leeds", "no wait, I live in York", "where do I live?"], "You live in York."),
        (["I work at Siemens", "oops, I meant I work at Bosch", "where do I work?"],
         "You work at Bosch."),
        (["I live in Leeds", "nope, I live in Hull"], "Corrected: you live in Hull (updated)."),
        (["my dentist appointment is on Tuesday", "no, it's on Wednesday",
          "when is my dentist appointment?"], "on Wed "),
        (["I live in Bristol", "sorry, it's Bath", "where do I live?"], "You live in Bath."),
        (["I'm 40", "no wait, it's 41"], "Corrected: you're 41 (updated)."),
        (["my flight to Rome leaves on Friday", "oops, it's on Saturday", "when is my flight?"],
         "on Sat "),
        (["I live in Bristol", "it's raining", "where do I live?"], "You live in Bristol."),
        (["I live in Lisbon", "actually I live in Porto", "where do I live?"], "Porto"),
        (["I live in Leeds", "my new address is 12 Oak Street, York", "where do I live?"],
         "You live in 12 Oak Street, York."),
        (["my name is Tom", "no, my name is Sam", "what's my name?"], "Sam"),
        (["my cat Luna is 4", "sorry, my cat Luna is actually 5", "how old is Luna?"], "5"),
        (["I work at a bakery", "correction: I work at a bank", "where do I work?"], "bank"),
        (["I live in Bristol", "actually it's Bath, not Bristol", "where do I live?"],
         "You live in Bath."),
        (["I live in Bristol", "sorry, Bath not Bristol"], "Corrected: you live in Bath"),
        (["my sister Ana lives in Lisbon", "no, not Lisbon, Porto", "where does Ana live?"],
         "Your sister Ana lives in Porto."),
        (["my dentist appointment is on Monday at 3pm", "oops, Tuesday, not Monday",
          "when is my dentist appointment?"], "Your dentist appointment is on Tue 4 Mar at 15:00."),
        (["I'm a nurse", "I said nurse but I meant midwife", "what's my job?"], "midwife"),
        (["my dentist appointment is next Tuesday at 3pm", "oh wait, it's Wednesday not Tuesday",
          "when's the dentist?"], "on Wed 5 Mar at 15:00"),
        (["my dentist appointment is on Tuesday", "oh wait, it's on Wednesday",
          "when is my dentist appointment?"], "on Wed "),
        (["I live in Bristol", "ah sorry, Bath not Bristol", "where do I live?"],
         "You live in Bath."),
        (["I live in Bristol", "whoops, it's Bath", "where do I live?"], "You live in Bath."),
        (["I live in Bristol", "oh, it's raining", "where do I live?"], "You live in Bristol."),
        (["I live in Leeds", "oh wait, I live in York"], "Corrected: you live in York (updated)."),
        (["set my time zone to New York", "sorry, I meant London", "what's my time zone?"],
         "Your time zone is Europe/London."),
        (["I'm in Tokyo time now", "what's my time zone?"], "Your time zone is Asia/Tokyo."),
        # A name put right is a rename, not a second sister; a day put right keeps the time.
        (["my sister is Hanna", "sorry, her name is Anna", "who is my sister?"],
         "Your sister is called Anna."),
        (["my sister is Hanna", "no wait, her name is Anna"],
         "Corrected: your sister is called Anna."),
        (["my cat is called Misty", "sorry, her name is Mist", "what's my cat's name?"],
         "Your cat is called Mist."),
        (["I have a dog called Rex", "oops, it's Max", "what's my dog called?"],
         "Your dog is called Max."),
        (["my brother is called Tom", "actually his name is Tim", "who is Tom?"],
         "haven't told me"),
        (["my brother is Mark", "I meant my cousin is Mark", "who is Mark?"],
         "Your cousin is called Mark."),
        (["my dentist appointment is on Tuesday at 3pm", "no, it's on Wednesday",
          "when is my dentist appointment?"], "Your dentist appointment is on Wed 5 Mar at 15:00."),
        (["my haircut is on Friday at 11am", "sorry, it's on Thursday", "when is my haircut?"],
         "Your haircut is on Thu 6 Mar at 11:00."),
        (["my name is Jon", "actually it's John with an h", "what's my name?"],
         "Your name is John."),
        (["I like coffee", "no, I meant I like tea", "do I like coffee?"], "haven't told me"),
    ],
    "what the user is learning": [
        (["I'm learning Japanese"], "Noted: you're learning Japanese."),
        (["I'm learning Japanese", "what am I learning?"], "You're learning Japanese."),
        (["I'm taking guitar lessons", "what am I learning?"], "You're learning guitar."),
        (["I'm taking guitar lessons", "what are my hobbies?"], "learning guitar"),
    ],
    "one more to-do, said after one": [
        (["I need to call the plumber", "and buy milk", "what's on my list?"], "2. buy milk"),
        (["remind me to pay the rent", "oh and book the dentist too", "what's on my list?"],
         "2. book the dentist"),
        (["I need to call the plumber", "and see what he says"], "Sorry, I didn't understand"),
    ],
    "to-dos closed in other words": [
        (["I need to send the invoice", "the invoice is sent"],
         "I've ticked off: send the invoice."),
        (["need to pay the electricity bill", "the electricity bill is paid"],
         "I've ticked off: pay the electricity bill."),
        (["I have to call the plumber", "called the plumber"],
         "I've ticked off: call the plumber."),
        (["remind me to renew my passport", "passport renewed"],
         "I've ticked off: renew your passport."),
        (["I must book the dentist", "the dentist has been booked"],
         "I've ticked off: book the dentist."),
        (["gotta water the plants", "just watered the plants"],
         "I've ticked off: water the plants."),
        (["I need to book a dentist appointment", "I booked the dentist appointment"],
         "I've ticked off: book a dentist appointment."),
        (["I have to renew my passport", "I've renewed my passport"],
         "I've ticked off: renew your passport."),
        (["I need to send the invoice to Bob", "the invoice went out"],
         "I've ticked off: send the invoice to Bob."),
        (["I need to post the parcel", "the parcel is in the post"],
         "I've ticked off: post the parcel."),
        (["I have to transfer the rent", "the rent transfer went through"],
         "I've ticked off: transfer the rent."),
        (["I need to fix the fence", "the power went out", "what's on my list?"],
         "1. fix the fence"),  # the power is not on the list: nothing is closed
        (["I need to fix the fence", "the fence is fixed now"], "I've ticked off: fix the fence."),
        (["I have to cancel the gym membership", "gym membership cancelled"],
         "I've ticked off: cancel the gym membership."),
        (["I need to cancel my Netflix subscription", "cancelled Netflix"],
         "I've ticked off: cancel your Netflix subscription."),
        (["I need to book the vet", "my meeting got cancelled", "what's on my list?"],
         "1. book the vet"),
        (["I need to pick up the prescription", "got the prescription"],
         "I've ticked off: pick up the prescription."),
        (["I need to pick up the prescription", "and also book swimming lessons for Meera",
          "swimming lessons booked"], "I've ticked off: book swimming lessons for Meera."),
        (["I have to renew my passport", "oh and also email the school", "what's on my list?"],
         "1. renew your passport\n2. email the school"),
        (["todo: walk the dog", "also call me Sam", "what's on my list?"],
         "1. walk the dog\n\nTell me"),
        (["I need to buy milk, call the bank and pick up the kids", "done with the bank call",
          "what's left?"], "1. buy milk\n2. pick up the kids"),
        (["I need to buy milk and call the bank", "I've finished everything"],
         "I've ticked off: buy milk; call the bank."),
        (["todo: walk the dog", "todo: email Sarah", "all done!", "anything left to do?"],
         "Nothing is open"),
        (["todo: walk the dog", "todo: email Sarah", "remove walk the dog from my list"],
         "Removed from your list: walk the dog."),
        (["todo: walk the dog", "take the dog walk off my list", "what else do I have to do?"],
         "Nothing is open"),
    ],
    "questions asked indirectly": [
        (["I work at the library", "do you know where I work?"], "You work at the library."),
        (["I live in Leeds", "do you remember where I live?"], "You live in Leeds."),
        (["I'm 34", "do you know how old I am?"], "You're 34."),
        (["my name is Ada", "do you remember what my name is?"], "Your name is Ada."),
        (["my brother Sam is a chef", "do you remember my brother's name?"],
         "Your brother is called Sam."),
        (["my brother Sam is a chef", "I work at the library", "have I told you about my job?"],
         "Yes: you work at the library."),
        (["my brother Sam is a chef", "I work at the library", "did I mention my brother?"],
         "your brother Sam works as a chef"),
        (["I'm allergic to nuts", "did I tell you about my allergies?"],
         "Yes: you're allergic to nuts."),
        (["I live in Leeds", "have I told you about my job?"], "haven't told me"),
        (["hello", "do you know what time it is?"], "It's "),
        (["hello", "I want to know what time it is"], "It's "),
        (["my flight to Oslo is on 2 May", "can you tell me when my flight is?"], "2 May"),
    ],
    "erasing a detail said in passing": [
        (["my locker code is 4411", "forget my locker code"],
         "Done, I've forgotten: your locker code is 4411. I also found 1 message about your "
         "locker code: “my locker code is 4411” (1 Mar). Erase it too (yes or no)?"),
        (["the spare key is under the blue flowerpot", "forget the spare key"],
         "I found 1 message about the spare key: “the spare key is under the blue flowerpot” "
         "(1 Mar). Erase it (yes or no)?"),
        (["the wifi password at the cabin is pinecone42", "erase the wifi password I gave you"],
         "about the wifi password: “the wifi password at the cabin is pinecone42”"),
        (["my ex is called Dan and he owes me money", "please delete what I said about my ex"],
         "I found 1 message about your ex: “my ex is called Dan and he owes me money”"),
        (["my locker code is 4411", "forget that my code is 4411"],
         "I found 1 message saying your code is 4411: “my locker code is 4411”"),
        (["my bank PIN is 9876", "could you delete my bank PIN?"], "about your bank PIN"),
        (["my locker code is 4411", "remove the locker code I told you earlier"],
         "Erase it too (yes or no)?"),
        (["my locker code is 4411", "erase everything I told you about my locker code"],
         "Erase it too (yes or no)?"),
        (["my locker code is 4411", "stop remembering my locker code"],
         "Erase it too (yes or no)?"),
        (["my locker code is 4411", "I love jazz", "the new locker code is 5522",
          "forget my locker code"],
         "Done, I've forgotten: your locker code is 5522. I also found 2 messages about your "
         "locker code: “my locker code is 4411” (1 Mar), “the new locker code is 5522” (1 Mar). "
         "Erase them too (yes or no)?"),
        (["my locker code is 4411", "forget my locker code", "yes"],
         "Done: I erased 1 message, and your request to erase it."),
        (["my locker code is 4411", "forget my locker code", "yes please"], "Done: I erased"),
        (["my locker code is 4411", "forget my locker code", "sure, go ahead"], "Done: I erased"),
        (["my locker code is 4411", "forget my locker code", "no"], "OK, I erased nothing."),
        (["my locker code is 4411", "forget my locker code", "no thanks"], "I erased nothing."),
        (["my locker code is 4411", "forget my locker code", "keep it"], "I erased nothing."),
        (["my locker code is 4411", "forget my locker code", "what's my locker code?"], "4411"),
        (["I love jazz", "forget my locker code"],
         "I found nothing you told me about your locker code, so I erased nothing."),
        (["I love jazz", "please erase the wifi password I gave you"],
         "I found nothing you told me about the wifi password"),
    ],
    "what no longer holds": [
        (["I work at Google", "I quit my job at Google", "where do I work?"],
         "You no longer work at Google."),
        (["I work at Google", "I quit my job at Google"], "you no longer work at Google"),
        (["I work at Google", "I don't work at Google anymore, I'm at Spotify now",
          "where do I work?"], "You work at Spotify."),
        (["I work at Google", "I got laid off from Google", "I started a new job at Spotify",
          "where do I work?"], "You work at Spotify."),
        (["I live in Berlin", "I don't live in Berlin anymore", "where do I live?"],
         "You no longer live in Berlin."),
        (["I'm vegetarian", "I'm not vegetarian anymore", "can I eat chicken?"],
         "Nothing you told me rules it out (you're no longer vegetarian)."),
        (["I'm vegetarian", "I'm no longer vegetarian", "am I vegetarian?"],
         "no longer vegetarian"),
    ],
    "details of the user's world": [
        (["my blood type is O negative", "what's my blood type?"],
         "you told me: my blood type is O negative"),
        (["my blood type is O negative"], "Noted: your blood type is O negative."),
        (["My car is a blue Honda Civic", "what car do I drive?"],
         "Your car is a blue Honda Civic."),
        (["our wifi password is sunflower77", "what's the wifi password?"], "sunflower77"),
        (["the wifi password at the cabin is pinecone42", "what is the cabin wifi password?"],
         "pinecone42"),
        (["my star sign's Leo", "what is my star sign?"], "you told me: my star sign's Leo"),
        (["my locker code is 4411", "the new locker code is 5522", "what's my locker code?"],
         "you told me: the new locker code is 5522"),
        (["my dentist is Dr Patel", "who's my dentist?"], "Dr Patel"),
        (["which team do I support?"], "haven't told me"),
        (["my email is ana.silva@example.com", "what's my email?"],
         "ana.silva@example.com"),
        (["my car is a blue Honda Civic", "what's my blood type?"], "haven't told me"),
        (["my blood type is O negative", "what's my favourite colour?"], "haven't told me"),
        (["my day is going great"], "Glad to hear it"),  # a mood, no detail
    ],
    "said in passing, asked later": [
        (["my passport is in the desk drawer", "where did I put my passport?"],
         "you told me: my passport is in the desk drawer"),
        (["the spare key is under the blue flowerpot", "where did I leave the spare key?"],
         "you told me: the spare key is under the blue flowerpot"),
        (["the garage code is 4471", "what's the garage code?"],
         "you told me: the garage code is 4471"),
        (["the meeting room is B12", "which room is the meeting in?"],
         "you told me: the meeting room is B12"),
        (["the garage code is 4471", "where did I put my passport?"], "haven't told me"),
    ],
    "work, said as news": [
        (["I started a new job at Spotify last week", "where do I work?"], "Spotify"),
        (["I just got a job at the library", "where do I work?"], "the library"),
        (["I got hired by Acme!", "where do I work?"], "Acme"),
        (["I've joined Google as a designer", "where do I work?"], "Google"),
        (["I just joined Google as a designer", "what's my job?"], "designer"),
        (["I'm now working at City Clinic", "where do I work?"], "City Clinic"),
        (["I got a new job as a chef", "what's my job?"], "chef"),
        (["I work from home as a freelance translator", "what's my job?"],
         "You work as a freelance translator."),
        (["I work part-time as a barista at Joe's", "where do I work?"], "Joe's"),
        (["I work at Boots", "I quit my job at Boots, I'm at Lloyds Pharmacy now",
          "where do I work?"], "You work at Lloyds Pharmacy."),
        (["I work at Tesco", "I left Tesco and I'm with Aldi now", "where do I work?"],
         "You work at Aldi."),
        (["I work at Tesco", "I switched jobs, I now work for Aldi", "where do I work?"], "Aldi"),
        (["I'm at Lloyds Pharmacy now", "where do I work?"], "haven't told me"),
    ],
    "routines": [
        (["I usually go running on Sundays", "what do I do on Sundays?"], "running"),
        (["I go swimming every Tuesday", "what are my routines?"], "swimming every Tuesday"),
        (["every morning I walk the dog", "what do I do every morning?"], "walk the dog"),
        (["on Fridays I play football with friends", "what do I do on Fridays?"], "football"),
        (["I always call my mum on Sunday evenings", "what are my habits?"], "call your mum"),
        (["I usually go running on Sundays", "what do I do on Mondays?"], "haven't told me"),
    ],
    "words around what is said": [
        (["I hate mornings lol", "what don't I like?"], "You don't like mornings."),
        (["I love sushi haha", "what do I like?"], "You like sushi."),
        (["I live in Leeds tbh", "where do I live?"], "You live in Leeds."),
        (["I'm a teacher :)", "what's my job?"], "You work as a teacher."),
    ],
    "trips in other words": [
        (["I'm thinking of going to Portugal in September", "where am I going in September?"],
         "a trip to Portugal"),
        (["we're going to Rome in May", "where am I going in May?"], "a trip to Rome"),
        (["we might go to Crete next summer", "what are my plans?"], "a trip to Crete"),
        (["I'm considering a trip to Iceland in March", "where am I going in March?"],
         "a trip to Iceland"),
        (["I'll be in Paris next week", "where am I going next week?"], "a trip to Paris"),
        (["we are flying to Lima in June", "where am I flying to?"], "a trip to Lima"),
        (["I'm thinking of going to the gym later", "what are my plans?"],
         "haven't told me"),
    ],
    "typed fast on a phone": [
        (["wats my name"], "I don't know your name yet"),
        (["my sisters name is mia", "wats my sisters name"], "Your sister is called Mia."),
        (["i hate mushrooms lol", "do i like mushrooms"], "No, you don't like mushrooms."),
        (["i love sushi", "do i like sushi"], "Yes, you like sushi."),
        (["im vegan btw", "can i eat cheese"], "Better not."),
        (["remind me tmrw at 7pm to call mom"],
         "I'll remind you tomorrow at 19:00 UTC to call mom."),
        (["remind me 2morrow at 8am to take my meds"], "tomorrow at 08:00 UTC"),
        (["wat time is it"], "It's 10:"),
        (["my sisters name is mia shes 16", "how old is mia"], "Your sister Mia is 16."),
        (["my dog is called rex and he loves walks", "what does rex like"], "walks"),
        (["where do i study", "wat do i study"], "haven't told me"),  # a question tells nothing
        (["remind me 2morrow 9am gym"], "I'll remind you tomorrow at 09:00 UTC about gym."),
        (["remind me tomorrow at 7pm dentist"], "tomorrow at 19:00 UTC about dentist."),
        (["remind me in 20 min pasta"], "about pasta."),
        (["remind me in 10 minutes please"], "I'll remind you at 10:4"),
        (["i live in leeds", "where do i live"], "You live in"),
        (["my dogs name is rex", "whats my dogs name"], "Rex"),
        (["i need to finish my essay", "wats on my list"], "finish your essay"),
    ],
    "birthdays and years of birth": [
        (["my birthday is on 3 May", "when's my birthday?"], "Your birthday is 3 May."),
        (["my bday is march 3rd", "when is my birthday?"], "Your birthday is march 3rd."),
        (["I was born in 1990", "how old am I?"], "You were born in 1990."),
        (["I was born in 1962", "what year was I born?"], "You were born in 1962."),
        (["i was born in 2001", "when was I born?"], "You were born in 2001."),
        (["I was born in Leeds", "where was I born?"], "You're from Leeds."),
        (["my son's birthday is June 2nd", "when is my son's birthday?"], "June 2nd"),
        (["my son is called Leo", "my son's birthday is June 2nd", "when is Leo's birthday?"],
         "Your son's birthday is June 2nd."),
        (["my daughter is called Ava", "Ava's birthday is on 5 March",
          "when is Ava's birthday?"], "Your daughter Ava's birthday is 5 March."),
        (["my daughter Ava's birthday is 5 March", "when is my daughter's birthday?"],
         "Your daughter Ava's birthday is 5 March."),
        (["my mum's birthday is on the 14th of October", "when is mum's birthday?"],
         "14th of October"),
    ],
    "two corrections in one message": [
        (["my sister Mia is 11", "actually my sister is Maria and she's 12, not 11",
          "how old is my sister?"], "Your sister Maria is 12."),
        (["my sister Mia is 11", "actually my sister is Maria and she's 12, not 11",
          "what's my sister's name?"], "Your sister is called Maria."),
        (["my son Tom is 6", "sorry, my son is Tim and he's 7", "how old is my son?"],
         "Your son Tim is 7."),
        (["my dog Rex is 3", "oops, my dog is Max, and he's 4 not 3", "how old is my dog?"],
         "Your dog Max is 4."),
        (["I live in Leeds and work at Boots", "no wait, I live in York and I work at Tesco",
          "where do I work?"], "You work at Tesco."),
        (["I live in Leeds and work at Boots", "no wait, I live in York and I work at Tesco",
          "where do I live?"], "You live in York."),
        (["I'm 40 and I live in Leeds", "sorry, I'm 41 and I live in York", "how old am I?"],
         "You're 41."),
    ],
    "said with emoji": [
        (["hiii 👋 I'm Zoe", "what's my name?"], "Your name is Zoe."),
        (["I have a bunny called Mochi 🐰 she's 2", "how old is Mochi?"], "Your bunny Mochi is 2."),
        (["I love pizza 🍕🍕", "do I like pizza? 🤔"], "Yes, you like pizza."),
        (["I hate spiders 🕷️😱", "do I like spiders?"], "No, you don't like spiders."),
        (["going to Tokyo next month ✈️🇯🇵", "where am I going?"], "Tokyo"),
        (["flying to Rome on Friday 🙌", "what are my plans?"], "a trip to Rome"),
        (["my dog 🐶 is called Rex", "what's my dog called?"], "Rex"),
        (["remind me in 1 hour to water the plants 🌱"], "to water the plants."),
        (["I'm vegan 🌱", "can I eat cheese? 🧀"], "Better not."),
        (["😊"], "👍"),
        (["lol ok 😂"], "👍"),
        (["thanks!! 🙏"], "You're welcome!"),
    ],
    "plans said without their subject": [
        (["heading to Lisbon on the 3rd of May", "when am I going to Lisbon?"], "Lisbon"),
        (["We are planning to visit our daughter in Edinburgh in December",
          "what are my plans?"], "visit your daughter in Edinburgh"),
        (["going to bed now"], "Good night"),  # no plan
    ],
    "put right in the same message": [
        (["I work at Google. no wait, at Microsoft", "where do I work?"],
         "You work at Microsoft."),
        (["I live in Leeds, sorry, York", "where do I live?"], "You live in York."),
        (["my flight to Rome is on Friday, sorry, Saturday", "when is my flight?"],
         "Your flight to Rome is on Sat 8 Mar."),
        (["I'm allergic to cats. no, dogs!", "what am I allergic to?"],
         "You're allergic to dogs."),
        (["I like tea. hmm no, I prefer coffee", "do I like tea?"], "haven't told me"),
        (["I like tea. hmm no, I prefer coffee", "do I like coffee?"], "Yes, you like coffee."),
        (["my name is Jon - sorry, John", "what's my name?"], "Your name is John."),
        (["I'm 34, no wait, 35", "how old am I?"], "You're 35."),
        (["I work at Google. no, I love it there"], "Noted: you work at Google."),
        (["I need to email Karen", "scratch that, I need to call Karen", "what's on my list?"],
         "Your list:\n1. call Karen\n\n"),
        (["I need to email Karen", "scratch that, I need to call Karen"],
         "Removed from your list: email Karen.\n\nAdded to your list: call Karen."),
        (["remind me to buy eggs", "sorry, I need to buy milk", "what's on my list?"],
         "Your list:\n1. buy milk\n\n"),
        (["I need to email Karen", "I need to call Bob", "what's on my list?"],
         "1. email Karen\n2. call Bob"),
        (["I need to email Karen", "scratch that"], "never mind"),
    ],
    "long sentences of a retiree": [
        (["My wife Margaret and I have been married for 45 years and we live in a small cottage"
          " in Harrogate.", "Where do I live?"], "You live in Harrogate."),
        (["We live in a flat just outside Bath", "where do we live?"], "Bath"),
        (["We have a grandson called Oliver who is 9.", "Who is Oliver?"],
         "Your grandson is called Oliver."),
        (["We have a grandson called Oliver who is 9 and a granddaughter called Poppy who"
          " turned 6 last week.", "How old is Poppy?"], "Your granddaughter Poppy is 6."),
        (["I have a dog called Rex and a cat named Miso", "what pets do I have?"], "Miso"),
        (["I must tell you that I am allergic to penicillin, which I found out the hard way.",
          "What am I allergic to?"], "You're allergic to penicillin."),
        (["I must tell you that I am allergic to penicillin.", "what is still open?"],
         "Nothing is open"),
        (["I have to say I love a good crossword", "what's on my list?"], "Nothing is open"),
        (["I am not terribly fond of modern music.", "What music do I dislike?"],
         "You don't like modern music."),
        (["I'm not particularly fond of cold weather", "what don't I like?"], "cold weather"),
        (["We are planning to visit our daughter in Edinburgh on the 14th of December.",
          "what are my plans?"], "visit your daughter in Edinburgh"),
    ],
    "said by a learner of English": [
        (["I am having a cat, her name is Luna", "what is the name of my cat?"], "Luna"),
        (["I am having two dogs, Max and Bella", "what pets do I have?"], "Max"),
        (["I have a son and his name is Leo", "who is Leo?"], "Your son is called Leo."),
        (["please remember me to call my mother on Sunday at 11am"], "to call your mother."),
        (["which time is now?"], "It's 10:"),
        (["what time is now"], "It's 10:"),
        (["I am coming from Japan", "where am I from?"], "You're from Japan."),
        (["I am not liking coffee", "do I like coffee?"], "No, you don't like coffee."),
        (["I have a cat called Luna", "what is the name of my cat?"], "Your cat is called Luna."),
    ],
    "a busy parent's calendar": [
        (["my daughter Ava is 5", "Ava's school play is on Thursday at 6pm",
          "when is Ava's school play?"],
         "Your daughter Ava's school play is on Thu 6 Mar at 18:00."),
        (["my daughter Ava is 5", "Ava's school play is on Thursday at 6pm"],
         "Noted: your daughter Ava's school play is on Thu 6 Mar at 18:00."),
        (["my son's football match is next Saturday", "when is the football match?"],
         "Your son's football match is on Sat 8 Mar."),
        (["my son Leo is 8", "Leo's dentist appointment is tomorrow at 4pm",
          "when is Leo's dentist appointment?"], "tomorrow, Sun 2 Mar at 16:00"),
        (["my flight to Rome is on Friday", "remind me in 2 hours to pack", "what's coming up?"],
         "Your flight to Rome is on Fri 7 Mar.\n\nReminders:\n• pack, at 12:3"),
        (["what's coming up?"], "haven't told me about anything coming up"),
        (["remind me tomorrow at 8am to call the school", "anything coming up?"],
         "• call the school, tomorrow at 08:00 UTC"),
        (["I have a dentist appointment on Monday", "what's on my calendar?"], "dentist"),
    ],
    "children said at once, and what they can eat": [
        (["we've got twins, Anya and Dev, they're 7", "how old is Dev?"], "Your twin Dev is 7."),
        (["I have two boys, Sam and Leo, who are both 10", "how old is Sam?"], "10"),
        (["we've got twins, Anya and Dev", "Dev is allergic to eggs", "can Dev eat cake?"],
         "Better not. Your twin Dev is allergic to eggs (cake usually has egg)."),
        (["my son Leo is allergic to peanuts", "can my son have a snickers bar?"], "Better not."),
        (["my son Leo is allergic to peanuts", "can Leo eat pasta?"],
         "Nothing you told me rules it out"),
        (["my son Leo is 8", "can Leo eat pasta?"], "I can't answer that offline"),
        (["my son Leo is allergic to peanuts", "who is allergic to peanuts?"],
         "Your son Leo is allergic to peanuts."),
        (["my son Leo is allergic to peanuts", "I'm allergic to penicillin",
          "who's allergic to what?"],
         "You're allergic to penicillin. Your son Leo is allergic to peanuts."),
        (["my son Leo is allergic to peanuts", "is anyone allergic to eggs?"],
         "You haven't told me of anyone allergic to eggs."),
    ],
    "teaching, and trips said with someone": [
        (["I teach maths at a high school in Porto", "what do I do for work?"],
         "a maths teacher"),
        (["I teach maths at a high school in Porto", "where do I work?"], "a high school"),
        (["I teach piano", "what's my job?"], "a piano teacher"),
        (["I teach at the university", "where do I work?"], "the university"),
        (["my husband João and I are flying to Berlin on 3 December", "when is my flight?"],
         "3 Dec"),
        (["my husband João and I are flying to Berlin on 3 December", "who is João?"],
         "husband"),
        (["Sam and I are going to Rome in May", "where am I going in May?"], "Rome"),
        (["me and my sister are heading to Madrid next week", "where am I going?"], "Madrid"),
    ],
    "work and to-dos said in passing": [
        (["name's Oskar, I'm a software developer from Gdansk", "where am I from?"],
         "You're from Gdansk."),
        (["I'm a nurse from Porto", "what's my job?"], "You work as a nurse."),
        (["I work remotely for a startup called Nimbus", "who do I work for?"], "Nimbus"),
        (["I should pay the electricity bill by the 30th", "what's on my list?"],
         "pay the electricity bill by the 30th"),
        (["I should pay the electricity bill", "electricity bill paid"], "ticked off"),
        (["I should probably sleep more", "what's on my list?"], "Nothing is open"),
        (["I have to call the landlord about the boiler", "done with the landlord call"],
         "ticked off: call the landlord about the boiler"),
    ],
    "goals": [
        (["I'd like to learn Spanish", "what are my goals?"], "Your goal is to learn Spanish."),
        (["I want to run a marathon this year", "what are my goals?"], "run a marathon"),
        (["I'm hoping to become a pilot one day", "what are my goals?"], "become a pilot"),
        (["my dream is to visit Japan", "what are my goals?"], "visit Japan"),
        (["I'd like to set a reminder", "what are my goals?"], "haven't told me"),
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("lines", "expected"),
    [case for family in CASES.values() for case in family],
    ids=[f"{family}: {case[0][0]}" for family, cases in CASES.items() for case in cases],
)
async def test_an_everyday_phrasing_is_understood(db, lines, expected):
    said = await conversation(Chat(db), lines)
    assert expected in said


async def test_a_question_of_help_is_no_question_of_diet(db):
    """"can I have your help?" is not answered with the user's diet; "can I eat pasta?" is."""
    chat = Chat(db)
    await conversation(chat, ["I'm vegan"])
    assert "rules it out" not in ((await chat.say("can I have your help?")).text or "")
    assert "rules it out" in ((await chat.say("can I eat pasta?")).text or "")


@pytest.mark.parametrize(
    ("lines", "question", "now", "before"),
    [
        (["I work as a nurse at St Mary's hospital", "actually I work at City Clinic now"],
         "where do I work?", "City Clinic", "St Mary"),
        (["I work as a developer for Acme", "I work for Globex these days"],
         "where do I work?", "Globex", "Acme"),
        (["my flight to Tokyo is on 14 March", "my flight to Tokyo is now on 15 March"],
         "when is my flight?", "15 March", "14 March"),
        (["my dentist appointment is on Tuesday", "sorry, my dentist appointment is on Thursday"],
         "when is my dentist appointment?", "on Thu 6 Mar", "Tue 4 Mar"),
        (["I like coffee", "no, I meant I like tea"], "what do I like?", "tea", "coffee"),
        (["I'm going to Rome in May", "sorry, I meant I'm going to Milan in May"],
         "where am I going in May?", "Milan", "Rome"),
        (["my sister is Hanna", "sorry, her name is Anna"], "who is my sister?", "Anna", "Hanna"),
        (["we have a dog called Rex", "I meant Max, not Rex"], "what pets do I have?", "Max",
         "Rex"),
        (["my sister is Hanna", "I live in Leeds", "actually my sister's name is Anna"],
         "who is my sister?", "Anna", "Hanna"),
        (["I have a cat called Misty", "I love jazz", "sorry, my cat is called Mist"],
         "what's my cat called?", "Mist.", "Misty"),
    ],
)  # fmt: skip
async def test_a_changed_fact_is_answered_without_the_old_value(db, lines, question, now, before):
    """A new workplace or a rescheduled event replaces what was said before: the answer has
    the new value and not the old one (a job said with its workplace is two facts). A like, a
    trip or a name of someone's put right in the next message replaces the one it corrects."""
    said = await conversation(Chat(db), [*lines, question])
    assert now in said
    assert before not in said


_MINUTE, _DAY = timedelta(minutes=1), timedelta(days=1)


@pytest.mark.parametrize(
    ("lines", "question", "later", "answer"),
    [
        # T0 is Saturday 1 March 2025, 10:32 UTC; the question is asked ``later``.
        (["I have a test tomorrow"], "when is my test?", _MINUTE,
         "Your test is tomorrow, Sun 2 Mar."),
        (["I have a test tomorrow"], "when is my test?", _DAY, "Your test is today."),
        (["I have a test tomorrow"], "when is my test?", 7 * _DAY, "Your test was on Sun 2 Mar."),
        (["my dentist appointment is next Tuesday"], "when is my dentist appointment?", 2 * _DAY,
         "Your dentist appointment is tomorrow, Tue 4 Mar."),
        (["my dentist appointment is next Tuesday"], "when is my dentist appointment?", 9 * _DAY,
         "Your dentist appointment was on Tue 4 Mar."),
        (["we're flying to Rome in two weeks"], "when is my flight?", 3 * _DAY,
         "You're planning a trip to Rome on Sat 15 Mar."),
        (["I'm flying to Rome in two weeks"], "where am I going?", 3 * _DAY,
         "You're planning a trip to Rome on Sat 15 Mar."),
        (["the party is this Saturday"], "when is my party?", _MINUTE, "Your party is today."),
        (["I have a job interview tomorrow at 10am"], "when is my interview?", _MINUTE,
         "Your job interview is tomorrow, Sun 2 Mar at 10:00."),
        (["my flight leaves at 7am tomorrow"], "when is my flight?", _DAY,
         "Your flight leaves today at 07:00."),
        (["my exam is in 3 days"], "when is my exam?", _MINUTE, "Your exam is on Tue 4 Mar."),
        (["I have an exam the day after tomorrow"], "when is my exam?", _DAY,
         "Your exam is tomorrow, Mon 3 Mar."),
        (["my sister's wedding is in a fortnight"], "when is my sister's wedding?", _MINUTE,
         "Your sister's wedding is on Sat 15 Mar."),
        (["I have a dinner tonight"], "when is my dinner?", 2 * timedelta(hours=1),
         "Your dinner is tonight."),
        (["I'm going to Lisbon next month"], "where am I going in April?", 20 * _DAY,
         "You're planning a trip to Lisbon in April."),
        (["I'm planning to repaint the kitchen next weekend"], "what are my plans?", _MINUTE,
         "You're planning to repaint the kitchen the weekend of Sat 8 Mar."),
        (["I'm going hiking on Saturday"], "what am I doing this weekend?", 2 * _DAY,
         "You're planning to go hiking on Sat 8 Mar."),
        (["I have a dentist appointment tomorrow"], "what are my plans for tomorrow?", _MINUTE,
         "Your dentist appointment is tomorrow, Sun 2 Mar."),
        (["I have a dentist appointment tomorrow"], "what are my plans for Monday?", _MINUTE,
         "haven't told me about plans for Monday"),
        (["I have a meeting with Tom next week"], "what are my plans for next week?", _MINUTE,
         "Your meeting with Tom is the week of Mon 3 Mar."),
        (["my flight to Berlin is on 14 March"], "when is my flight?", 30 * _DAY,
         "Your flight to Berlin is on 14 March."),
        (["my dentist appointment is on Monday at 3pm", "oops, Tuesday, not Monday"],
         "when is my dentist appointment?", _MINUTE,
         "Your dentist appointment is on Tue 4 Mar at 15:00."),
        # 16:02 UTC on Saturday is 01:02 on Sunday in Tokyo: "tomorrow" is Monday there.
        (["my time zone is Tokyo", "I have a test tomorrow"], "when is my test?",
         timedelta(hours=5, minutes=30), "Your test is tomorrow, Mon 3 Mar."),
    ],
)  # fmt: skip
async def test_a_date_said_relatively_is_kept_as_the_date_it_names(
    db, lines, question, later, answer
):
    """ "I have a test tomorrow" is kept with the day it names, read at the message's time in
    the user's zone, and asked about later it is said from that day: "today", "tomorrow, Sun
    2 Mar", "was on Sun 2 Mar"; the time of day is kept; an absolute date stays as said."""
    chat = Chat(db)
    for n, line in enumerate(lines[:-1]):
        await chat.say(line, at=T0 + timedelta(minutes=n))
    zone_delay = later if "time zone" in lines[0] else timedelta(0)
    await chat.say(lines[-1], at=T0 + zone_delay)
    said = (await chat.say(question, at=chat.now + (_MINUTE if zone_delay else later))).text
    assert answer in (said or "")


@pytest.mark.parametrize(
    "text",
    [
        "I'm a bit tired",
        "I'm a fan",
        "I'm into it",
        "we have a problem",
        "I'm going to bed",
        "the meeting is postponed",
        "needed more time",
    ],
)
async def test_look_alikes_state_no_fact(db, text):
    """What looks like a phrasing family but says nothing of the user is not noted."""
    reply = await Chat(db).say(text)
    assert reply.intent != "state_fact"


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("morning!", "Hi!"),
        ("hey there", "Hi!"),
        ("good evening", "Hi!"),
        ("what's up?", "I'm doing well"),
        ("thank you so much", "You're welcome"),
        ("cheers mate", "You're welcome"),
        ("ta", "You're welcome"),
        ("great, thanks!", "You're welcome"),
        ("ok", "👍"),
        ("cool!", "👍"),
        ("got it", "👍"),
        ("see you tomorrow", "Bye"),
        ("ttyl", "Bye"),
        ("gotta go", "Bye"),
        ("talk to you later!", "Bye"),
        ("you're great", "Thank you"),
        ("nice one, you're the best", "Thank you"),
        ("sorry", "No problem"),
        ("my bad, sorry about that", "No problem"),
        ("brb", "Sure"),
        ("hold on a sec", "Sure"),
        ("ok bye", "Bye"),
        ("alright, see you later", "Bye"),
        ("night!", "Bye"),
        ("take care", "Bye"),
        ("have a good evening", "Bye"),
        ("you're a lifesaver", "Thank you"),
        ("you rock", "Thank you"),
        ("that's really helpful", "Thank you"),
        ("appreciate it", "You're welcome"),
        ("good to know", "👍"),
        ("fair enough", "👍"),
        ("haha ok", "👍"),
        ("oh I see", "👍"),
        ("makes sense", "👍"),
        ("going to bed now", "Good night"),
        ("off to sleep, night", "Good night"),
        ("my day is going great", "Glad to hear it"),
        ("I'm so happy today!", "Glad to hear it"),
        ("feeling great", "Glad to hear it"),
        ("I'm really tired", "Sorry to hear that"),
        ("my back is killing me", "Sorry to hear that"),
        ("today was awful", "Sorry to hear that"),
        ("I'm feeling a bit down", "Sorry to hear that"),
    ],
)
async def test_greetings_thanks_and_nods_get_a_short_reply(db, text, start):
    reply = await Chat(db).say(text)
    assert reply.intent == "smalltalk"
    assert (reply.text or "").startswith(start)
    assert len(reply.text or "") <= 100


@pytest.mark.parametrize(
    "text", ["I'm good at chess", "I'm happy with the plan for Friday", "I feel like pizza"]
)
async def test_what_only_looks_like_a_mood_gets_no_mood_reply(db, text):
    """ "I'm good at chess" says what one does well, not how one feels."""
    said = (await Chat(db).say(text)).text or ""
    assert not said.startswith(("Glad to hear", "Sorry to hear"))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("thank you very much, you have been most helpful", "You're welcome, Harold!"),
        ("good morning", "Hi Harold! Good to see you again. What can I do for you?"),
        ("goodbye for now", "Bye, Harold! I'll remember all this next time."),
    ],
)
async def test_small_talk_says_the_first_name_only(db, text, said):
    chat = Chat(db)
    await chat.say("Good morning, my name is Harold Whitfield and I retired from the railway.")
    assert (await chat.say(text)).text == said


async def test_a_returning_user_is_greeted_without_the_help_pointer(db):
    chat = Chat(db)
    await chat.say("my name is Ada")
    said = (await chat.say("hello")).text
    assert said == "Hi Ada! Good to see you again. What can I do for you?"


def test_the_console_through_a_pipe_understands_everyday_messages(launch):
    """``run_bot.py --console`` fed through a pipe, then run again on the same files: a detail
    is noted and quoted with its day, the zone is kept, a reminder in natural time is listed on
    the user's clock, a cancelled reminder is gone after the restart."""
    out = run_console(
        launch,
        [
            "hi",
            "the wifi password at the cabin is pinecone42",
            "I've got a cat named Luna, she's 4",
            "/timezone Asia/Tokyo",
            "remind me tomorrow at 8am to take my vitamins",
            "remind me in 3 hours to check the oven",
            "cancel the oven reminder",
            "thanks!",
        ],
    )
    said = replies(out)  # said[0] is the console's greeting
    assert said[2] == "Noted: your wifi password at the cabin is pinecone42."
    assert said[3] == "Noted: your cat Luna is 4."  # named once, in the fact that names her
    assert "Asia/Tokyo" in said[4]
    assert said[5] == "I'll remind you tomorrow at 08:00 Asia/Tokyo to take your vitamins."
    assert said[7] == "Cancelled the reminder: check the oven."
    assert said[8] == "You're welcome!"
    out = run_console(
        launch,
        ["what's the cabin wifi password?", "how old is Luna?", "what reminders do I have?"],
    )
    wifi, luna, reminders = replies(out)[1:4]
    assert wifi.endswith("you told me: the wifi password at the cabin is pinecone42")
    assert luna == "Your cat Luna is 4."
    assert "take your vitamins, " in reminders
    assert "at 08:00 Asia/Tokyo" in reminders
    assert "oven" not in reminders


def _day_in(zone: str, days: int) -> str:
    day = datetime.now(ZoneInfo(zone)).date() + timedelta(days=days)
    return f"{day:%a} {day.day} {day:%b}"


def test_the_console_keeps_dates_as_dates_and_erases_one_detail_across_a_restart(launch, tmp_path):
    """``run_bot.py --console`` through a pipe, then again on the same files: "tomorrow" is
    kept as the day it names on the user's clock and said from today after the restart;
    "forget my locker code", then "yes", erases the messages that said it from every file,
    and the rest stays."""
    tomorrow = {_day_in("Asia/Tokyo", 1)}
    out = run_console(
        launch,
        [
            "/timezone Asia/Tokyo",
            "I have a test tomorrow",
            "my locker code is Zebralock4411",
            "I love jazz",
            "the new gym locker code is Zebralock5522",
        ],
    )
    noted = replies(out)[2]
    tomorrow.add(_day_in("Asia/Tokyo", 1))  # midnight in Tokyo may have passed meanwhile
    assert noted in {f"Noted: your test is tomorrow, {day}." for day in tomorrow}
    out = run_console(
        launch,
        ["when is my test?", "forget my locker code", "yes", "what's my locker code?",
         "do I like jazz?"],
    )  # fmt: skip
    test, asked, done, code, jazz = replies(out)[1:6]
    assert test.startswith("Your test is ")
    assert asked.startswith("Done, I've forgotten: your gym locker code is Zebralock5522; your ")
    assert "I also found 2 messages about your locker code: “my locker code is" in asked
    assert asked.endswith("Erase them too (yes or no)?")
    assert done == "Done: I erased 2 messages, and your request to erase them."
    assert "Zebralock" not in code
    assert jazz == "Yes, you like jazz."
    # What the bot keeps (the database, its log, the checkpoints), not the terminal's output.
    kept = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".log"]
    assert kept
    assert [p.name for p in kept if b"Zebralock" in p.read_bytes()] == []
