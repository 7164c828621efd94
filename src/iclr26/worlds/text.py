"""Real text read at run time from what is installed (never committed).

Four domains:

- ``wikipedia``: gensim's shortened English Wikipedia dump (206 articles, ~712k words; CC BY-SA), markup stripped;
- ``news``: the Lee news corpus in gensim's test data (300 short documents);
- ``python_manual``: the text of Python's own reference manual (``pydoc_data.topics``);
- ``code``: the standard library's ``.py`` sources.

Each returns a list of documents (strings), deterministic order.
"""

from __future__ import annotations

import bz2
import functools
import re
import sysconfig
from pathlib import Path

from ..core.paths import cache_dir

DOMAINS = ("wikipedia", "news", "python_manual", "code")


def _gensim_datapath(name: str) -> Path:
    try:
        from gensim.test.utils import datapath
    except ImportError as exc:
        raise ImportError(
            "the wikipedia and news domains read gensim's test data: `pip install gensim` "
            "(or `pip install iclr26[text]`)"
        ) from exc
    return Path(datapath(name))


@functools.lru_cache(maxsize=1)
def wikipedia() -> tuple[str, ...]:
    """Articles of the Wikipedia sample as plain text (parsed once, then cached as JSON under the cache dir)."""
    from ..core.cache import cached_json

    path = cache_dir() / "text" / "wikipedia-v1.json"  # parsed once, verified when read (core.cache)
    return tuple(cached_json(path, "the parsed Wikipedia sample", _parse_wikipedia, quiet=True))


def _parse_wikipedia() -> list[str]:
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    path = _gensim_datapath("enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    docs = []
    with bz2.open(path, "rb") as f:
        for _title, text, _pid in extract_pages(f):
            plain = re.sub(r"'{2,}", "", filter_wiki(text))
            plain = re.sub(r"\n{2,}", "\n", re.sub(r"[ \t]+", " ", plain)).strip()
            if len(plain.split()) > 200 and not plain.lower().startswith("#redirect"):
                docs.append(plain)
    return docs


@functools.lru_cache(maxsize=1)
def news() -> tuple[str, ...]:
    path = _gensim_datapath("lee_background.cor")
    return tuple(line.strip() for line in path.read_text(encoding="latin-1").splitlines() if line.strip())


@functools.lru_cache(maxsize=1)
def python_manual() -> tuple[str, ...]:
    from pydoc_data.topics import topics

    return tuple(topics[k].strip() for k in sorted(topics) if len(topics[k].split()) > 50)


@functools.lru_cache(maxsize=1)
def code(max_files: int = 400) -> tuple[str, ...]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if p.stat().st_size > 2000)[:max_files]
    return tuple(p.read_text(encoding="utf-8", errors="replace") for p in files)


def load_domain(name: str) -> tuple[str, ...]:
    """Documents of one domain: wikipedia, news, python_manual or code."""
    loaders = {"wikipedia": wikipedia, "news": news, "python_manual": python_manual, "code": code}
    if name not in loaders:
        raise ValueError(f"unknown text domain {name!r}; choose one of {', '.join(DOMAINS)}")
    return loaders[name]()


def train_split(docs: tuple[str, ...]) -> tuple[str, ...]:
    """Every document but each 10th: what zoo models train on."""
    return tuple(d for i, d in enumerate(docs) if i % 10 != 9)


def test_split(docs: tuple[str, ...]) -> tuple[str, ...]:
    """Each 10th document: held out from zoo training, for evaluation."""
    return tuple(d for i, d in enumerate(docs) if i % 10 == 9)
