"""The quoting of commands to paste matches the standard library's,
character for character, without importing it (`core.shellwords`)."""

from __future__ import annotations

import random
import shlex
import subprocess

import pytest

from mecha.core.shellwords import Unpasteable, command, quote

ALPHABET = "aZ09_@%+=:,./-'\" $`\\!*?[]{}()<>|&;#~^é字\t"


def test_every_word_is_quoted_as_shlex_quotes_it() -> None:
    # Pins: a hand-written quoting that writes bare a word shlex would
    # quote (a shell metacharacter, a letter outside ASCII, the empty word).
    rng = random.Random(7)
    words = ["", "plain", "a b", "it's", "é", "--learning-dir", "Bash(bd)"]
    words += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    for word in words:
        if "\t" in word:
            continue  # a control character is refused, below
        assert quote(word) == shlex.quote(word), word


def test_a_quoted_command_hands_the_shell_back_exactly_its_words() -> None:
    words = ["printf", "%s\\n", "x'\"$(touch P)`id`;|&", "", "a  b", "é字"]
    out = subprocess.run(["sh", "-c", command(*words)], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:-1] == words[2:]


@pytest.mark.parametrize("word", ["a\x00b", "tab\there", "rtl\u202eword", "zero\u200bwidth"])
def test_a_word_that_cannot_be_pasted_faithfully_is_refused(word: str) -> None:
    with pytest.raises(Unpasteable):
        quote(word)
