"""Probes for frozen backbones: linear, attentive and efficient attentive probing (EP)."""
