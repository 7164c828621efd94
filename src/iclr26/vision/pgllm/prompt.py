"""PGLLM's stage-2 prompts (in-context guidance) and the parsers of the LLM's answers.

The structure follows the official scripts (`GPT_cls_MN.py`, `GPT_OOD_MN.py`; wording paraphrased): the task
statement (the description comes from an LLM and may be wrong; descriptions of objects with similar features are
supplied; 0 = unrelated, 100 = perfect match), the category list, "3D object description:" with the query's caption,
then "Descriptions of 3D objects with similar features:" with the neighbours' captions one per line, then the output
instruction. Without neighbours (the isolated baseline) the similar-objects block and its sentence are left out.

``style="scores"`` asks for one 0-100 score per category (recognition, the paper's form) or a single 0-100 score
(OOD); ``style="choice"`` asks for the single best category name, for readers scored by answer likelihood (a small
LM cannot emit 40 calibrated numbers).
"""

from __future__ import annotations

import re

DESC = "3D object description: "
SIMILAR = "Descriptions of 3D objects with similar features:"


def build_prompt(task: str, classes, caption: str, neighbor_captions=(), style: str = "scores", id_classes=None) -> str:
    """The stage-2 prompt for one query. ``task`` "cls" (recognition) or "ood"; ``id_classes`` lists the ID
    categories for "ood" (default: all ``classes``)."""
    if task not in ("cls", "ood"):
        raise ValueError(f"task must be 'cls' (recognition) or 'ood', got {task!r}")
    if style not in ("scores", "choice"):
        raise ValueError(f"style must be 'scores' (paper) or 'choice' (answer likelihood), got {style!r}")
    names = list(id_classes if (task == "ood" and id_classes is not None) else classes)
    if not names:
        raise ValueError("build_prompt needs a non-empty category list")
    nb = [" ".join(c.split()) for c in neighbor_captions]
    guide = " Descriptions of other 3D objects with similar features are also given." if nb else ""
    if task == "cls":
        rate = (" Rate how well the object matches each category, 0 = no relation, 100 = perfect match."
                if style == "scores" else "")  # fmt: skip
        head = (
            f"A 3D object belongs to one of the {len(names)} categories below. Its description was written by an "
            f"LLM and may be inaccurate.{guide}{rate}"
        )
        tail = (
            f"Output the {len(names)} scores in the order of the categories, with no explanation."
            if style == "scores"
            else "Answer with the one category that fits best."
        )
    else:
        head = (
            "Judge whether a 3D object belongs to any of the categories below. Its description was written by an "
            f"LLM and may be inaccurate.{guide} Give the probability (0-100) that it belongs to one of them."
        )
        tail = "Output ONLY a numerical score." if style == "scores" else "Answer with the one category that fits best."
    parts = [head, "Categories: " + ", ".join(names) + ".", DESC + " ".join(caption.split())]
    if nb:  # in-context guidance: the query first, then the neighbours (order of the official code)
        parts.append(SIMILAR + "\n" + "\n".join(nb))
    return "\n\n".join(parts) + "\n" + tail


def split_prompt(prompt: str) -> tuple[str, list[str]]:
    """(query caption, neighbour captions) read back from a prompt made by `build_prompt`."""
    if DESC not in prompt:
        raise ValueError("not a PGLLM prompt: the '3D object description:' section is missing")
    rest = prompt.split(DESC, 1)[1]
    if SIMILAR in rest:
        desc, nb = rest.split(SIMILAR, 1)
        nb_lines = [x.strip() for x in nb.strip().split("\n")[:-1] if x.strip()]
        return desc.strip(), nb_lines
    return rest.rsplit("\n", 1)[0].strip(), []


def parse_scores(text: str, n_classes: int) -> list[int] | None:
    """All integers in 0..100 of an answer; ``None`` unless there are exactly ``n_classes`` (the caller retries)."""
    vals = [int(v) for v in re.findall(r"(?<![\d.])\d{1,3}(?![\d.])", text) if 0 <= int(v) <= 100]
    return vals if len(vals) == n_classes else None


def parse_score(text: str) -> int | None:
    """The first integer in 0..100 of an OOD answer, or ``None``."""
    for v in re.findall(r"\d{1,3}", text):
        if 0 <= int(v) <= 100:
            return int(v)
    return None
