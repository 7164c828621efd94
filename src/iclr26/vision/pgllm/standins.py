"""Stand-ins for PGLLM's foundation models, trained here (PointLLM, Point-BERT and GPT-4 do not run on a 2-core CPU).

- `PointNet`: the frozen point encoder f_p (shared MLP 3→32→64→128, max-pool; a small classification head used only
  in pre-training and by the captioner). Pre-trained on a labelled "pre-training world" of procedural shapes with
  early stopping on a held-out part of it.
- `Captioner`: the stage-1 3D MLLM. It looks at a partial view of the cloud (a random cut keeps ~70 % of the points),
  samples a class word from the PointNet's softmax at a temperature (an LLM's sampled, sometimes wrong naming),
  sometimes uses an out-of-vocabulary near-synonym ("mug" for cup), and adds geometric attributes computed from the
  points (tall / flat / long / round).
- `CaptionScorer`: a stage-2 reader trained here: TF-IDF + multinomial logistic regression fitted on (single caption →
  class) pairs of the pre-training world only. It reads a whole PGLLM prompt, weighting the query caption 1 and the
  neighbours' captions `neighbor_weight` (0.5). ``hard=True`` rounds to {0, 100} (GPT-4's near-binary scores).
- `LikelihoodReader`: a real causal LM (SmolLM2-135M-Instruct here, any HF chat model) reads the prompt through its
  chat template and chooses a category by the likelihood of the answer token after "Category:".
Every reader returns class probabilities (n, l); `scores_from_proba` turns them into PGLLM's 0-100 scores.
"""

from __future__ import annotations

import numpy as np

from .prompt import split_prompt

SYNONYMS = {
    "table": "counter", "desk": "workbench", "bench": "pew", "stool": "seat", "chair": "armchair", "bed": "mattress",
    "shelf": "cabinet", "bottle": "flask", "vase": "urn", "cup": "mug", "bowl": "dish", "lamp": "lantern",
    "tent": "shelter", "airplane": "jet", "car": "truck", "door": "gate", "monitor": "screen", "guitar": "banjo",
}  # fmt: skip


