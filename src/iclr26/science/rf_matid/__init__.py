"""RF-MatID (Chen et al., ICLR 2026, https://arxiv.org/abs/2601.20377; code https://github.com/NTUMARS/RF-MatID):
a benchmark for RF material identification from wide-band (4–43.5 GHz) reflection spectra. This package holds the
benchmark's definition (:mod:`.benchmark`: frequency protocols, the seven splits, complex whitening), classifiers
(:mod:`.models`, :mod:`.train`) and a loader for the real files (:mod:`.loader`); the generator of synthetic spectra
is :mod:`iclr26.science.rf_matid.world`."""

from .benchmark import (
    PROTOCOLS,
    SPLITS,
    FrequencyProtocol,
    complex_whiten,
    make_split,
    time_view,
    validation_split,
    view,
)
from .loader import load_rfmatid

__all__ = [
    "PROTOCOLS",
    "SPLITS",
    "FrequencyProtocol",
    "complex_whiten",
    "load_rfmatid",
    "make_split",
    "time_view",
    "validation_split",
    "view",
]
