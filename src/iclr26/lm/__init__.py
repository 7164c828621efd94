"""The language-model substrate: adapters, hooks, tiny models, tokenizer, training loop, zoo, real-model loading."""

from .adapters import ADAPTERS, ModelAdapter, UnsupportedModelError, add_to_weight, supported_model_types, weight_of
from .hooks import capture, hooked, intervene, replace
from .loading import WeightsNotFoundError, cache_dir, load_model, load_smollm2
from .tiny import ARCHS, n_params, tiny_config, tiny_model
from .tokenizer import build_word_tokenizer

__all__ = [
    "ADAPTERS",
    "ModelAdapter",
    "UnsupportedModelError",
    "add_to_weight",
    "supported_model_types",
    "weight_of",
    "capture",
    "hooked",
    "intervene",
    "replace",
    "WeightsNotFoundError",
    "cache_dir",
    "load_model",
    "load_smollm2",
    "ARCHS",
    "n_params",
    "tiny_config",
    "tiny_model",
    "build_word_tokenizer",
]
