"""Scientific machine learning: neural force fields and symmetry (equivariance-scaling), and later science papers."""
