"""Interventions skipped without a model call, by a rule over the words.

Over 60 real interventions answered by a capable model, 36 calls were
skips, and most of those were a person saying "continue", "yes", "go on" or
"create the beads": agreeing to what the assistant had just offered. The
reflector was paid to read each and say there was nothing to learn. A bare
go-ahead is the one kind of skip a rule can make as well as a model: its
words carry no objection, so no lesson can be drawn from them whatever the
assistant did.

The rule is deliberately narrow — the reflector still decides everything
else. It reads only the person's words, never the assistant's, and takes a
message as a go-ahead only when every word of it is agreement (`yes`,
`ok`, `thanks`, `please`), a bare instruction to go on (`continue`, `go
ahead`, `proceed`, `do it`), carrying out what was proposed (`create the
beads`, `commit it`, `push`): a verb of acceptance with at most a short
object — or only the label of an option the assistant offered (`2`, `b.`). A word that pushes back — `no`, `not`, `instead`, `why`, `but`,
`only`, `again`, `stop`, a question mark — sends it to the reflector, and
so does anything longer than a few words. The same holds in the other
languages people write in ("oui", "weiter", "sí", "是的", "继续", "好的"):
a message is a go-ahead there only when every word (for Chinese, Japanese
and Korean, every phrase of the run) is one of a short list of agreement,
and a word that pushes back ("mais", "aber", "pero", "不") sends it on. A skip is recorded with its
reason like any answer (the reflect pass's attempts ledger), so it is
visible, and counted apart from the model's own skips.
"""

from __future__ import annotations

import re

from mecha.core.sessions.mining import Intervention, Trigger

#: Words that only agree, thank or soften; a message of nothing else is a
#: go-ahead ("ok thanks", "yes please", "perfect").
AGREEMENT = frozenset({
    "yes", "y", "yep", "yeah", "yup", "ok", "okay", "k", "kk", "sure", "alright", "right", "fine", "good", "great",
    "perfect", "cool", "nice", "thanks", "thank", "you", "thx", "ty", "please", "pls", "now", "then", "so", "lets",
    "let's", "sounds", "looks", "lgtm", "excellent", "awesome", "agreed", "correct", "exactly", "go", "ahead",
    "on", "proceed", "continue", "carry", "keep", "going", "resume", "next", "and", "do", "it", "that", "approved", "approve", "confirmed", "confirm", "ship", "with", "for", "just",
})
#: The same in the other languages people write to their agents in, word
#: by word (a message in them is a go-ahead only when every word is one of
#: these or of `AGREEMENT`): French, Spanish, Portuguese, Italian, German,
#: Dutch, Russian. Only words that agree, thank or say "go on": a word that
#: could carry an objection ("bon, mais…": `mais`) is not here, so it sends
#: the message to the reflector.
AGREEMENT_ELSEWHERE = frozenset({
    "oui", "ouais", "d'accord", "daccord", "continuer", "continuez", "continue", "vas", "allez", "allons", "merci",
    "parfait", "bien", "très", "tres", "super", "bon", "c'est", "vas-y",
    "sí", "si", "vale", "dale", "adelante", "sigue", "continúa", "continua", "gracias", "perfecto", "claro", "hazlo",
    "sim", "pode", "continuar", "obrigado", "obrigada", "perfeito", "vai", "isso",
    "sì", "va", "bene", "avanti", "procedi", "prosegui", "grazie", "perfetto", "certo",
    "ja", "jawohl", "weiter", "mach", "bitte", "danke", "gerne", "genau", "gut", "passt", "klar", "los", "prima",
    "doe", "dank", "goed", "verder", "ga", "door",
    "да", "давай", "продолжай", "продолжайте", "хорошо", "ок", "спасибо", "отлично", "согласен", "верно",
})
#: Whole phrases in scripts written without spaces (Chinese, Japanese,
#: Korean): a run of these and nothing else is a go-ahead ("好的", "继续",
#: "好的继续"). Any other character in the run — 不, 别, 为什么, 但 — and
#: the reflector reads it.
AGREEMENT_PHRASES = frozenset({
    "是", "是的", "对", "对的", "对啊", "好", "好的", "好吧", "好啊", "行", "可以", "可以的", "继续", "继续吧", "符合",
    "没问题", "嗯", "嗯嗯", "谢谢", "同意", "确认", "开始", "开始吧", "就这样", "繼續", "對", "沒問題", "謝謝",
    "はい", "お願いします", "おねがいします", "続けて", "続けてください", "どうぞ", "いいよ", "いいです", "オッケー",
    "ありがとう", "了解", "네", "예", "계속", "계속해", "계속해줘", "좋아", "좋아요", "감사합니다", "진행해",
})
#: Words that push back in those languages: any of them and the reflector
#: decides (English ones are in `PUSHBACK`).
PUSHBACK_ELSEWHERE = frozenset({
    "non", "nein", "nicht", "kein", "keine", "pas", "mais", "aber", "pero", "sino", "warum", "pourquoi", "porque",
    "perché", "sans", "ohne", "sin", "senza", "nur", "seulement", "solo", "encore", "noch", "wieder", "autre",
    "andere", "anders", "otro", "otra", "falsch", "faux", "attends", "warte", "espera", "arrête", "stopp", "não",
    "nao", "niet", "maar", "не", "нет", "но", "почему",
})
#: Verbs that carry out what the assistant proposed ("create the beads",
#: "commit it"). Only with a short object (`ACCEPT_OBJECT_WORDS`), never with
#: a word of `PUSHBACK`.
#: Verbs that also name a new request or an omission ("run the tests",
#: "add tests", "use the other file") are left out: those may well be
#: corrections.
ACCEPT_VERBS = frozenset({
    "create", "implement", "apply", "commit", "push", "merge", "file", "open", "do", "go", "start", "deploy",
    "release", "publish",
})
#: The most words an object after an acceptance verb may have: "the beads",
#: "the two issues", "both fixes".
ACCEPT_OBJECT_WORDS = 3
#: Words that push back: any of them and the reflector decides.
PUSHBACK = frozenset({
    "no", "not", "don't", "dont", "never", "instead", "why", "but", "wrong", "again", "stop", "undo", "revert",
    "only", "actually", "should", "shouldn't", "wait", "hold", "rather", "without", "except", "first", "before",
    "careful", "didn't", "isn't", "wasn't", "can't", "cannot", "won't", "nope", "nah", "fix", "broke", "broken",
    "still", "forgot", "missed", "also", "too", "less", "more", "shorter", "longer", "smaller", "bigger",
})
#: Longer than this, a message is never a bare go-ahead.
MAX_WORDS = 6

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
#: A character of a script written without spaces between words.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
#: An answer that is only an option's label: "2", "3.", "(b)", "option 1".
_OPTION = re.compile(r"(?:option\s+)?\(?(?:[0-9]{1,2}|[a-f])[.)]?")


