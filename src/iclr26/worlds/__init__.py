"""Data with known ground truth: fact worlds, real text, and the worlds of later papers."""