def _torch_pointnet(n_classes: int, widths=(32, 64, 128)):
    import torch.nn as nn

    class PointNet(nn.Module):
        """Shared per-point MLP, max-pool over points (a symmetric function), MLP head."""

        def __init__(self):
            super().__init__()
            dims = (3, *widths)
            layers = []
            for a, b in zip(dims[:-1], dims[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            self.mlp = nn.Sequential(*layers)
            self.head = nn.Sequential(nn.Linear(widths[-1], 64), nn.ReLU(), nn.Linear(64, n_classes))

        def features(self, x):  # (B, N, 3) -> (B, D)
            return self.mlp(x).amax(dim=1)

        def forward(self, x):
            return self.head(self.features(x))

    return PointNet()


def train_pointnet(points, labels, n_classes: int, seed: int = 0, max_epochs: int = 40, patience: int = 5,
                   lr: float = 2e-3, batch: int = 32, val_frac: float = 0.2, log=None):  # fmt: skip
    """Pre-train the encoder with cross-entropy; early stopping on a held-out ``val_frac`` of the pre-training world.
    Returns (model in eval mode, {"epochs", "val_acc"})."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = torch.as_tensor(points, dtype=torch.float32), torch.as_tensor(labels, dtype=torch.long)
    perm = rng.permutation(len(x))
    nv = max(1, int(val_frac * len(x)))
    va, tr = perm[:nv], perm[nv:]
    model = _torch_pointnet(n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    best, best_state, bad, epochs = -1.0, None, 0, 0
    for epoch in range(1, max_epochs + 1):
        epochs = epoch
        model.train()
        for b in np.array_split(rng.permutation(tr), max(1, len(tr) // batch)):
            xb = x[b] + 0.005 * torch.randn_like(x[b])  # jitter augmentation
            loss = torch.nn.functional.cross_entropy(model(xb), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
        acc = float((predict_logits(model, x[va]).argmax(1) == y[va].numpy()).mean())
        if acc > best:
            best, bad = acc, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    if log:
        log(f"encoder: {epochs} epochs, held-out accuracy {best:.3f}")
    return model, {"epochs": epochs, "val_acc": best}


def _batched(model, points, fn, batch=256) -> np.ndarray:
    import torch

    with torch.no_grad():
        x = torch.as_tensor(np.asarray(points), dtype=torch.float32)
        return np.concatenate([fn(model, x[i : i + batch]).numpy() for i in range(0, len(x), batch)])


def encode(model, points) -> np.ndarray:
    """Frozen encoder features p_i = f_p(x_i), (n, D)."""
    return _batched(model, points, lambda m, x: m.features(x))


def predict_logits(model, points) -> np.ndarray:
    return _batched(model, points, lambda m, x: m(x))


def attributes(pts: np.ndarray) -> list[str]:
    """Geometric attribute words from a cloud (z up): extents along z and the two horizontal principal axes."""
    xy = pts[:, :2] - pts[:, :2].mean(0)
    ev = np.sort(np.linalg.eigvalsh(np.cov(xy.T)))[::-1]
    e1, e2 = 4 * np.sqrt(ev[0]), 4 * np.sqrt(max(ev[1], 1e-12))  # ±2σ extents
    hz = 4 * pts[:, 2].std()
    out = ["tall"] if hz > 1.3 * e1 else (["flat"] if hz < 0.45 * e1 else [])
    out += ["long"] if e1 > 1.8 * e2 else (["round"] if e1 < 1.15 * e2 else [])
    return out


class Captioner:
    """Stage-1 stand-in: caption = template(attributes, class word sampled from the encoder on a partial view)."""

    TEMPLATES = ("a {a}{w}", "{a}object, looks like a {w}", "probably a {a}{w}", "a 3D model of a {a}{w}")

    def __init__(self, model, classes, temperature: float = 1.0, keep: float = 0.7, oov_rate: float = 0.1):
        if not 0 < keep <= 1 or temperature <= 0 or not 0 <= oov_rate <= 1:
            raise ValueError(f"Captioner: need 0 < keep <= 1, temperature > 0, 0 <= oov_rate <= 1; got "
                             f"{keep!r}, {temperature!r}, {oov_rate!r}")  # fmt: skip
        self.model, self.classes = model, list(classes)
        self.temperature, self.keep, self.oov_rate = temperature, keep, oov_rate

    def view(self, pts: np.ndarray, rng) -> np.ndarray:
        """A partial view: the points below a random cutting plane (``keep`` of them), resampled to the same size."""
        d = rng.normal(size=3)
        proj = pts @ (d / np.linalg.norm(d))
        idx = np.flatnonzero(proj <= np.quantile(proj, self.keep))
        return pts[rng.choice(idx, size=len(pts))]

    def __call__(self, points, seed: int = 0) -> list[str]:
        rng = np.random.default_rng([seed, 4_242])
        views = np.stack([self.view(p, rng) for p in points])
        logits = predict_logits(self.model, views) / self.temperature
        prob = np.exp(logits - logits.max(1, keepdims=True))
        prob /= prob.sum(1, keepdims=True)
        caps = []
        for p, pts in zip(prob, points):
            w = self.classes[rng.choice(len(p), p=p)]
            if rng.random() < self.oov_rate:
                w = SYNONYMS.get(w, w)
            a = "".join(x + " " for x in attributes(pts))
            caps.append(self.TEMPLATES[rng.integers(len(self.TEMPLATES))].format(a=a, w=w))
        return caps


class CaptionScorer:
    """Stage-2 stand-in trained on single captions; reads the query and (weighted) neighbour captions of a prompt."""

    def __init__(self, n_classes: int, neighbor_weight: float = 0.5, C: float = 10.0):
        if neighbor_weight < 0:
            raise ValueError(f"neighbor_weight must be >= 0, got {neighbor_weight!r}")
        self.n_classes, self.neighbor_weight, self.C = n_classes, neighbor_weight, C

    def fit(self, captions, labels):
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self.vec = TfidfVectorizer(ngram_range=(1, 2)).fit(captions)
        self.lr = LogisticRegression(C=self.C, max_iter=2000).fit(self.vec.transform(captions), labels)
        if list(self.lr.classes_) != list(range(self.n_classes)):
            raise ValueError(f"CaptionScorer.fit needs captions of all {self.n_classes} classes")
        return self

    def proba(self, prompts) -> np.ndarray:
        from sklearn.preprocessing import normalize

        parts = [split_prompt(p) for p in prompts]
        x = self.vec.transform([q for q, _ in parts])
        flat = [c for _, nb in parts for c in nb]
        if flat:  # + neighbor_weight × Σ of the neighbours' l2-normalised tf-idf vectors, per prompt
            from scipy import sparse

            rows = np.repeat(np.arange(len(parts)), [len(nb) for _, nb in parts])
            agg = sparse.csr_matrix((np.ones(len(flat)), (rows, np.arange(len(flat)))), shape=(len(parts), len(flat)))
            x = x + self.neighbor_weight * (agg @ self.vec.transform(flat))
        return self.lr.predict_proba(normalize(x))


class LikelihoodReader:
    """A causal LM as stage 2: p(class) ∝ p(" <class>" | chat(prompt) + "Category:"), one forward pass per prompt
    after the prompts' shared token prefix (computed once and cached), in batches.

    ``calibrate=True`` divides by the class probabilities of the content-free prompt (every caption replaced by "N/A";
    contextual calibration, Zhao et al. 2021): without it SmolLM2-135M answers the first listed category for almost
    any description."""

    def __init__(self, model, tokenizer, classes, answer_prefix: str = "Category:", calibrate: bool = True,
                 batch: int = 16):  # fmt: skip
        self.model, self.tok, self.classes, self.answer_prefix = model, tokenizer, list(classes), answer_prefix
        self.calibrate, self.batch = calibrate, batch
        ids = [tokenizer.encode(" " + c, add_special_tokens=False) for c in self.classes]
        self.class_tokens = [i[0] for i in ids]
        if len(set(self.class_tokens)) != len(ids):
            raise ValueError(f"class names must start with distinct tokens for this tokenizer; got {ids}")

    def _ids(self, prompt: str) -> list[int]:
        msgs = [{"role": "user", "content": prompt}]
        text = self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) + self.answer_prefix
        return self.tok.encode(text, add_special_tokens=False)

    @staticmethod
    def content_free(prompt: str) -> str:
        """The same prompt with the query's and the neighbours' captions replaced by "N/A"."""
        from .prompt import DESC, SIMILAR

        q, nb = split_prompt(prompt)
        out = prompt.replace(DESC + q, DESC + "N/A", 1)
        if nb:
            head, tail = out.split(SIMILAR, 1)
            last = tail.strip().split("\n")[-1]
            out = head + SIMILAR + "\n" + "\n".join(["N/A"] * len(nb)) + "\n" + last
        return out

    def _raw(self, prompts) -> np.ndarray:
        import copy

        import torch

        seqs = [self._ids(p) for p in prompts]
        n = min(len(s) for s in seqs) - 1
        for s in seqs[1:]:
            n = next((i for i in range(n) if s[i] != seqs[0][i]), n)
        out = np.zeros((len(seqs), len(self.classes)))
        with torch.no_grad():
            prefix = self.model(torch.tensor([seqs[0][:n]]), use_cache=True).past_key_values if n else None
            for b0 in range(0, len(seqs), self.batch):
                chunk = [s[n:] for s in seqs[b0 : b0 + self.batch]]
                width = max(len(c) for c in chunk)
                ids = torch.tensor([c + [0] * (width - len(c)) for c in chunk])  # right padding
                mask = torch.tensor([[1] * (n + len(c)) + [0] * (width - len(c)) for c in chunk])
                cache = None
                if prefix is not None:
                    cache = copy.deepcopy(prefix)
                    cache.batch_repeat_interleave(len(chunk))
                logits = self.model(ids, attention_mask=mask, past_key_values=cache, use_cache=True).logits
                last = logits[torch.arange(len(chunk)), torch.tensor([len(c) - 1 for c in chunk])]
                lp = torch.log_softmax(last.float(), -1)[:, self.class_tokens]
                out[b0 : b0 + len(chunk)] = torch.softmax(lp, -1).numpy()
        return out

    def proba(self, prompts) -> np.ndarray:
        p = self._raw(prompts)
        if self.calibrate:
            free = [self.content_free(x) for x in prompts]
            uniq = sorted(set(free))
            base = dict(zip(uniq, self._raw(uniq)))
            p = p / np.stack([base[f] for f in free])
            p /= p.sum(1, keepdims=True)
        return p


def scores_from_proba(proba, task: str = "cls", id_classes=None, hard: bool = False, seed: int = 0) -> np.ndarray:
    """PGLLM's 0-100 scores: recognition (n, l) = 100 p (hard: 100 at the argmax); OOD (n,) = 100 Σ_{c ∈ ID} p_c
    (hard: 100 if the argmax is an ID class, else 0)."""
    from .graph import argmax_random_ties

    p = np.asarray(proba, dtype=np.float64)
    if hard:
        p = np.eye(p.shape[1])[argmax_random_ties(p, seed)]
    if task == "cls":
        return 100 * p
    if task != "ood" or id_classes is None:
        raise ValueError(f"task must be 'cls' or 'ood' (with id_classes), got {task!r}, id_classes={id_classes!r}")
    return 100 * p[:, list(id_classes)].sum(1)
