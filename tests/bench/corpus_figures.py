"""How much of what a person corrected can be learned, on a folder of real
Claude Code sessions: `python -m tests.bench.corpus_figures DIR`.

Prints four figures, each measured, never estimated, against a throwaway
store, config and home (nothing of the person's is read or written):

1. clean by default: import (not dry) into a fresh store, reflect with a
   scripted model (untrusted ones are recorded without a model call).
2. every offer the summary makes: for each, on a copy of the store and
   the config, `trust add X` (add_trust + reclassify, as the verb does):
   asked_again must equal the offer's count. Then all offers at once.
3. vouch for everything vouchable (after all offers): count.
4. the fourteen provenance plants: how many read clean by default and
   under every offer.

`CORPUS_FIGURES_WHY=1` also counts what holds back each correction still
held after every offer: the first stranger's text before it, or that it may
be vouched for. Not part of `python -m tests.bench`: its input is a folder
of someone's sessions, which no checkout ships.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from mecha.core.agents.held import held_now, vouch
from mecha.core.agents.importing import import_sessions
from mecha.core.agents.retrust import reclassify
from mecha.core.domain.reflexion import Origin
from mecha.core.environment.trust import add_trust, load_trust
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.providers import provider_from_config
from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES, read_session
from mecha.core.sessions.mining import Voices
from mecha.core.sessions.survey import survey_session
from mecha.core.sessions.trust import unknown_summary
from mecha.core.store.learning_store import LearningStore
from tests.model_server import ModelServer, lessons_responder
from tests.reliability.test_poisoning import LOCAL_LOOKING, local_looking_session

VOICES = Voices(harness_prefixes=HARNESS_VOICE_PROFILES["claude"])


def reflect(store: LearningStore, server: ModelServer) -> None:
    asyncio.run(reflect_inbox(store, Reflector(provider_from_config(server.config("openai")), "scripted")))


def origins(report) -> Counter:
    return Counter(p.origin.value for s in report.sessions for p in s.fresh)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="corpus-figures-"))
    os.environ["MECHA_SIDECAR_CONFIG"] = str(work / "cfg.toml")
    os.environ["HOME"] = str(work / "home")
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.bench.corpus_figures DIR (a folder of Claude Code session files)")
    corpus = Path(sys.argv[1])

    with ModelServer(responder=lessons_responder) as server:
        store = LearningStore.open(work / "store")
        dry = import_sessions(store, "claude", corpus, voices=VOICES, dry_run=True, policy=load_trust().policy("claude"))
        o = origins(dry)
        total = sum(o.values())
        print(f"1. interventions {total}: clean {o['clean']}, untrusted {o['untrusted']}, derived {o['derived']}"
              f" — clean by default {o['clean']}/{total} = {o['clean'] / total:.0%}")
        offers = [u for u in unknown_summary((s.blockers, s.frees) for s in dry.sessions) if u.command]
        print("   offers: " + ", ".join(f"{u.entry} frees {u.interventions}" for u in offers))
        import_sessions(store, "claude", corpus, voices=VOICES, policy=load_trust().policy("claude"))
        reflect(store, server)
        recorded = Counter(r.origin.value for r in store.reflexions())
        print(f"   recorded after import and reflect: {dict(recorded)}")

        exact = True
        for u in offers:
            copy = work / f"copy-{u.entry}"
            shutil.copytree(work / "store", copy)
            cfg = work / f"cfg-{u.entry}.toml"
            trust = add_trust([u.entry], cfg)
            again = reclassify(LearningStore.open(copy), trust, voices=VOICES)
            ok = again.asked_again == u.interventions
            exact &= ok
            print(f"2. trust add '{u.entry}' on a copy: offer said {u.interventions}, asked again {again.asked_again}"
                  f" ({'exact' if ok else 'NOT EXACT'})")
        cfg_all = work / "cfg-all.toml"
        trust_all = add_trust([u.entry for u in offers], cfg_all) if offers else load_trust(cfg_all)
        all_store = work / "copy-all"
        shutil.copytree(work / "store", all_store)
        s_all = LearningStore.open(all_store)
        again = reclassify(s_all, trust_all, voices=VOICES)
        clean_all = o["clean"] + again.asked_again
        print(f"   every offer accepted: {again.asked_again} more clean → {clean_all}/{total} = {clean_all / total:.0%}"
              f"; every offer exact: {exact}")

        reflect(s_all, server)
        count, rows = held_now(s_all, trust_all.policy, voices=VOICES)
        vouchable = [r.id for r in rows if r.vouchable]
        strangers = sum(1 for r in rows if r.stranger)
        unchecked = sum(1 for r in rows if not r.stranger and r.unchecked)
        done = vouch(s_all, vouchable, by="figures", policy_for=trust_all.policy, voices=VOICES) if vouchable else None
        queued = len(done.queued) if done else 0
        learnable = clean_all + queued
        print(f"3. held after every offer: {count}; vouchable {len(vouchable)}, a stranger's text {strangers}, "
              f"unchecked {unchecked}; vouched {queued} → learnable {learnable}/{total} = {learnable / total:.0%}"
              f" (derived, never learnable: {o['derived']})")

    # 4. the provenance plants

    for label, trust in (("default trust", load_trust(work / "none.toml")), ("every offer", trust_all)):
        clean = 0
        for n in range(len(LOCAL_LOOKING)):
            fmt, data, marker, first = local_looking_session(n)
            read = read_session(work / "plant.jsonl", fmt, data=data, policy=trust.policy(fmt))
            plans = survey_session(read.messages, read.taint_timeline)
            clean += plans[-1].origin is Origin.CLEAN
        print(f"4. provenance plants read clean under {label}: {clean} of {len(LOCAL_LOOKING)}")

    if os.environ.get("CORPUS_FIGURES_WHY"):
        c = Counter()
        for r in rows:
            key = r.stranger[0].split(": ", 1)[1][:90] if r.stranger else ("VOUCHABLE " if r.vouchable else "UNCHECKED ") + (r.unchecked or r.why)[:80]
            c[key] += 1
        for k, v in c.most_common():
            print(f"   {v:3d}  {k}")


if __name__ == "__main__":
    main()
