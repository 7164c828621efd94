"""A closed-vocabulary tokenizer whose decode is the exact inverse of its encode (spaces and newlines kept).

The paper's format reward is a regex over the decoded completion that requires exact newlines
(``^<think>\\n...\\n</think>\\n\\n<answer>\\n...\\n</answer>$``), so a tiny policy must be able to write
"\\n". Each token
is a word with its leading space (" worked") or a bare word ("<think>" after a newline) or "\\n"; the decoder fuses
tokens back without adding anything. Built with `tokenizers` and wrapped as a `PreTrainedTokenizerFast`, so TRL's
trainers use it like any HF tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<unk>", "<bos>", "<eos>"]
_SPLIT = Regex(r" ?[^ \n]+|\n")


def exact_word_tokenizer(words: Iterable[str]) -> PreTrainedTokenizerFast:
    """Vocabulary: the specials, "\\n", and every word both bare and with one leading space."""
    words = sorted(set(words) - set(SPECIALS))
    bad = [w for w in words if not w or " " in w or "\n" in w]
    if bad:
        raise ValueError(f"words must be non-empty and contain no whitespace, got {bad[:5]!r}")
    pieces = SPECIALS + ["\n"] + [p for w in words for p in (w, " " + w)]
    vocab = {p: i for i, p in enumerate(pieces)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(_SPLIT, behavior="isolated")
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tok.padding_side = "left"  # generation pads on the left; TRL pads its own batches
    return tok
