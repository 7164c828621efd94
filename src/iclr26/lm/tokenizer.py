"""A word-level tokenizer built with `tokenizers` and wrapped as a `PreTrainedTokenizerFast`.

Tiny models in the zoo speak a closed vocabulary (the words of a world), so one token per word keeps every fact's
subject, relation and object exact and makes "the last subject token" well defined.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<unk>", "<bos>", "<eos>"]


def words_of(text: str) -> list[str]:
    """How the tokenizer splits text: on whitespace, with punctuation as separate words."""
    return pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]).pre_tokenize_str(
        text
    )


def build_word_tokenizer(texts: Iterable[str], max_vocab: int | None = None, min_count: int = 1):
    """A word-level tokenizer over ``texts``: the most frequent words (all by default) plus the special tokens."""
    counts: Counter[str] = Counter()
    for t in texts:
        counts.update(w for w, _ in words_of(t))
    words = [w for w, c in counts.most_common(max_vocab) if c >= min_count and w not in SPECIALS]
    vocab = {tok: i for i, tok in enumerate(SPECIALS + sorted(words))}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tk.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with single spaces
    # tok(text) prepends <bos>, as the training loop does; tok(text, add_special_tokens=False) does not.
    tk.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tok.padding_side = "right"
    return tok


def build_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 2048):
    """A byte-level BPE tokenizer trained on ``texts`` in seconds (for tiny models on real text)."""
    from tokenizers import trainers

    tk = Tokenizer(models.BPE(unk_token=None))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(list(texts), trainer)
    bos = tk.token_to_id("<bos>")
    tk.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bos)]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tok.padding_side = "right"
    return tok
