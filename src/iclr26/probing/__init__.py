"""Probes for frozen backbones: `efficient_probing` (linear, attentive and efficient attentive probing, EP, and the
tiny MAE-pretrained ViT they read)."""
