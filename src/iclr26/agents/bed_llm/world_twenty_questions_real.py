"""Real entities and yes/no questions with hand-written ground truth, for 20 Questions with a real LLM.

40 common animals and 22 questions about them. The answers were written by us from common knowledge; where a real
answer is debatable (does a shark lay eggs? is an octopus's arm a leg?) we chose the common textbook answer and list
the pair in `DEBATABLE`. `truth()` is the [animal, question] 0/1 table.
"""

from __future__ import annotations

import numpy as np

ANIMALS = (
    "dog", "cat", "horse", "cow", "pig", "sheep", "chicken", "duck", "eagle", "owl",
    "penguin", "ostrich", "shark", "salmon", "goldfish", "dolphin", "whale", "octopus", "frog", "snake",
    "crocodile", "turtle", "lizard", "bee", "ant", "butterfly", "spider", "elephant", "giraffe", "lion",
    "tiger", "bear", "monkey", "mouse", "rabbit", "bat", "kangaroo", "camel", "zebra", "wolf",
)  # fmt: skip

_MAMMALS = "dog cat horse cow pig sheep dolphin whale elephant giraffe lion tiger bear monkey mouse rabbit bat kangaroo camel zebra wolf"  # noqa: E501
_BIRDS = "chicken duck eagle owl penguin ostrich"

# question -> the animals whose answer is "yes"
YES: dict[str, str] = {
    "Is it a mammal?": _MAMMALS,
    "Is it a bird?": _BIRDS,
    "Is it a fish?": "shark salmon goldfish",
    "Is it an insect?": "bee ant butterfly",
    "Is it a reptile?": "snake crocodile turtle lizard",
    "Can it fly?": "duck eagle owl bee butterfly bat",
    "Does it live in the ocean?": "shark salmon dolphin whale octopus penguin",
    "Does it have fur?": "dog cat horse cow sheep giraffe lion tiger bear monkey mouse rabbit bat kangaroo camel zebra wolf",  # noqa: E501
    "Does it have feathers?": _BIRDS,
    "Does it have more than four legs?": "bee ant butterfly spider octopus",
    "Is it a common pet?": "dog cat goldfish rabbit mouse turtle",
    "Is it a farm animal?": "horse cow pig sheep chicken duck",
    "Is it bigger than a human?": "horse cow shark dolphin whale crocodile elephant giraffe lion tiger bear camel zebra ostrich",  # noqa: E501
    "Does it hunt other animals?": "cat eagle owl penguin shark dolphin octopus frog snake crocodile spider lion tiger wolf bear",  # noqa: E501
    "Does it lay eggs?": "chicken duck eagle owl penguin ostrich shark salmon goldfish octopus frog snake crocodile turtle lizard bee ant butterfly spider",  # noqa: E501
    "Does it live in Africa?": "ostrich crocodile elephant giraffe lion zebra monkey camel",
    "Does it have stripes?": "tiger zebra bee",
    "Is it dangerous to humans?": "shark crocodile snake lion tiger bear wolf",
    "Does it have wings?": "chicken duck eagle owl penguin ostrich bee butterfly bat",
    "Does it hop or jump to move?": "kangaroo rabbit frog",
    "Is it small enough to hold in your hand?": "goldfish bee ant butterfly spider mouse frog lizard",
    "Is it cold-blooded?": "shark salmon goldfish octopus frog snake crocodile turtle lizard bee ant butterfly spider",
}
QUESTIONS = tuple(YES)
DEBATABLE = (
    ("shark", "Does it lay eggs?"),
    ("octopus", "Does it have more than four legs?"),
    ("penguin", "Does it live in the ocean?"),
    ("ostrich", "Is it bigger than a human?"),
    ("pig", "Does it have fur?"),
    ("dog", "Does it hunt other animals?"),
)


def about(animal: str, question: str) -> str:
    """The question asked about a named animal: "Can it fly?" -> "Can an eagle fly?"."""
    article = "an" if animal[0] in "aeiou" else "a"
    return question.replace(" it ", f" {article} {animal} ", 1)


def truth() -> np.ndarray:
    """[len(ANIMALS), len(QUESTIONS)] 0/1 ground truth."""
    for q, names in YES.items():
        unknown = set(names.split()) - set(ANIMALS)
        if unknown:
            raise ValueError(f"question {q!r} names unknown animals {sorted(unknown)}")
    return np.array([[a in YES[q].split() for q in QUESTIONS] for a in ANIMALS], dtype=int)
