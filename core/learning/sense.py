"""Whether a proposed rule makes sense: the learn gate's tests of content.

The gate's first tests are of form — a rule is an instruction, cites a
reflection the pass showed, rewrites only a rule that exists. Driven with
hand-made learner answers, those let through everything a careless learner
writes in good form: "Always be careful and thorough." citing a lesson
about running tests; a sound rule citing the wrong lesson; a live rule
reworded without saying it replaces it (so both copies land), or re-cased
and cited (the same); a rule carrying an email address. The tests here
catch those, each by a name a person can check by reading the rule and
what it cites:

- **platitude** (`platitude_reason`): once words that could go in any rule
  ("always", "careful", "thorough", "make sure", "quality") are set aside,
  nothing is left — no action, tool, file or situation to act on.
- **unrelated citation** (`subject_refusal`): the rule does not share a
  *subject* with the lessons it cites (the lesson and the person's words)
  — the object acted on, the tool, the file, the situation. A shared word
  counts as a subject when it is rare in the store's lessons (`Rarity`: in
  at most `COMMON_SHARE` of them); words common to many lessons ("run",
  "change", "file" in a coding store) are a subject only two at a time.
  One shared word used to be enough, and a rule about GPU kernels citing a
  lesson about virtual environments passed on "own", a rule about
  benchmark results citing a lesson about tests on "before". A merged rule
  may still generalise ("destructive commands" over "git reset --hard"):
  the test catches a rule about something else, it does not grade wording.
- **the same rule in other words** (`near_identical`): two rules with the
  same topic words, or whose topic words, crudely stemmed, overlap by
  `NEAR_IDENTICAL` or more with at least `NEAR_IDENTICAL_SHARED` shared —
  unless each holds a word the other lacks: "Ask before acting on config
  files." and "… on migration files." direct the same action at two
  objects, and are two rules (they were once refused as one, so sixteen
  distinct rules slipped under the cap as one). The gate treats a new rule
  near-identical to a live one as a rewrite of it (as if the learner had
  named it in `replaces`), and refuses one near-identical to a live rule
  the answer also keeps, to a retired rule, or to another rule of the same
  answer.

Words, not a model: the gate runs on every answer, a person must be able to
see why a rule was refused, and a model judging the learner's sense would
be a second learner to judge. The stemming is deliberately crude (a few
suffixes off, the first six letters kept): it only has to tell "tests",
"testing" and "tested" apart from "deleting".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Words that carry no content for these tests: articles, pronouns,
#: auxiliaries, conjunctions, negations (a rule and its opposite are about
#: the same thing, which is what the tests ask).
_STOP = frozenset(
    """a an the this that these those it its it's is are was were be been being am do does did done
    to of in on at by for from with without into onto as and or but nor if then than so such
    not no never none nothing don't doesn't didn't isn't aren't can't cannot won't shouldn't
    i you your yours we our us they them their he she his her him me my mine who whom which what
    when where why how while until unless because about any all each every some other another
    can could should would will shall may might must also just only even still yet already
    there here very really more most less least much many few own owns owned owning same
    before after again once first then over under up down out off through across around between
    during against within upon""".split()
)

#: Words any rule could hold: what is left once they are set aside is what
#: the rule is about. A rule with nothing left is a platitude.
_GENERIC = frozenset(
    """always never ever be make sure ensure careful carefully care thorough thoroughly diligent
    diligently attention attentive detail details detailed good better best great quality high
    work works working job jobs task tasks thing things everything anything something well
    properly proper correct correctly accurate accurately helpful mindful cautious cautiously
    professional professionally practice practices effort efforts try aim strive remember
    consider appropriate appropriately right important importantly thoughtful thoughtfully
    clear clearly precise precisely quick quickly fast efficient efficiently effective
    effectively user users person assistant time times way ways approach possible necessary
    need needed needs should want wants wanted like likes""".split()
)

_WORD = re.compile(r"[a-z0-9][a-z0-9'_-]*")

#: Topic-word overlap (Jaccard) from which two rules say the same thing in
#: other words. On the gate's hand-made answers (tests/core/learning/test_sense.py)
#: a live rule reworded ("Run the tests before saying a change is done." →
#: "Run the test suite before saying a change is finished.") overlaps 0.62.
NEAR_IDENTICAL = 0.6
#: … and how many topic words they must share at least (see `near_identical`).
NEAR_IDENTICAL_SHARED = 4


def stem(word: str) -> str:
    """A crude stem: a plural, `-ing`, `-ed` or `-ly` off (a doubled final
    consonant undone), then the first six letters."""
    w = word.strip("'-_").lower()
    for suffix in ("ing", "ed", "ly", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if suffix in ("ing", "ed") and len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "ls":
                w = w[:-1]
            break
    return w[:6]


def _topic_words(text: str) -> set[str]:
    """The stemmed words of `text` that say what it is about: neither stop
    words nor words any rule could hold."""
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and w not in _GENERIC and len(w) > 1}


def platitude_reason(text: str) -> str | None:
    """Why `text` is a platitude, or `None`: nothing is left of it once the
    words any rule could hold are set aside."""
    if _topic_words(text):
        return None
    return "it is a platitude: it names no action, tool, file or situation to act on"


def shares_content(rule: str, lessons: Iterable[str]) -> bool:
    """Whether `rule` shares a content word with any of `lessons`, the
    generic ones set aside ("careful" in both is no shared subject)."""
    words = _topic_words(rule)
    return any(words & _topic_words(lesson) for lesson in lessons)


#: A word in more than this share of the store's lessons is common there:
#: alone it is no shared subject. Read by `Rarity.common`.
COMMON_SHARE = 0.2
#: Below this many lessons, no word is called common by its count: too few
#: to tell a subject from a habit of speech (the stop words still apply).
RARITY_MIN_LESSONS = 10


class Rarity:
    """How rare each topic word is in a body of lessons (the store's): how
    many of them hold it."""

    def __init__(self, lessons: Iterable[str]):
        self.lessons = 0
        self.holding: dict[str, int] = {}
        for text in lessons:
            self.lessons += 1
            for w in _topic_words(text):
                self.holding[w] = self.holding.get(w, 0) + 1

    def common(self, word: str) -> bool:
        """Whether the stemmed `word` is in more than `COMMON_SHARE` of the
        lessons (never, below `RARITY_MIN_LESSONS` of them)."""
        if self.lessons < RARITY_MIN_LESSONS:
            return False
        return self.holding.get(word, 0) > COMMON_SHARE * self.lessons

    def describe(self, word: str) -> str:
        return f"“{word}”, in {self.holding.get(word, 0)} of {self.lessons} lessons"


def shared_subject(rule: str, lessons: Iterable[str], rarity: Rarity | None = None) -> tuple[set[str], set[str]]:
    """The topic words `rule` shares with `lessons`, split into the rare
    ones (a subject) and the common ones (`Rarity.common`)."""
    words = _topic_words(rule)
    shared: set[str] = set()
    for lesson in lessons:
        shared |= words & _topic_words(lesson)
    common = {w for w in shared if rarity is not None and rarity.common(w)}
    return shared - common, common


def subject_refusal(rule: str, lessons: Iterable[str], rarity: Rarity | None = None) -> str | None:
    """Why `rule` is not about the lessons it cites, or `None`: it shares
    with them a rare word, or two common ones; else it names what little
    it shares. The words' rarity is `rarity`'s (the store's lessons)."""
    rare, common = shared_subject(rule, lessons, rarity)
    if rare or len(common) >= 2:
        return None
    if common and rarity is not None:
        only = ", ".join(rarity.describe(w) for w in sorted(common))
        return f"it shares only a common word with the lessons it cites ({only}), not their subject"
    return "it shares no subject with the lessons it cites"


def overlap(a: str, b: str) -> float:
    """The Jaccard overlap of two texts' topic words (0 when either has none)."""
    wa, wb = _topic_words(a), _topic_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def near_identical(a: str, b: str) -> bool:
    """Whether two rules say the same thing in other words: the same topic
    words (the generic ones and the stop words set aside: "Ask first." and
    "Always ask first."), or at least `NEAR_IDENTICAL_SHARED` of them shared
    and an overlap of `NEAR_IDENTICAL` or more, one holding no topic word
    the other lacks. Each holding a word of its own is each directing
    something the other does not — the same action on another object
    ("… config files." and "… migration files."), another action on the
    same one — and so two rules. The floor on shared words keeps two short
    rules one word apart ("Ask before deleting any file." and "Ask before
    deleting a branch.") two rules."""
    wa, wb = _topic_words(a), _topic_words(b)
    if not wa or not wb:
        return False
    if wa == wb:
        return True
    if wa - wb and wb - wa:
        return False
    shared = len(wa & wb)
    return shared >= NEAR_IDENTICAL_SHARED and shared / len(wa | wb) >= NEAR_IDENTICAL
