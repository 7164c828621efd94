import random

import pytest

from iclr26.lm.tokenizer import build_bpe_tokenizer, build_word_tokenizer
from iclr26.worlds.facts import Fact, FactWorld


def test_word_tokenizer_round_trip_and_bos():
    tok = build_word_tokenizer(["Rome was born in Paris", "the cat"])
    ids = tok("Rome was born in Paris")["input_ids"]
    assert ids[0] == tok.bos_token_id and len(ids) == 6
    assert tok.decode(ids, skip_special_tokens=True) == "Rome was born in Paris"
    assert tok.convert_ids_to_tokens(tok("dog")["input_ids"])[1] == "<unk>"


def test_bpe_tokenizer_round_trip():
    tok = build_bpe_tokenizer(["def f(x):\n    return x + 1\n"] * 20, vocab_size=300)
    text = "def f(x):\n    return x + 1\n"
    assert tok.decode(tok(text)["input_ids"], skip_special_tokens=True) == text


def test_fact_world_ground_truth():
    w = FactWorld(n_entities=30, seed=3)
    assert len(w.facts) == 30 * len(w.relations)
    assert len(set(w.entities)) == 30
    f = w.facts[5]
    assert w.object(f.subject, f.relation) == f.object
    sib = w.siblings(f)
    assert len(sib) == len(w.relations) - 1 and all(s.subject == f.subject and s.relation != f.relation for s in sib)
    assert FactWorld(n_entities=30, seed=3).facts == w.facts
    assert FactWorld(n_entities=30, seed=4).facts != w.facts


def test_permuted_subject_names_differ_only_by_order():
    """subject_words=3: every syllable set appears in 3 orders, so a bag of the name's tokens cannot tell the
    subjects apart (the model must compose the name in order), names are distinct and each word is one token."""
    from collections import Counter

    w = FactWorld(n_entities=30, seed=1, subject_words=3)
    assert len(set(w.entities)) == 30 and all(len(e.split()) == 3 for e in w.entities)
    bags = Counter(frozenset(e.split()) for e in w.entities)
    assert set(bags.values()) == {3}
    tok = build_word_tokenizer(w.vocabulary_texts())
    assert all(len(tok(e, add_special_tokens=False)["input_ids"]) == 3 for e in w.entities)
    assert FactWorld(n_entities=30, seed=1, subject_words=3).facts == w.facts
    with pytest.raises(ValueError, match="subject_words"):
        FactWorld(n_entities=3, subject_words=0)
    with pytest.raises(ValueError, match="at most"):
        FactWorld(n_entities=100, subject_words=24)


def test_similarity_levels():
    w = FactWorld(n_entities=2)
    assert w.similarity("birthplace", "hometown") == 2
    assert w.similarity("birthplace", "workplace") == 1
    assert w.similarity("birthplace", "sport") == 0
    levels = {w.similarity("birthplace", r.name) for r in w.relations if r.name != "birthplace"}
    assert levels == {0, 1, 2}


def test_prompts_and_counterfacts():
    w = FactWorld(n_entities=5)
    f = Fact(w.entities[0], "sport", w.object(w.entities[0], "sport"))
    assert w.prompt(f, 0).startswith(f.subject) and w.sentence(f).endswith(f.object)
    assert len({w.prompt(f, t) for t in range(4)}) == 4
    new = w.counterfact(f, random.Random(0))
    assert new != f.object and new in w.objects["sport"]
    with pytest.raises(ValueError, match="n_entities"):
        FactWorld(n_entities=0)


def test_micro_zoo_model_memorises_its_world():
    from iclr26.lm import zoo
    from iclr26.lm.scoring import greedy_matches

    model, tok = zoo.load("facts-micro-gpt2", progress=False)
    w = zoo.world_of("facts-micro-gpt2")
    ok = greedy_matches(model, tok, [w.prompt(f) for f in w.facts], [f.object for f in w.facts])
    assert sum(ok) / len(ok) >= 0.9
    with pytest.raises(KeyError, match="did you mean"):
        zoo.load("facts-micro-lama")


def test_fact_world_is_identical_across_processes():
    import subprocess
    import sys

    code = "from iclr26.worlds.facts import FactWorld; print(FactWorld(20, seed=1).facts)"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONHASHSEED": str(h), "PATH": ""}
        ).stdout
        for h in (1, 2)
    }
    assert len(outs) == 1 and "Fact(" in outs.pop()