def go_ahead_reason(intervention: Intervention) -> str | None:
    """Why `intervention` is a bare go-ahead that needs no model call, or
    `None` when the reflector must read it. Only a steer or a follow-up can
    be one: a denial refused something, and an edit changed a draft."""
    if intervention.trigger not in (Trigger.STEER, Trigger.FOLLOWUP):
        return None
    text = intervention.text.strip().lower()
    if not text or any(mark in text for mark in "?？¿") or len(text) > 60:
        return None
    words = [w.replace("’", "'") for w in _WORD.findall(text)]
    if not words or len(words) > MAX_WORDS or any(w in PUSHBACK or w in PUSHBACK_ELSEWHERE for w in words):
        return None
    quoted = " ".join(words)
    if all(w in AGREEMENT or w in AGREEMENT_ELSEWHERE or _phrases(w) for w in words):
        return f'a bare go-ahead ("{quoted}"): nothing in it objects to what the assistant did'
    rest = [w for w in words if w not in ("ok", "okay", "yes", "yeah", "sure", "please", "great", "perfect", "now", "go", "ahead", "and", "then", "lets", "let's")]
    if rest and rest[0] in ACCEPT_VERBS and len(rest) - 1 <= ACCEPT_OBJECT_WORDS:
        return f'a bare go-ahead ("{quoted}"): it carries out what was proposed and objects to nothing'
    if _OPTION.fullmatch(text):
        return f'a bare go-ahead ("{text}"): it picks one of the options the assistant offered'
    return None


def _phrases(word: str) -> bool:
    """Whether `word`, a run of a script written without spaces, is made
    only of go-ahead phrases (`AGREEMENT_PHRASES`), longest first."""
    if not _UNSPACED.search(word):
        return False
    ends = {0}
    for i in range(len(word)):
        if i not in ends:
            continue
        for phrase in AGREEMENT_PHRASES:
            if word.startswith(phrase, i):
                ends.add(i + len(phrase))
    return len(word) in ends
